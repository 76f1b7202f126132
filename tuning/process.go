package tuning

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcessSample is one reading of a process.
type ProcessSample struct {
	// CPU is user + system time from /proc/PID/stat, in clock ticks of [clockTick].
	CPU time.Duration
	// RSSBytes is VmRSS from /proc/PID/status.
	RSSBytes int64
	// HWMBytes is VmHWM, the peak RSS.
	HWMBytes int64
	// FDs is the number of entries of /proc/PID/fd.
	FDs int
}

// ReadProcess reads pid's CPU time, memory and open descriptors from /proc. Reading another
// user's descriptors needs root.
func ReadProcess(pid int) (ProcessSample, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	var s ProcessSample
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return s, fmt.Errorf("cannot read process %d: %w", pid, err)
	}
	if s.CPU, err = parseStatCPU(b); err != nil {
		return s, fmt.Errorf("cannot parse %s/stat: %w", dir, err)
	}
	b, err = os.ReadFile(dir + "/status")
	if err != nil {
		return s, fmt.Errorf("cannot read process %d: %w", pid, err)
	}
	if s.RSSBytes, s.HWMBytes, err = parseStatusMem(b); err != nil {
		return s, fmt.Errorf("cannot parse %s/status: %w", dir, err)
	}
	if s.FDs, err = countFDs(dir + "/fd"); err != nil {
		return s, fmt.Errorf("cannot read process %d: %w", pid, err)
	}
	return s, nil
}

// countFDs returns the number of entries of a /proc/PID/fd directory: its size, which Linux
// 6.2 and later report as that number without listing it, else by reading it a chunk at a
// time (a broker holding a million connections is sampled every interval).
func countFDs(dir string) (int, error) {
	f, err := os.Open(dir)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		return int(st.Size()), nil
	}
	return countEntries(f)
}

// countEntries counts the entries of the open directory f, a chunk at a time.
func countEntries(f *os.File) (int, error) {
	n := 0
	for {
		names, err := f.Readdirnames(1024)
		n += len(names)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("cannot read %s: %w", f.Name(), err)
		}
	}
}

// parseStatCPU returns utime + stime of /proc/PID/stat. The command name, in parentheses,
// may hold spaces and parentheses itself, so fields are counted after the last ')'.
func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick(), nil
}

// parseStatusMem returns VmRSS and VmHWM of /proc/PID/status, in bytes. A kernel thread
// has neither and reads as 0.
func parseStatusMem(b []byte) (rss, hwm int64, err error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		name, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		f := bytes.Fields(v)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, 0, fmt.Errorf("%s: %q, want N kB", name, v)
		}
		n, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", name, err)
		}
		*dst = n << 10
	}
	return rss, hwm, nil
}

// ProcessCPUResolution is the unit of a process's CPU time as /proc gives it (ReadProcess):
// a CPU share over a window of w seconds is known within two of these over w.
func ProcessCPUResolution() time.Duration { return clockTick() }

// clockTick is the unit of /proc/PID/stat's times: 1/AT_CLKTCK from this process's
// auxiliary vector (/proc/self/auxv, no cgo needed), else 1/100 s, USER_HZ on every
// architecture Linux builds for today.
var clockTick = sync.OnceValue(func() time.Duration {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 10 * time.Millisecond
	}
	// Pairs of native words; 64-bit little-endian is what this reads, other layouts fall back.
	for ; len(b) >= 16; b = b[16:] {
		tag, val := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		if tag == atClkTck && val > 0 && val <= 10000 {
			return time.Second / time.Duration(val)
		}
	}
	return 10 * time.Millisecond
})

// CgroupSample is one reading of a cgroup.
type CgroupSample struct {
	// CPU is the cgroup's CPU time: cpu.stat usage_usec (v2) or cpuacct.usage (v1).
	CPU time.Duration
	// MemoryBytes is memory.current (v2) or memory.usage_in_bytes (v1).
	MemoryBytes int64
	// MemoryPeakBytes is memory.peak (v2, kernel 5.19 and later) or
	// memory.max_usage_in_bytes (v1); 0 when the kernel has neither.
	MemoryPeakBytes int64
}

// ReadCgroup reads the cgroup at path, which is one of:
//   - a cgroup v2 directory (it has cgroup.controllers or cpu.stat), absolute or relative
//     to sysFS when sysFS is the v2 mount;
//   - for v1, a path relative to the hierarchies as /proc/PID/cgroup shows it ("/docker/abc"
//     reads sysFS/cpuacct/docker/abc and sysFS/memory/docker/abc);
//   - an absolute v1 directory of either controller (the other controller's directory of
//     the same name is read too when it exists).
//
// sysFS is "/sys/fs/cgroup" but for tests. A v1 cgroup with only one controller found reads
// 0 for the other. It fails, naming every directory it tried, when it finds none.
func ReadCgroup(sysFS, path string) (CgroupSample, error) {
	isDir := func(p string) bool { st, err := os.Stat(p); return err == nil && st.IsDir() }
	has := func(dir, name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	v2 := func(dir string) bool { return has(dir, "cgroup.controllers") || has(dir, "cpu.stat") }

	abs := filepath.IsAbs(path) && isDir(path) && path != "/"
	// A v1 cpu controller's directory has a cpu.stat too, without usage_usec.
	if abs && v2(path) && !has(path, "cpuacct.usage") && !has(path, "cpu.shares") {
		return readCgroupV2(path)
	}
	if under := filepath.Join(sysFS, path); !abs && v2(under) && has(sysFS, "cgroup.controllers") {
		return readCgroupV2(under)
	}
	rel := path
	if abs {
		// An absolute v1 directory: sysFS/<controller>/<rel>.
		r, err := filepath.Rel(sysFS, path)
		if err != nil || strings.HasPrefix(r, "..") {
			return readCgroupV1([]string{path}, []string{path})
		}
		_, rel, _ = strings.Cut(filepath.ToSlash(r), "/")
	}
	var cpu, mem []string
	for _, c := range []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"} {
		cpu = append(cpu, filepath.Join(sysFS, c, rel))
	}
	mem = append(mem, filepath.Join(sysFS, "memory", rel))
	if abs {
		cpu, mem = append([]string{path}, cpu...), append([]string{path}, mem...)
	}
	return readCgroupV1(cpu, mem)
}

func readCgroupV2(dir string) (CgroupSample, error) {
	var s CgroupSample
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return s, fmt.Errorf("cannot read cgroup v2 %s: %w", dir, err)
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return s, fmt.Errorf("cannot parse %s/cpu.stat: %w", dir, err)
			}
			s.CPU, found = time.Duration(us)*time.Microsecond, true
		}
	}
	if !found {
		return s, fmt.Errorf("no usage_usec in %s/cpu.stat", dir)
	}
	// memory.current is absent in the root cgroup and where the memory controller is off.
	if s.MemoryBytes, err = readIntFile(filepath.Join(dir, "memory.current")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	if s.MemoryPeakBytes, err = readIntFile(filepath.Join(dir, "memory.peak")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	return s, nil
}

// readCgroupV1 reads cpuacct.usage from the first of cpuDirs that has it and the memory
// files from the first of memDirs that has them.
func readCgroupV1(cpuDirs, memDirs []string) (CgroupSample, error) {
	var s CgroupSample
	var tried []string
	found := false
	for _, d := range cpuDirs {
		ns, err := readIntFile(filepath.Join(d, "cpuacct.usage"))
		if errors.Is(err, fs.ErrNotExist) {
			tried = append(tried, filepath.Join(d, "cpuacct.usage"))
			continue
		}
		if err != nil {
			return s, err
		}
		s.CPU, found = time.Duration(ns), true
		break
	}
	for _, d := range memDirs {
		n, err := readIntFile(filepath.Join(d, "memory.usage_in_bytes"))
		if errors.Is(err, fs.ErrNotExist) {
			tried = append(tried, filepath.Join(d, "memory.usage_in_bytes"))
			continue
		}
		if err != nil {
			return s, err
		}
		s.MemoryBytes, found = n, true
		if s.MemoryPeakBytes, err = readIntFile(filepath.Join(d, "memory.max_usage_in_bytes")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return s, err
		}
		break
	}
	if !found {
		return s, fmt.Errorf("no cgroup found: no cgroup v2 directory and none of %s", strings.Join(tried, ", "))
	}
	return s, nil
}

// readIntFile reads a file holding one decimal integer.
func readIntFile(name string) (int64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %s: %w", name, err)
	}
	return v, nil
}
