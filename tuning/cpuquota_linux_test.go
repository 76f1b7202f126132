package tuning

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/mqblast/mqblast/internal/tier"
)

// TestCPUQuota: a process in a cgroup of this host's with a CPU quota of a quarter of a
// core (v2 cpu.max, else v1 cfs_quota_us) reads 0.25 and that cgroup; one in a child
// cgroup without a quota of its own reads its parent's; this test's own process, none.
func TestCPUQuota(t *testing.T) {
	tier.Integration(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: it makes cgroups")
	}
	v2 := false
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		v2 = true
	}
	base := "/sys/fs/cgroup/cpu"
	if v2 {
		base = "/sys/fs/cgroup"
		_ = os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
	}
	parent := filepath.Join(base, fmt.Sprintf("mqblast-quota-%d", os.Getpid()))
	child := filepath.Join(parent, "child")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Skipf("no cgroup of this test's own: %v", err)
	}
	set := map[string]string{"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "25000"}
	if v2 {
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+cpu"), 0o644)
		set = map[string]string{"cpu.max": "25000 100000"}
	}
	for f, v := range set {
		if err := os.WriteFile(filepath.Join(parent, f), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		_ = os.Remove(child)
		_ = os.Remove(parent)
	})
	for _, dir := range []string{parent, child} {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		q, d, err := CPUQuota("/proc", "/sys/fs/cgroup", c.Process.Pid)
		if err != nil || q != 0.25 || d != parent {
			t.Errorf("a process in %s: quota %v cores from %q (%v), want 0.25 from %s", dir, q, d, err, parent)
		}
	}
	// This process, where its cgroup is the root's (no container around the test).
	if b, _ := os.ReadFile("/proc/self/cgroup"); !regexp.MustCompile(`(?m)^\d+:([^:]*,)?cpu(,[^:]*)?:/$|^0::/$`).Match(b) {
		return
	}
	if q, d, err := CPUQuota("/proc", "/sys/fs/cgroup", os.Getpid()); err != nil || q != 0 {
		t.Errorf("this test's process: quota %v from %q (%v), want none", q, d, err)
	}
}
