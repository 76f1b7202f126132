package tuning

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CPUQuota is the CPU process pid may use by its cgroups' quotas, in cores, and the
// cgroup directory that sets it: the smallest quota of the process's cgroup and of its
// ancestors (v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us). cores is 0 when no
// cgroup on the way caps it. procFS and sysFS are "/proc" and "/sys/fs/cgroup" but for
// tests. A broker in a container with a CPU limit is busy at that limit, not at a core.
func CPUQuota(procFS, sysFS string, pid int) (cores float64, dir string, err error) {
	b, err := os.ReadFile(filepath.Join(procFS, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return 0, "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var bases []string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2 (unified), when it is the mount
			if _, err := os.Stat(filepath.Join(sysFS, "cgroup.controllers")); err == nil {
				bases = []string{sysFS}
			}
		case hasController(parts[1], "cpu"): // v1: cpu, or cpu,cpuacct mounted together
			bases = []string{filepath.Join(sysFS, parts[1]), filepath.Join(sysFS, "cpu"), filepath.Join(sysFS, "cpu,cpuacct")}
		}
		for _, base := range bases {
			if _, err := os.Stat(base); err != nil {
				continue
			}
			for p := path.Clean(parts[2]); ; p = path.Dir(p) {
				d := filepath.Join(base, p)
				if c, ok := quotaOf(d); ok && (cores == 0 || c < cores) {
					cores, dir = c, d
				}
				if p == "/" || p == "." {
					break
				}
			}
			break
		}
	}
	return cores, dir, nil
}

func hasController(list, c string) bool { return slices.Contains(strings.Split(list, ","), c) }

// quotaOf is the quota of cgroup directory d in cores; ok is false without one.
func quotaOf(d string) (float64, bool) {
	if b, err := os.ReadFile(filepath.Join(d, "cpu.max")); err == nil { // v2: "QUOTA PERIOD" or "max PERIOD"
		var q, p float64
		if f := strings.Fields(string(b)); len(f) == 2 && f[0] != "max" {
			if _, err := fmt.Sscan(f[0]+" "+f[1], &q, &p); err == nil && q > 0 && p > 0 {
				return q / p, true
			}
		}
		return 0, false
	}
	q, err1 := readIntFile(filepath.Join(d, "cpu.cfs_quota_us"))
	p, err2 := readIntFile(filepath.Join(d, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return float64(q) / float64(p), true
}
