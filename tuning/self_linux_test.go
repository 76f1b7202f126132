package tuning

import (
	"testing"
	"time"
)

// TestSelf: the process's own readers answer on Linux: CPU time grows with work, the
// resident set is under its peak, and the kernel release is named.
func TestSelf(t *testing.T) {
	c0 := SelfCPU()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	if c1 := SelfCPU(); c0 <= 0 || c1 <= c0 {
		t.Errorf("CPU time %v, then %v after 50 ms of spinning", c0, c1)
	}
	if rss, peak := SelfRSS(), SelfPeakRSS(); rss <= 0 || peak < rss {
		t.Errorf("rss %d, peak %d", rss, peak)
	}
	if _, ok := SelfRunDelay(); !ok {
		t.Log("no /proc/self/task/*/schedstat (kernel without CONFIG_SCHED_INFO)")
	}
	if KernelRelease() == "" {
		t.Error("no kernel release")
	}
}
