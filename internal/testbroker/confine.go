package testbroker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuPeriod is the period of a CPUQuota: short, so that the broker's throttled stretches
// add at most this to a latency.
const cpuPeriod = 50 * time.Millisecond

// confine applies m's CPU affinity and CPU quota to its running process.
func (m *Mosquitto) confine(t testing.TB) {
	t.Helper()
	pid := m.Cmd.Process.Pid
	if m.nofile > 0 {
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: m.nofile, Max: m.nofile}, nil); err != nil {
			t.Fatalf("mosquitto's RLIMIT_NOFILE %d: %v", m.nofile, err)
		}
	}
	if len(m.cpus) > 0 {
		if err := SetAffinity(pid, m.cpus); err != nil {
			t.Fatalf("mosquitto on CPUs %v: %v", m.cpus, err)
		}
	}
	if m.quota > 0 {
		dir, err := cpuQuota(fmt.Sprintf("mqblast-test-%d", pid), m.quota, pid)
		if err != nil {
			_ = m.Cmd.Process.Kill()
			_ = m.Cmd.Wait()
			t.Skipf("cannot cap mosquitto's CPU at %.0f%% of a core: %v (root with a cgroup CPU controller)", 100*m.quota, err)
		}
		t.Cleanup(func() {
			for range 50 { // the group can be removed once its process has exited
				if os.Remove(dir) == nil || os.IsNotExist(os.Remove(dir)) {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// SetAffinity pins process pid (every thread of it) to cpus.
func SetAffinity(pid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, tk := range tasks {
		tid, _ := strconv.Atoi(tk.Name())
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("sched_setaffinity %d: %w", tid, err)
		}
	}
	return nil
}

// cpuQuota makes the cgroup name with a CPU quota of share of a core and moves pid into
// it: cgroup v2's cpu.max when the unified hierarchy has the cpu controller, else v1's
// cpu controller. It returns the group's directory.
func cpuQuota(name string, share float64, pid int) (string, error) {
	quota := max(int64(share*float64(cpuPeriod/time.Microsecond)), 1000) // the kernel's least: 1 ms
	period := int64(cpuPeriod / time.Microsecond)
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(string(b), "cpu") {
		dir := filepath.Join("/sys/fs/cgroup", name)
		_ = os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0o644)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", err
		}
		return dir, writeAll(dir, [][2]string{{"cpu.max", fmt.Sprintf("%d %d", quota, period)}, {"cgroup.procs", strconv.Itoa(pid)}})
	}
	dir := filepath.Join("/sys/fs/cgroup/cpu", name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	return dir, writeAll(dir, [][2]string{{"cpu.cfs_period_us", strconv.FormatInt(period, 10)},
		{"cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}, {"cgroup.procs", strconv.Itoa(pid)}})
}

func writeAll(dir string, files [][2]string) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
			return err
		}
	}
	return nil
}
