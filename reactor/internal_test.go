package reactor

import (
	"testing"
	"time"
	"unsafe"
)

// TestIdleSessionSize guards the memory of an idle connection: the session struct is all
// the heap an idle connected client keeps (80 bytes is its allocation size class).
func TestIdleSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > 80 {
		t.Errorf("session is %d bytes, want <= 80", n)
	}
}

func TestDialGrainFor(t *testing.T) {
	check := func(perLoop float64, want time.Duration) {
		t.Helper()
		if got := dialGrainFor(perLoop); got != want {
			t.Errorf("dialGrainFor(%v) = %v, want %v", perLoop, got, want)
		}
	}
	check(0, time.Millisecond)         // as fast as allowed: no batching needed
	check(100_000, time.Millisecond)   // fast: the floor
	check(2500, 1600*time.Microsecond) // 4 dials a batch
	check(1000, 4*time.Millisecond)
	check(1, 8*time.Millisecond)
}
