package tier

import (
	"os"
	"testing"
)

// TestMarks: a test Timing marked, and its subtests, count as timing; others do not.
func TestMarks(t *testing.T) {
	t.Parallel()
	marked.Store("TestSomethingTimed", true)
	for name, want := range map[string]bool{"TestSomethingTimed": true, "TestSomethingTimed/sub/case": true,
		"TestSomethingElse": false, "TestSomethingTimedToo": false} {
		if got := isTiming(name); got != want {
			t.Errorf("isTiming(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestTimingPass: under -short and in the parallel pass Timing skips the test; otherwise
// it marks it and returns a handle on the same test.
func TestTimingPass(t *testing.T) {
	if testing.Short() || os.Getenv(Env) == "skip" {
		t.Skip("Timing skips here, which is what the test would check")
	}
	tm := Timing(t)
	if tm.TB != t || !isTiming(t.Name()) {
		t.Errorf("Timing(t) = %v, marked %v", tm.TB, isTiming(t.Name()))
	}
	tm.Logf("race build %v", Race)
}
