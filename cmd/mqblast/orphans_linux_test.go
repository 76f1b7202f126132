package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
)

// proc is a process under the mqblast the test started.
type proc struct {
	pid  int
	args string
}

// procTable reads every live process's parent, and its command line.
func procTable() map[int]proc {
	ents, _ := os.ReadDir("/proc")
	out := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procState(pid)
		if !ok || state == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out[pid] = proc{pid: ppid, args: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))}
	}
	return out
}

// procState reads a process's parent and state from /proc/PID/stat.
func procState(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // comm may hold spaces
	if len(f) < 2 || f[0] == "" {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0][0], true
}

// descendants are the live processes under pid (proc.pid holds each one's own pid).
func descendants(pid int) []proc {
	tab := procTable()
	var out []proc
	var walk func(int)
	walk = func(parent int) {
		for p, pr := range tab {
			if pr.pid == parent {
				out = append(out, proc{pid: p, args: pr.args})
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	_, state, ok := procState(pid)
	return ok && state != 'Z'
}

// killedParent starts mqblast with args and polls ready with its descendants and stderr
// until it returns the addresses its children listen on (nil: not ready yet); then it
// SIGKILLs mqblast, as the OOM killer would, and wants every descendant gone and every
// address closed within 5 s, and nothing left in the temporary directory they had.
func killedParent(t *testing.T, args []string, ready func(kids []proc, stderr string) []string) {
	t.Helper()
	c := exec.Command(mqblastBin(t), args...)
	tmp := t.TempDir()
	c.Env = append(os.Environ(), "TMPDIR="+tmp)
	// A file, not a pipe: Wait would wait for every child that inherited the pipe.
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	stderr := func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }
	c.Stderr = errFile
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var kids []proc
	t.Cleanup(func() { // whatever the test found, leave nothing behind
		_ = c.Process.Kill()
		_ = c.Wait()
		for _, k := range kids {
			_ = syscall.Kill(k.pid, syscall.SIGKILL)
		}
	})
	var addrs []string
	for deadline := time.Now().Add(60 * time.Second); addrs == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mqblast %s did not get ready in 60 s; its processes: %v\n%s", strings.Join(args, " "), descendants(c.Process.Pid), stderr())
		}
		kids = descendants(c.Process.Pid)
		addrs = ready(kids, stderr())
	}
	for _, a := range addrs {
		if conn, err := net.DialTimeout("tcp", a, time.Second); err != nil {
			t.Fatalf("%s does not accept before the kill: %v", a, err)
		} else {
			_ = conn.Close()
		}
	}
	t.Logf("SIGKILL to mqblast %d; under it: %v; listening: %v", c.Process.Pid, kids, addrs)
	_ = c.Process.Kill()
	_ = c.Wait()
	killedAt := time.Now()
	for deadline := killedAt.Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var left []proc
		for _, k := range kids {
			if alive(k.pid) {
				left = append(left, k)
			}
		}
		var open []string
		for _, a := range addrs {
			if conn, err := net.DialTimeout("tcp", a, 200*time.Millisecond); err == nil {
				_ = conn.Close()
				open = append(open, a)
			}
		}
		if len(left) == 0 && len(open) == 0 {
			t.Logf("every child gone %v after the SIGKILL", time.Since(killedAt).Round(time.Millisecond))
			if names, err := filepath.Glob(filepath.Join(tmp, "*")); err != nil || len(names) > 0 {
				t.Errorf("mqblast SIGKILLed left in its temporary directory: %v %v", names, err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after mqblast was SIGKILLed, its children still run: %v; still listening: %v", left, open)
		}
	}
}

// withArgs are the processes among kids whose command line holds every one of words.
func withArgs(kids []proc, words ...string) []proc {
	var out []proc
	for _, k := range kids {
		all := true
		for _, w := range words {
			all = all && strings.Contains(k.args, w)
		}
		if all {
			out = append(out, k)
		}
	}
	return out
}

// addrAfter is the host:port that follows prefix in s, or "".
func addrAfter(s, prefix string) string {
	m := regexp.MustCompile(regexp.QuoteMeta(prefix) + `(\S+:\d+)`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestOrphansWorkersAndEmbeddedBroker: a run's worker processes and its embedded broker do
// not outlive the run when it is SIGKILLed.
func TestOrphansWorkersAndEmbeddedBroker(t *testing.T) {
	t.Parallel()
	killedParent(t, []string{"run", "quick-p2p-100", "--procs", "2", "--duration", "60s", "--no-check"},
		func(kids []proc, stderr string) []string {
			addr := addrAfter(stderr, "started the embedded broker (mochi-mqtt) on ")
			if len(withArgs(kids, " child")) < 2 || len(withArgs(kids, "broker", "--listen")) != 1 || addr == "" {
				return nil
			}
			return []string{addr}
		})
}

// TestOrphansSink: the sink of `run --sink` does not outlive the run when it is SIGKILLed.
func TestOrphansSink(t *testing.T) {
	t.Parallel()
	killedParent(t, []string{"run", "quick-p2p-100", "--sink", "--duration", "60s", "--no-check"},
		func(kids []proc, stderr string) []string {
			addr := addrAfter(stderr, "started mqblast sink on ")
			if len(withArgs(kids, "sink", "--child")) != 1 || addr == "" {
				return nil
			}
			return []string{addr}
		})
}

// TestOrphansStudy: a study's broker (Mosquitto under sh), its running cell and the cell's
// workers do not outlive the study when it is SIGKILLed.
func TestOrphansStudy(t *testing.T) {
	t.Parallel()
	testbroker.Need(t)
	dir := t.TempDir()
	campaign := filepath.Join(dir, "c.json")
	if err := os.WriteFile(campaign, []byte(`{"name": "orphans",
  "brokers": [{"name": "m", "type": "command", "start": "mosquitto -p {port}; echo mosquitto ended", "address": "127.0.0.1:{port}"}],
  "scenarios": [{"scenario": "quick-p2p-100"}], "repetitions": 1, "duration_sec": 60}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "study")
	killedParent(t, []string{"study", campaign, "--out", out, "--no-check", "--run-arg=--procs=2"},
		func(kids []proc, _ string) []string {
			if len(withArgs(kids, "mosquitto")) == 0 || len(withArgs(kids, " child")) < 2 {
				return nil
			}
			var ix struct {
				Brokers []struct {
					Address string `json:"address"`
				} `json:"brokers"`
			}
			if b, err := os.ReadFile(filepath.Join(out, "study.json")); err != nil || json.Unmarshal(b, &ix) != nil || len(ix.Brokers) != 1 {
				return nil
			}
			return []string{ix.Brokers[0].Address}
		})
}

// TestOrphansNetEmulate: the broker (under sh) and the client command that `net emulate`
// runs in its namespaces do not outlive it when it is SIGKILLed.
func TestOrphansNetEmulate(t *testing.T) {
	t.Parallel()
	netnstest.NeedRoot(t)
	mosq := testbroker.Need(t)
	conf := filepath.Join(t.TempDir(), "m.conf")
	if err := os.WriteFile(conf, []byte("listener 1883 10.211.0.1\nallow_anonymous true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	killedParent(t, []string{"net", "emulate", "local", "--broker-cmd", mosq + " -c " + conf + "; echo after", "--", "sleep", "300"},
		func(kids []proc, _ string) []string {
			if len(withArgs(kids, mosq, "-c")) == 0 || len(withArgs(kids, "sleep", "300")) == 0 {
				return nil
			}
			return []string{} // in the broker namespace: not reachable from here; the processes tell
		})
}
