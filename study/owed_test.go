package study

import "testing"

// TestLostText: a study's lost cell shows the copies owed at the end beside the lost ones,
// never added to them.
func TestLostText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lost, owed int64
		want       string
	}{{0, 0, "0"}, {12, 0, "12"}, {0, 246248, "0 (+246248 owed)"}, {3, 5, "3 (+5 owed)"}} {
		if got := lostText(c.lost, c.owed); got != c.want {
			t.Errorf("lostText(%d, %d) = %q, want %q", c.lost, c.owed, got, c.want)
		}
	}
}
