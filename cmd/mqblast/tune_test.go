package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTree writes a small /proc and /sys tree with a low somaxconn and port range.
func fakeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range map[string]string{
		"proc/self/status":                           "CapEff:\t0000000000000000\n",
		"proc/sys/fs/nr_open":                        "1048576\n",
		"proc/sys/fs/file-max":                       "2000000\n",
		"proc/sys/fs/file-nr":                        "100 0 2000000\n",
		"proc/sys/net/ipv4/ip_local_port_range":      "32768\t60999\n",
		"proc/sys/net/ipv4/tcp_tw_reuse":             "2\n",
		"proc/sys/net/ipv4/tcp_max_tw_buckets":       "262144\n",
		"proc/sys/net/core/somaxconn":                "128\n",
		"proc/sys/net/ipv4/tcp_max_syn_backlog":      "65535\n",
		"proc/sys/net/ipv4/tcp_mem":                  "1000000 2000000 3000000\n",
		"proc/net/sockstat":                          "TCP: inuse 2 orphan 0 tw 0 alloc 2 mem 3\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"proc/meminfo":                               "MemAvailable: 20000000 kB\nSwapTotal: 0 kB\n",
	} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestTuneApplyFakeTree(t *testing.T) {
	root := fakeTree(t)
	args := []string{"tune", "apply", "--root", root, "-c", "40000", "--local-broker", "--persist"}
	out, code, err := runCLI(t, append(args, "--dry-run")...)
	if code != exitOK {
		t.Fatalf("dry run: exit %d: %v", code, err)
	}
	for _, want := range []string{
		"would set net.core.somaxconn: 128 -> 4096\n  revert: sysctl -w net.core.somaxconn=128",
		`would set net.ipv4.ip_local_port_range: 32768 60999 -> 1024 65535` + "\n" +
			`  revert: sysctl -w net.ipv4.ip_local_port_range="32768 60999"`,
		"would write /etc/sysctl.d/90-mqblast.conf (new file)",
		"left to do by hand: warn cores",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run does not say %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/net/core/somaxconn")); string(b) != "128\n" {
		t.Fatalf("dry run wrote somaxconn: %q", b)
	}

	out, code, err = runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("apply: exit %d: %v\n%s", code, err, out)
	}
	if !strings.Contains(out, "set net.core.somaxconn: 128 -> 4096") {
		t.Errorf("apply output:\n%s", out)
	}
	for rel, want := range map[string]string{
		"proc/sys/net/core/somaxconn":           "4096\n",
		"proc/sys/net/ipv4/ip_local_port_range": "1024 65535\n",
		"etc/sysctl.d/90-mqblast.conf":          "net.core.somaxconn = 4096\nnet.ipv4.ip_local_port_range = 1024 65535\n",
	} {
		if b, _ := os.ReadFile(filepath.Join(root, rel)); string(b) != want {
			t.Errorf("%s = %q, want %q", rel, b, want)
		}
	}
	out, _, _ = runCLI(t, args...)
	if !strings.Contains(out, "no sysctl or rlimit change needed") {
		t.Errorf("second apply:\n%s", out)
	}
}

func TestTuneApplyRefusesWithoutRoot(t *testing.T) {
	old := geteuid
	geteuid = func() int { return 1000 }
	t.Cleanup(func() { geteuid = old })
	root := fakeTree(t)
	_, code, err := runCLI(t, "tune", "apply", "--root", root, "-c", "40000")
	if code == exitOK || err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Fatalf("exit %d, %v; want a refusal", code, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "proc/sys/net/ipv4/ip_local_port_range")); string(b) != "32768\t60999\n" {
		t.Errorf("wrote without root: %q", b)
	}
	if _, code, err := runCLI(t, "tune", "apply", "--root", root, "-c", "40000", "--dry-run"); code != exitOK {
		t.Errorf("dry run without root: exit %d: %v", code, err)
	}
}

// TestTuneApplyOnlyIf: --only-if false changes nothing and succeeds even without root (the
// gated init container of deploy/kubernetes); a value that is not a boolean is a usage error.
func TestTuneApplyOnlyIf(t *testing.T) {
	out, _, code := runMQ(t, "tune", "apply", "--only-if", "false")
	if code != exitOK || !strings.Contains(out, "nothing changed") {
		t.Errorf("--only-if false: exit %d, stdout %q", code, out)
	}
	if _, errOut, code := runMQ(t, "tune", "apply", "--only-if", "$(MQBLAST_TUNE)"); code != exitUsage {
		t.Errorf("--only-if of an unexpanded variable: exit %d, want %d\n%s", code, exitUsage, errOut)
	}
}
