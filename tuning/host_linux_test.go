package tuning

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCheckThisHost runs the checks against this host's real /proc, /sys and rlimits and
// holds them against what the kernel says through other means.
func TestCheckThisHost(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var capEff uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			capEff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	capable := capEff&(1<<unix.CAP_SYS_RESOURCE) != 0

	const conns = 100000
	r := Check("/", ForConnections(conns, 1, 1))
	f, ok := r.Find("RLIMIT_NOFILE")
	if !ok {
		t.Fatal("no RLIMIT_NOFILE finding")
	}
	t.Logf("RLIMIT_NOFILE: %s, %s: %s; fix %q", f.Current, f.Verdict, f.Why, f.Fix)
	if want := fmt.Sprintf("soft %d, hard %d ", rl.Cur, rl.Max); !strings.HasPrefix(f.Current, want) {
		t.Errorf("current %q, want it to start %q (getrlimit)", f.Current, want)
	}
	need := uint64(conns + FDHeadroom)
	switch {
	case rl.Max >= need:
		if f.Verdict != OK {
			t.Errorf("hard %d >= %d but verdict %s", rl.Max, need, f.Verdict)
		}
	case capable:
		if !strings.Contains(f.Current, "this process may raise it: CAP_SYS_RESOURCE") {
			t.Errorf("CapEff holds CAP_SYS_RESOURCE but the finding says %q", f.Current)
		}
	default:
		// This machine: ulimit -Hn 20000, no CAP_SYS_RESOURCE even as root.
		if f.Verdict != Fail || !strings.Contains(f.Current, "cannot be raised here: no CAP_SYS_RESOURCE") {
			t.Errorf("hard %d < %d without CAP_SYS_RESOURCE, but %s: %q", rl.Max, need, f.Verdict, f.Current)
		}
		procs := (conns + int(rl.Max) - FDHeadroom - 1) / (int(rl.Max) - FDHeadroom)
		if len(f.Fix) == 0 || !strings.Contains(f.Fix[0], fmt.Sprintf("--procs %d", procs)) {
			t.Errorf("first fix %q does not name --procs %d", f.Fix, procs)
		}
		if r.Ready() {
			t.Error("Ready() with a failed RLIMIT_NOFILE")
		}
	}

	// The other values match the kernel's files, read here independently.
	for name, path := range map[string]string{
		"fs.nr_open":            "/proc/sys/fs/nr_open",
		"fs.file-max":           "/proc/sys/fs/file-max",
		"cores":                 "",
		"net.ipv4.tcp_tw_reuse": "/proc/sys/net/ipv4/tcp_tw_reuse",
	} {
		f, ok := r.Find(name)
		if !ok {
			t.Errorf("no finding %s", name)
			continue
		}
		want := ""
		if path == "" {
			want = strconv.Itoa(unixCores(t))
		} else {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want = strings.TrimSpace(string(b))
		}
		if f.Current != want {
			t.Errorf("%s current %q, want %q", name, f.Current, want)
		}
	}
	for _, f := range r.Findings {
		if strings.HasPrefix(f.Current, "unreadable") {
			t.Errorf("%s unreadable on this host: %s", f.Name, f.Current)
		}
	}
}

func unixCores(t *testing.T) int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	return set.Count()
}

func TestRaiseNoFile(t *testing.T) {
	cur, err := ProcessNoFile()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := RaiseNoFile(cur.Soft); err != nil || got != cur {
		t.Errorf("RaiseNoFile(%d) = %v, %v; want %v unchanged", cur.Soft, got, err, cur)
	}
	f, _ := Check("/", Needs{Connections: int(cur.Hard) + 1}).Find("RLIMIT_NOFILE")
	capable := strings.Contains(f.Current, "CAP_SYS_RESOURCE)") && !strings.Contains(f.Current, "no CAP_SYS_RESOURCE")
	got, err := RaiseNoFile(cur.Hard + 1)
	switch {
	case capable && (err != nil || got.Hard != cur.Hard+1):
		t.Errorf("with CAP_SYS_RESOURCE: RaiseNoFile(%d) = %v, %v", cur.Hard+1, got, err)
	case !capable && err == nil:
		t.Errorf("without CAP_SYS_RESOURCE RaiseNoFile(%d) raised the hard limit to %v", cur.Hard+1, got)
	}
}
