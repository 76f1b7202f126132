package sink

import (
	"time"

	"golang.org/x/sys/unix"
)

// loopCPU returns the CPU time the event loop's thread spent since the first connection, or 0
// without LockOSThread.
func (h *handler) loopCPU() time.Duration {
	tid := h.tid.Load()
	if tid == 0 {
		return 0
	}
	return threadCPU(tid) - h.cpuBase
}

// threadCPU returns the CPU time of thread tid of this process.
func threadCPU(tid int64) time.Duration {
	// The per-thread CPU clock of tid, as glibc's pthread_getcpuclockid builds it:
	// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED).
	clock := int32(^tid<<3 | 4 | 2)
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
