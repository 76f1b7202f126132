package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTree(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlanAndApply(t *testing.T) {
	files := goodHost()
	files["proc/sys/net/core/somaxconn"] = "128\n"
	files["proc/sys/net/ipv4/ip_local_port_range"] = "32768\t60999\n"
	files["proc/sys/net/ipv4/tcp_tw_reuse"] = "0\n"
	files["sys/kernel/mm/transparent_hugepage/enabled"] = "[always] madvise never\n"
	files["etc/sysctl.d/90-mqblast.conf"] = "vm.max_map_count = 262144\nnet.core.somaxconn = 1024\n"
	root := writeTree(t, files)
	h := Host{Root: root, NoFile: fixedNoFile(20000, 20000), Cores: 8, PageSize: 4096}
	n := ForConnections(50000, 1, 1)
	n.LocalBroker = true
	r := h.Check(n)

	changes, err := PlanChanges(root, r, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Name: LimitsFile, Path: LimitsFile, New: "* soft nofile 1048576\n* hard nofile 1048576\n",
			Revert: "rm " + LimitsFile, Note: "takes effect at the next login: the hard limit is inherited"},
		{Name: "net.ipv4.ip_local_port_range", Path: "/proc/sys/net/ipv4/ip_local_port_range",
			Old: "32768 60999", New: "1024 65535", Revert: `sysctl -w net.ipv4.ip_local_port_range="32768 60999"`},
		{Name: "net.core.somaxconn", Path: "/proc/sys/net/core/somaxconn",
			Old: "128", New: "4096", Revert: "sysctl -w net.core.somaxconn=128"},
		{Name: SysctlFile, Path: SysctlFile,
			Old:    "vm.max_map_count = 262144\nnet.core.somaxconn = 1024\n",
			New:    "vm.max_map_count = 262144\nnet.core.somaxconn = 4096\nnet.ipv4.ip_local_port_range = 1024 65535\n",
			Revert: "printf %s 'vm.max_map_count = 262144\nnet.core.somaxconn = 1024\n' > " + SysctlFile,
			Note:   "read at boot by systemd-sysctl; sysctl --system reloads it"},
	}
	// tcp_tw_reuse=0 is a warning too; it sits between the port range and somaxconn.
	tw := Change{Name: "net.ipv4.tcp_tw_reuse", Path: "/proc/sys/net/ipv4/tcp_tw_reuse", Old: "0", New: "1",
		Revert: "sysctl -w net.ipv4.tcp_tw_reuse=0"}
	want = append(want[:2], append([]Change{tw}, want[2:]...)...)
	want[4].New = "vm.max_map_count = 262144\nnet.core.somaxconn = 4096\nnet.ipv4.ip_local_port_range = 1024 65535\nnet.ipv4.tcp_tw_reuse = 1\n"
	if d := cmp.Diff(want, changes); d != "" {
		t.Fatalf("PlanChanges (-want +got):\n%s", d)
	}
	// Planning writes nothing.
	if got := readTree(t, root, "proc/sys/net/core/somaxconn"); got != "128\n" {
		t.Fatalf("PlanChanges wrote somaxconn: %q", got)
	}

	done, err := Apply(root, changes)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != len(changes) {
		t.Errorf("applied %d of %d", len(done), len(changes))
	}
	for rel, want := range map[string]string{
		"proc/sys/net/core/somaxconn":           "4096\n",
		"proc/sys/net/ipv4/ip_local_port_range": "1024 65535\n",
		"proc/sys/net/ipv4/tcp_tw_reuse":        "1\n",
		LimitsFile[1:]:                          want[0].New,
		SysctlFile[1:]:                          want[4].New,
	} {
		if got := readTree(t, root, rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	// THP is not a sysctl: it stays as it was, a fix to apply by hand.
	if got := readTree(t, root, "sys/kernel/mm/transparent_hugepage/enabled"); !strings.HasPrefix(got, "[always]") {
		t.Errorf("THP changed: %q", got)
	}
	// The host is now ready for what apply could fix.
	r = h.Check(n)
	for _, name := range []string{"net.core.somaxconn", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_tw_reuse"} {
		if f, _ := r.Find(name); f.Verdict != OK {
			t.Errorf("after apply %s is %s: %s", name, f.Verdict, f.Current)
		}
	}
}

func TestPlanNothingOnGoodHost(t *testing.T) {
	t.Parallel()
	root := writeTree(t, goodHost())
	r := Host{Root: root, NoFile: fixedNoFile(1<<20, 1<<20), Cores: 8}.Check(ForConnections(1000, 1, 1))
	changes, err := PlanChanges(root, r, true)
	if err != nil || len(changes) != 0 {
		t.Errorf("PlanChanges = %v, %v; want none", changes, err)
	}
}

func TestApplyStopsAtFirstError(t *testing.T) {
	root := writeTree(t, goodHost())
	changes := []Change{
		{Name: "net.core.somaxconn", Path: "/proc/sys/net/core/somaxconn", Old: "65535", New: "70000"},
		{Name: "x.y", Path: "/proc/sys/x/y/z", New: "1"}, // the directory does not exist
		{Name: "net.ipv4.tcp_tw_reuse", Path: "/proc/sys/net/ipv4/tcp_tw_reuse", Old: "1", New: "0"},
	}
	done, err := Apply(root, changes)
	if err == nil || !strings.Contains(err.Error(), "cannot set x.y") {
		t.Fatalf("err = %v", err)
	}
	if len(done) != 1 || done[0].Name != "net.core.somaxconn" {
		t.Errorf("done = %v", done)
	}
	if got := readTree(t, root, "proc/sys/net/ipv4/tcp_tw_reuse"); got != "1\n" {
		t.Errorf("applied past the error: tcp_tw_reuse = %q", got)
	}
}
