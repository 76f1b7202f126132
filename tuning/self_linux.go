package tuning

import (
	"os"
	"strconv"
	"strings"
	"sync"
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
	resident, _, ok := readStatm()
	if !ok {
		return 0
	}
	return resident
}

// SelfAnonRSS returns the process's anonymous resident memory in bytes: the resident set
// less its file-backed and shared pages (/proc/self/statm: resident - shared). It is what
// the process's own data hold; the pages of its executable it has touched are the page
// cache's, one copy for every process that runs the binary, so a per-connection figure of
// many processes summed from SelfRSS counts them once per process.
func SelfAnonRSS() int64 {
	resident, shared, ok := readStatm()
	if !ok || shared > resident {
		return 0
	}
	return resident - shared
}

// statm is /proc/self/statm, opened at the first reading and read again with pread at
// each: a process that reads it every second pays one system call, not an open, a stat,
// reads and a close. fd is -1 where it cannot be opened.
var statm struct {
	once sync.Once
	mu   sync.Mutex
	fd   int
	buf  [256]byte
}

// readStatm returns the resident and shared sizes of /proc/self/statm in bytes.
func readStatm() (resident, shared int64, ok bool) {
	statm.once.Do(func() {
		fd, err := unix.Open("/proc/self/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		statm.fd = fd
	})
	if statm.fd < 0 {
		return 0, 0, false
	}
	statm.mu.Lock()
	defer statm.mu.Unlock()
	n, err := unix.Pread(statm.fd, statm.buf[:], 0)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	// size resident shared text lib data dt, in pages
	var f [3]int64
	i, b := 0, statm.buf[:n]
	for k := range f {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			f[k] = f[k]*10 + int64(b[i]-'0')
			i++
		}
		if i == start {
			return 0, 0, false
		}
	}
	page := int64(os.Getpagesize())
	return f[1] * page, f[2] * page, true
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
