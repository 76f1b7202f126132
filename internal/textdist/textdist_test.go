package textdist

import "testing"

func TestDistance(t *testing.T) {
	check := func(a, b string, want int) {
		t.Helper()
		if got := Distance(a, b); got != want {
			t.Errorf("Distance(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	check("", "", 0)
	check("lost", "lost", 0)
	check("lots", "lost", 2)
	check("los", "lost", 1)
	check("publsihed", "published", 2)
	check("kitten", "sitting", 3)
	check(string(make([]byte, 65)), "a", 99)
}
