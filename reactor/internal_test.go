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

// TestDueNear: a due time comes back from its low 48 bits when it is less than 2^47 ns
// (39 h) from the receiver's clock, either way; further off it wraps to the other side.
func TestDueNear(t *testing.T) {
	now := time.Now().UnixNano()
	const half = int64(1) << 47
	for _, due := range []int64{now, now - 1, now + 1, now - half, now + half - 1, now - int64(time.Hour)} {
		if got := dueNear(uint64(due)&(1<<48-1), now); got != due {
			t.Errorf("dueNear(%d, now %d) = %d (off by %d)", due, now, got, got-due)
		}
	}
	if got, due := dueNear(uint64(now-half-1)&(1<<48-1), now), now-half-1; got != due+1<<48 {
		t.Errorf("39 h + 1 ns back: %d, want it wrapped to %d", got, due+1<<48)
	}
}
