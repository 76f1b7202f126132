package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/netnstest"
)

// helperArgsEnv carries the mqblast arguments to TestHelperProcess when the test binary is
// re-executed inside a network namespace.
const helperArgsEnv = "MQBLAST_HELPER_ARGS"

// TestHelperProcess is not a test: re-executed with helperArgsEnv set, it runs mqblast with
// those arguments and exits with its exit code.
func TestHelperProcess(t *testing.T) {
	raw := os.Getenv(helperArgsEnv)
	if raw == "" {
		t.Skip("helper process for the network namespace tests")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(exitFailed)
	}
	root := newRootCmd()
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mqblast:", err)
	}
	os.Exit(codeOf(err))
}

// newNetns creates a network namespace for the test (netnstest.New).
func newNetns(t *testing.T) string { return netnstest.New(t, "cmd") }

// sh runs a command and fails the test if it fails (netnstest.Sh).
func sh(t *testing.T, name string, args ...string) string { return netnstest.Sh(t, name, args...) }

// inNetns runs mqblast with args inside ns (this test binary, re-executed by ip netns exec)
// and returns its stdout and exit code.
func inNetns(t *testing.T, ns string, args ...string) (string, int) {
	t.Helper()
	raw, _ := json.Marshal(args)
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperArgsEnv+"="+string(raw))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ip netns exec: %v", err)
	}
	t.Logf("in %s: mqblast %s: exit %d\n%s%s", ns, strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), code
}

func readSysctl(t *testing.T, key string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// TestNetnsCheckAndApply sets per-namespace sysctls inside a fresh network namespace, runs
// `mqblast check` there and sees them, then `mqblast tune apply` there and sees them fixed,
// while the host's own values stay as they were.
func TestNetnsCheckAndApply(t *testing.T) {
	ns := newNetns(t)
	perNetns := []string{"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.ip_local_port_range",
		"net.ipv4.tcp_tw_reuse", "net.ipv4.tcp_max_tw_buckets"}
	hostBefore := map[string]string{}
	for _, k := range perNetns {
		hostBefore[k] = readSysctl(t, k)
	}
	sh(t, "ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.core.somaxconn=777",
		"net.ipv4.ip_local_port_range=20000 20999", "net.ipv4.tcp_max_syn_backlog=333")

	// 2000 connections to one destination need more than the 1000 ports set above.
	out, code := inNetns(t, ns, "check", "-c", "2000", "--local-broker", "--format", "json")
	var doc struct {
		Ready    bool `json:"ready"`
		Findings []struct {
			Name, Current, Verdict string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check in %s: %v", ns, err)
	}
	got := map[string]string{}
	for _, f := range doc.Findings {
		got[f.Name] = f.Current + " " + f.Verdict
	}
	for name, want := range map[string]string{
		"net.core.somaxconn":           "777 warn",
		"net.ipv4.tcp_max_syn_backlog": "333 warn",
		"net.ipv4.ip_local_port_range": "20000 20999 (1000 ports) fail",
	} {
		if got[name] != want {
			t.Errorf("in the namespace %s = %q, want %q", name, got[name], want)
		}
	}
	if doc.Ready || code != exitNotReady {
		t.Errorf("ready %v, exit %d; want not ready, exit %d", doc.Ready, code, exitNotReady)
	}

	// Apply only what lives in the namespace: the dry run must list nothing else.
	args := []string{"tune", "apply", "-c", "2000", "--local-broker"}
	out, code = inNetns(t, ns, append(args, "--dry-run")...)
	if code != exitOK {
		t.Fatalf("dry run: exit %d", code)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "would write") {
			t.Fatalf("tune apply would write a file on the host: %s", line)
		}
		if key, ok := strings.CutPrefix(line, "would set "); ok {
			key, _, _ = strings.Cut(key, ":")
			found := false
			for _, k := range perNetns {
				found = found || k == key
			}
			if !found {
				t.Fatalf("tune apply would set %s, which is not per network namespace; not applying", key)
			}
		}
	}
	if out, code = inNetns(t, ns, args...); code != exitOK {
		t.Fatalf("apply: exit %d", code)
	}
	for _, want := range []string{"set net.core.somaxconn: 777 -> 4096", "revert: sysctl -w net.core.somaxconn=777",
		"set net.ipv4.ip_local_port_range: 20000 20999 -> 1024 65535"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output does not say %q", want)
		}
	}
	after := sh(t, "ip", "netns", "exec", ns, "sysctl", "-n", "net.core.somaxconn", "net.ipv4.ip_local_port_range")
	if f := strings.Fields(after); len(f) != 3 || f[0] != "4096" || f[1] != "1024" || f[2] != "65535" {
		t.Errorf("in the namespace after apply: %q", after)
	}
	if _, code = inNetns(t, ns, "check", "-c", "2000", "--local-broker"); code != exitOK {
		t.Errorf("check after apply: exit %d, want ready", code)
	}
	for k, v := range hostBefore {
		if now := readSysctl(t, k); now != v {
			t.Errorf("host %s changed: %q -> %q", k, v, now)
		}
	}
}

// TestNetnsAddrs adds and removes source addresses on a veth created inside a network
// namespace, never on the host's interfaces.
func TestNetnsAddrs(t *testing.T) {
	ns := newNetns(t)
	sh(t, "ip", "-n", ns, "link", "add", "mqb0", "type", "veth", "peer", "name", "mqb1")
	list := func() []string {
		var addrs []string
		for _, line := range strings.Split(sh(t, "ip", "-n", ns, "-o", "-4", "addr", "show", "dev", "mqb0"), "\n") {
			if f := strings.Fields(line); len(f) >= 4 {
				addrs = append(addrs, f[3])
			}
		}
		return addrs
	}
	out, code, err := runCLI(t, "addrs", "add", "--netns", ns, "--dev", "mqb0", "--cidr", "10.231.0.0/24", "--count", "5")
	if code != exitOK {
		t.Fatalf("addrs add: exit %d: %v", code, err)
	}
	if !strings.Contains(out, "added 5 addresses on mqb0: 10.231.0.1 to 10.231.0.5") {
		t.Errorf("addrs add said %q", out)
	}
	if got, want := strings.Join(list(), " "), "10.231.0.1/24 10.231.0.2/24 10.231.0.3/24 10.231.0.4/24 10.231.0.5/24"; got != want {
		t.Errorf("addresses on mqb0: %q, want %q", got, want)
	}
	// Adding again fails (the addresses exist) and says so.
	if _, code, err = runCLI(t, "addrs", "add", "--netns", ns, "--dev", "mqb0", "--cidr", "10.231.0.0/24", "--count", "1"); code != exitFailed || err == nil {
		t.Errorf("second add: exit %d: %v", code, err)
	}
	if _, code, err = runCLI(t, "addrs", "del", "--netns", ns, "--dev", "mqb0", "--cidr", "10.231.0.0/24", "--count", "5"); code != exitOK {
		t.Fatalf("addrs del: exit %d: %v", code, err)
	}
	if got := list(); len(got) != 0 {
		t.Errorf("addresses left on mqb0: %q", got)
	}
}
