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
