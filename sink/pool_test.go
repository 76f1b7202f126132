package sink

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestNoPoolTimers: no goroutine of gnet's worker pool (ants) runs in a process that links
// the sink: its 500 ms clock and its purge would wake every idle mqblast process.
func TestNoPoolTimers(t *testing.T) {
	var stacks string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks = string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "panjf2000/ants") || time.Now().After(deadline) {
			break
		}
	}
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "panjf2000/ants") {
			t.Errorf("a goroutine of the ants pool runs:\n%s", g)
		}
	}
}
