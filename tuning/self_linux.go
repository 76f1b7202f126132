package tuning

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The readers of this process's own figures, for the client's result, the sink's counters
// and the floor: each returns 0 (or false) where the kernel does not answer.

// SelfCPU returns the CPU time (user and system) this process has used: getrusage(2).
func SelfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// SelfRSS returns the process's current resident set in bytes (/proc/self/statm).
func SelfRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// SelfPeakRSS returns the process's peak resident set in bytes: VmHWM, the peak of its own
// memory. getrusage's ru_maxrss is not that for a child process: Go starts a child with
// clone(CLONE_VM|CLONE_VFORK), so the exec that follows carries the parent's peak into
// the child's (measured: 51 workers of a 1M-connection run summed to 28 GiB on a 24 GiB
// host while their sampled RSS summed to 1.2 GiB). ru_maxrss is the fallback where
// /proc/self/status has no VmHWM.
func SelfPeakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if _, hwm, err := parseStatusMem(b); err == nil && hwm > 0 {
			return hwm
		}
	}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

// SelfRunDelay returns how long this process's threads have waited on a run queue for a
// CPU (the second field of /proc/self/task/*/schedstat, ns; threads that exited are not
// counted), and false where the kernel does not keep it (no CONFIG_SCHED_INFO).
func SelfRunDelay() (time.Duration, bool) { return runDelay("/proc/self") }

// runDelay is SelfRunDelay of the process whose /proc directory is root.
func runDelay(root string) (time.Duration, bool) {
	tasks, err := os.ReadDir(root + "/task")
	if err != nil {
		return 0, false
	}
	var sum int64
	ok := false
	for _, t := range tasks {
		b, err := os.ReadFile(root + "/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			sum, ok = sum+ns, true
		}
	}
	return time.Duration(sum), ok
}

// KernelRelease returns uname -r.
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
