package textdist

import "testing"

func TestDistance(t *testing.T) {
	t.Parallel()
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

func TestSuggest(t *testing.T) {
	t.Parallel()
	names := []string{"fanout-20-1000-20-2M", "p2p-10-1", "conn", "Throughput"}
	for in, want := range map[string]string{
		"p2p-10-2":   ` (did you mean "p2p-10-1"?)`,
		"throughput": ` (did you mean "Throughput"?)`,           // case is ignored
		"fanout-20":  ` (did you mean "fanout-20-1000-20-2M"?)`, // a prefix
		"con":        ` (did you mean "conn"?)`,
		"cnn":        ` (did you mean "conn"?)`,
		"xyz":        "",
		"cx":         "", // two edits in a short name
	} {
		if got := Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
