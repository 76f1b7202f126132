package countfmt

import "testing"

func TestByCause(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]int64
		want string
	}{
		{nil, ""},
		{map[string]int64{"a": 0}, ""},
		{map[string]int64{"b": 1, "a": 3, "c": 0}, " (a 3, b 1)"},
	} {
		if got := ByCause(tc.m); got != tc.want {
			t.Errorf("ByCause(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	check := func(n int64, want string) {
		t.Helper()
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	check(0, "0")
	check(999, "999")
	check(1000, "1,000")
	check(1204, "1,204")
	check(123456789, "123,456,789")
	check(-1234567, "-1,234,567")
}
