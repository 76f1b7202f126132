package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestNetClearLeftovers kills a run --net (SIGKILL: no cleanup of its own) and wants `net
// clear` to remove what it left, its namespaces and its temporary directory in TMPDIR (its
// Mosquitto config), and the namespace of another process that is gone; but not the
// directory of a live process, nor one another user owns.
func TestNetClearLeftovers(t *testing.T) {
	netnstest.NeedRoot(t)
	testbroker.Need(t)
	live := filepath.Join(os.TempDir(), fmt.Sprintf("mqblast-net-%d-1", os.Getpid()))
	foreign := filepath.Join(os.TempDir(), "mqblast-net-4999998-2")
	for _, d := range []string{live, foreign} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}

	c := exec.Command(mqblastBin(t), "run", "quick-roundtrip-10", "--net", "local", "--duration", "60s", "--no-check")
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "through the packet emulator") {
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	pid := c.Process.Pid
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("mqblast-net-%d-*", pid)))
	if len(dirs) != 1 {
		t.Fatalf("run --net (pid %d) made %v in %s, want one directory", pid, dirs, os.TempDir())
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	ns := fmt.Sprintf("mqb-%d-b", pid)
	if _, err := os.Stat("/run/netns/" + ns); err != nil {
		t.Fatalf("the killed run left no namespace %s: %v", ns, err)
	}
	dead := "mqb-4999998-e" // above pid_max: no live process has this pid
	if out, err := exec.Command("ip", "netns", "add", dead).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", dead).Run() })

	out, errOut, code := runMQ(t, "net", "clear")
	if code != exitOK {
		t.Fatalf("net clear: exit %d:\n%s%s", code, out, errOut)
	}
	for _, gone := range []string{dead, ns, dirs[0]} {
		if !strings.Contains(out, gone) {
			t.Errorf("net clear does not say it removed %s:\n%s", gone, out)
		}
	}
	for _, gone := range []string{"/run/netns/" + dead, "/run/netns/" + ns, dirs[0]} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("net clear left %s", gone)
		}
	}
	for _, kept := range []string{live, foreign} {
		if _, err := os.Stat(kept); err != nil || strings.Contains(out, kept) {
			t.Errorf("net clear removed %s (of a live process or another user): %v\n%s", kept, err, out)
		}
	}
}

// TestNetEmulateMissingCommand: a client command that cannot start is refused before any
// namespace is made, with the reason, not reported as "bin exited with code 1" (what
// `ip netns exec` says with its exit code).
func TestNetEmulateMissingCommand(t *testing.T) {
	netnstest.NeedRoot(t)
	dir := t.TempDir()
	plain := dir + "/plain"
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{
		"/nonexistent/bin":        `cannot start "/nonexistent/bin": no such file`,
		"mqblast-no-such-command": `cannot start "mqblast-no-such-command": not found in PATH`,
		plain:                     `cannot start "` + plain + `": not an executable file`,
	} {
		_, stderr, code := runMQ(t, "net", "emulate", "local", "--", cmd)
		if code != exitUsage || !strings.Contains(stderr, want) || strings.Contains(stderr, "namespace") {
			t.Errorf("net emulate -- %s: exit %d:\n%s\nwant exit %d with %q and no namespace made", cmd, code, stderr, exitUsage, want)
		}
	}
}

// TestNetEmulateKilledCommand: a client command that a signal ends is reported as killed
// by it, with the shell's exit code for it (128 + the signal), not as "exited with code 130"
// whatever the signal was.
func TestNetEmulateKilledCommand(t *testing.T) {
	netnstest.NeedRoot(t)
	_, stderr, code := runMQ(t, "net", "emulate", "local", "--", "sh", "-c", "kill -TERM $$")
	if code != 128+int(syscall.SIGTERM) || !strings.Contains(stderr, "sh was killed by signal TERM") {
		t.Errorf("net emulate -- sh -c 'kill -TERM $$': exit %d:\n%s\nwant exit %d and \"sh was killed by signal TERM\"",
			code, stderr, 128+int(syscall.SIGTERM))
	}
}

// TestBrokerListenName: broker --listen takes a host name whose addresses are all loopback
// (localhost) and refuses one that resolves elsewhere, naming the address. The name
// "farhost" resolves to 10.9.8.7 inside a namespace of the test's own (ip netns exec binds
// /etc/netns/NS/hosts over /etc/hosts).
func TestBrokerListenName(t *testing.T) {
	t.Parallel()
	bin := mqblastBin(t)
	ns := netnstest.New(t, "hosts")
	dir := "/etc/netns/" + ns
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(dir+"/hosts", []byte("127.0.0.1 localhost\n10.9.8.7 farhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(listen string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, "ip", "netns", "exec", ns, bin, "broker", "--listen", listen)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ctx.Err() == nil {
			return out.String(), ee.ExitCode()
		}
		return out.String(), -1 // still running at the timeout: it listened
	}
	if out, code := run("farhost:0"); code != exitUsage || !strings.Contains(out, "farhost resolves to 10.9.8.7, not loopback") {
		t.Errorf("--listen farhost:0: exit %d:\n%s\nwant exit %d naming 10.9.8.7", code, out, exitUsage)
	}
	if out, code := run("localhost:0"); code != -1 || !strings.HasPrefix(out, "listening on 127.0.0.1:") {
		t.Errorf("--listen localhost:0: exit %d:\n%s\nwant it listening on 127.0.0.1", code, out)
	}
}
