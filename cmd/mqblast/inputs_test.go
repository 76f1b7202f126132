package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/sink"
)

// hasAddr reports whether this host has address a (an IPv6 loopback may be disabled).
func hasAddr(a string) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// TestBindInterfaceBrokerFamily: --bind lo (and --ifaddr lo) against a real Mosquitto
// takes only lo's addresses of the broker's family, IPv4 or IPv6, so that every client
// connects (lo has 127.0.0.1 and ::1: half the clients bound to the other one failed, and
// the run exited 0); a source address of the other family is refused before any socket
// opens, naming the broker's family and the fix.
func TestBindInterfaceBrokerFamily(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	const clients = 20
	quick := []string{"--set", "publishers.client_count=" + strconv.Itoa(clients), "--set", "parameters.connection_rate=400",
		"--duration", "1s", "--no-check", "--procs", "1", "--format", "json"}
	hosts := []string{"127.0.0.1"}
	if hasAddr("::1") {
		hosts = append(hosts, "::1")
	} else {
		t.Log("no ::1 on this host: the IPv6 broker is not tried")
	}
	for _, host := range hosts {
		m := testbroker.StartMosquitto(t, testbroker.Options{Host: host})
		_, port, _ := net.SplitHostPort(m.Addr)
		for name, args := range map[string][]string{
			"run --bind lo":    append([]string{"run", "quick-conn-100", "--broker", m.Addr, "--bind", "lo"}, quick...),
			"conn --ifaddr lo": {"conn", "-H", host, "-p", port, "-c", strconv.Itoa(clients), "-R", "400", "--hold", "1s", "--ifaddr", "lo", "--no-check", "--procs", "1", "--format", "json"},
		} {
			r := runBin(t, args...)
			if r.code != 0 {
				t.Errorf("%s against %s: exit %d\n%s", name, m.Addr, r.code, r.stderr)
				continue
			}
			c := decodeResult(t, r).Connections
			if c.Established != clients || c.Failed != 0 {
				t.Errorf("%s against %s: %d of %d established, %d failed (%v)", name, m.Addr, c.Established, clients, c.Failed, c.FailedBy)
			}
		}
	}

	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "quick-conn-100", "--broker", m.Addr, "--bind", "127.0.0.2,::1"},
			[]string{"--bind ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4", "give IPv4 source addresses"}},
		{[]string{"run", "quick-conn-100", "--broker", "[::1]:1883", "--bind", "127.0.0.2-127.0.0.9"},
			[]string{"--bind 127.0.0.2-127.0.0.9: IPv4 source addresses, but the broker ::1 is IPv6", "give IPv6 source addresses"}},
		{[]string{"run", "quick-conn-100", "--broker", m.Addr + ",[::1]:1883", "--bind", "lo"},
			[]string{"--bind: the broker 127.0.0.1 is IPv4 and the broker ::1 is IPv6", "give brokers of one family"}},
		{[]string{"conn", "-H", "127.0.0.1", "-p", "1", "-c", "5", "--ifaddr", "::1"},
			[]string{"--ifaddr ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4"}},
		{[]string{"run", "quick-conn-100", "--bind", "::1"}, // the embedded broker listens on 127.0.0.1
			[]string{"--bind ::1: IPv6 source addresses, but the local broker (127.0.0.1) is IPv4"}},
	} {
		r := runBin(t, append(tc.args, "--no-check", "--procs", "1")...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, r.code, exitUsage, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "connecting") {
			t.Errorf("%v: it dialed:\n%s", tc.args, r.stderr)
		}
	}
}

// TestFlagBounds: flags whose value cannot work are refused up front (exit 2), each
// message naming the flag, its value, the bound and the fix: --loops beyond 4 per core,
// --sink-flush-delay without --sink or beyond 1 s, and the sink's --flush-delay,
// --max-connections, --connections and --procs beyond what this host's cores and
// descriptor limit make sensible.
func TestFlagBounds(t *testing.T) {
	t.Parallel()
	cores, per := runtime.NumCPU(), sink.PerProcess()
	most := strconv.Itoa(4 * cores)
	run := []string{"run", "quick-conn-100", "--broker", "127.0.0.1:1", "--no-check", "--procs", "1"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{append(run, "--loops", strconv.Itoa(4*cores+1)), []string{"--loops " + strconv.Itoa(4*cores+1) + ": more than " + most + " loops (4 per core", "at most " + most}},
		{append(run, "--loops", "100000"), []string{"--loops 100000: more than " + most}},
		{append(run, "--sink-flush-delay", "5ms"), []string{"--sink-flush-delay 5ms: it is the --flush-delay of the sink that --sink starts; add --sink"}},
		{[]string{"run", "quick-conn-100", "--sink", "--no-check", "--sink-flush-delay", "2s"}, []string{"--sink-flush-delay 2s: want 0", "to 1s", "e.g. --sink-flush-delay 200µs"}},
		{[]string{"conn", "-H", "127.0.0.1", "-p", "1", "-c", "5", "--no-check", "--loops", "100000"}, []string{"--loops 100000: more than " + most}},
		{[]string{"sink", "--flush-delay", "1h"}, []string{"--flush-delay 1h0m0s: want 0", "to 1s"}},
		{[]string{"sink", "--flush-delay", "-1ms"}, []string{"--flush-delay -1ms: want 0"}},
		{[]string{"sink", "--max-connections", "-5"}, []string{"--max-connections -5: want 0 (no limit)"}},
		{[]string{"sink", "--max-connections", strconv.Itoa(per + 1)},
			[]string{"--max-connections " + strconv.Itoa(per+1) + ": one process holds at most " + strconv.Itoa(per), "give at most " + strconv.Itoa(per)}},
		{[]string{"sink", "--connections", "-3"}, []string{"--connections -3: want 0 (not known)"}},
		{[]string{"sink", "--procs", "auto", "--connections", strconv.Itoa(1024*per + 1)}, []string{"more than 1024 processes can hold", "raise the hard limit"}},
		{[]string{"sink", "--procs", "1", "--connections", strconv.Itoa(per + 1)},
			[]string{"--procs 1 holds at most " + strconv.Itoa(per) + " connections", "not --connections " + strconv.Itoa(per+1), "give --procs 2 or more, or --procs auto"}},
		{[]string{"sink", "--procs", strconv.Itoa(4*cores + 1)}, []string{"--procs " + strconv.Itoa(4*cores+1) + ": more than " + most + " processes", "give --connections with them, or --procs " + most + " or fewer"}},
	} {
		stderr, code := runRefused(t, nil, tc.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, exitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
		if strings.Contains(stderr, "connecting") || strings.Contains(stderr, "ready ") {
			t.Errorf("%v: it started:\n%s", tc.args, stderr)
		}
	}
}

// runRefused runs the binary with args (and env added to this process's environment) for
// at most 10 s, long enough to refuse them: one that takes them runs on (the sink until a
// signal) and is killed with the children it started, exit -1.
func runRefused(t *testing.T, env []string, args ...string) (stderr string, code int) {
	t.Helper()
	bin := mqblastBin(t) // built first: the 10 s are the run's
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var errOut bytes.Buffer
	c.Stderr = &errOut
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && ctx.Err() == nil {
		t.Fatal(err)
	}
	return errOut.String(), c.ProcessState.ExitCode()
}

// TestShardAndStartAtInputs: against a real Mosquitto, a shard count that leaves shards
// without a client (--shard 7/100 of 8 clients ran, connected nothing and failed with "no
// error recorded"), a JOB_COMPLETION_INDEX with a blank, and a --start-at more than a day
// ahead or long past are refused before any connection (exit 2), each saying the fix; a
// --start-at ahead says that the clients hold their connections until then.
func TestShardAndStartAtInputs(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	eight := []string{"run", "quick-conn-100", "--broker", m.Addr, "--set", "publishers.client_count=8", "--duration", "1s",
		"--no-check", "--procs", "1", "--run-id", "inputs"}
	p2p := []string{"run", "quick-p2p-100", "--broker", m.Addr, "--set", "publishers.client_count=5", "--set", "subscribers.client_count=5",
		"--duration", "1s", "--set", "parameters.warmup_sec=0", "--no-check", "--procs", "1"}
	for _, tc := range []struct {
		env, args, want []string
	}{
		{nil, append(eight, "--shard", "7/100"), []string{"--shard 7/100: the plan has 8 clients, 8 in its largest group",
			"(this one gets 0); give at most 8 shards (--shard I/8, or JOB_COMPLETIONS=8 with --shard auto)"}},
		{[]string{"JOB_COMPLETION_INDEX=7", "JOB_COMPLETIONS=100"}, append(eight, "--shard", "auto"), []string{"--shard 7/100: the plan has 8 clients"}},
		{[]string{"JOB_COMPLETION_INDEX= 1", "JOB_COMPLETIONS=3"}, append(eight, "--shard", "auto"),
			[]string{`--shard auto: JOB_COMPLETION_INDEX=" 1" is not a shard index: want digits alone, no blank or sign`}},
		{nil, append(p2p, "--start-at", "+25h"), []string{`--start-at "+25h" is 25h0m0s from now, more than 24h0m0s ahead`, "give an instant within 24h0m0s"}},
		{nil, append(p2p, "--start-at", "2020-01-02T03:04:05Z"), []string{`--start-at "2020-01-02T03:04:05Z" was `, "ago, more than 10m0s", "give a later instant"}},
	} {
		stderr, code := runRefused(t, tc.env, tc.args...)
		if code != exitUsage {
			t.Errorf("%v %v: exit %d, want %d\n%s", tc.env, tc.args, code, exitUsage, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v %v: stderr lacks %q:\n%s", tc.env, tc.args, w, stderr)
			}
		}
		if strings.Contains(stderr, "connecting") {
			t.Errorf("%v %v: it dialed:\n%s", tc.env, tc.args, stderr)
		}
	}

	r := runBin(t, append(p2p, "--start-at", "+3s")...)
	if r.code != 0 {
		t.Fatalf("--start-at +3s: exit %d\n%s", r.code, r.stderr)
	}
	for _, w := range []string{"--start-at: connecting 10 clients now and holding their connections until ", "), then publishing",
		"subscribed: holding the connections until "} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("--start-at +3s: stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	r = runBin(t, append(eight, "--start-at", "+1h")...)
	if r.code != 0 || !strings.Contains(r.stderr, "a Connections scenario publishes nothing: its clients connect now") || r.took > 30*time.Second {
		t.Errorf("a Connections run with --start-at +1h: exit %d after %v\n%s", r.code, r.took, r.stderr)
	}
}

// TestStudyDirInUse: a study directory with cells/ (or brokers/, study.html) but no
// study.json, a study whose index is lost, is refused before anything is written (it was
// reused and its cells overwritten), and so is a study of another campaign: exit 2, naming
// what it holds and the fix.
func TestStudyDirInUse(t *testing.T) {
	for name, files := range map[string][]string{
		"cells":      {"cells/c0001.json"},
		"brokers":    {"brokers/mosquitto/mosquitto.conf"},
		"study.html": {"study.html"},
	} {
		dir := t.TempDir()
		for _, f := range files {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("kept"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, stderr, code := runMQ(t, "study", "retain-throughput", "--out", dir, "--no-check")
		if code != exitUsage || !strings.Contains(stderr, dir+" holds "+name) ||
			!strings.Contains(stderr, "but no study.json: a study cannot resume without its index") ||
			!strings.Contains(stderr, "give a new --out, or remove the directory to start over") {
			t.Errorf("%s without study.json: exit %d, want %d naming it and the fix:\n%s", name, code, exitUsage, stderr)
		}
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != "kept" {
				t.Errorf("%s: %q, %v after the refusal", f, b, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "study.json")); err == nil {
			t.Errorf("%s: study.json written", name)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "study.json"), []byte(`{"schema":"mqblast.study/v1","name":"other","campaign_hash":"0"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMQ(t, "study", "retain-throughput", "--out", dir, "--no-check"); code != exitUsage ||
		!strings.Contains(stderr, `holds a study of another campaign ("other"`) {
		t.Errorf("a study of another campaign: exit %d, want %d:\n%s", code, exitUsage, stderr)
	}
}

// TestDocumentReadersRefuseBadFigures: merge, report and compare refuse a document whose
// figures cannot be (published -5, p99 -5 µs) with exit 2, naming the file and the field;
// a file that is not a result document is exit 2 too (merge exited 1). The shards it is
// made from merge.
func TestDocumentReadersRefuseBadFigures(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "result", "testdata", "v1")
	edit := func(name, out string, f func(doc map[string]any)) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		f(doc)
		b, _ = json.Marshal(doc)
		p := filepath.Join(dir, out)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s0 := edit("shard0.json", "s0.json", func(map[string]any) {})
	s1 := edit("shard1.json", "s1.json", func(map[string]any) {})
	neg := edit("shard1.json", "neg.json", func(d map[string]any) { d["messages"].(map[string]any)["published"] = -5 })
	p99 := edit("shard1.json", "p99.json", func(d map[string]any) { d["latency_us"].(map[string]any)["p99"] = -5 })
	notDoc := filepath.Join(dir, "notes.json")
	if err := os.WriteFile(notDoc, []byte(`{"hello": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runMQ(t, "merge", s0, s1, "--format", "json"); code != 0 {
		t.Fatalf("merge of the two shards: exit %d\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", s0, neg}, neg + ": messages.published: -5 is negative"},
		{[]string{"merge", s0, p99}, p99 + ": latency_us.p99: -5 is negative"},
		{[]string{"report", neg}, neg + ": messages.published: -5 is negative"},
		{[]string{"report", p99, "--html", filepath.Join(dir, "r.html")}, p99 + ": latency_us.p99: -5 is negative"},
		{[]string{"compare", s0, p99}, p99 + ": latency_us.p99: -5 is negative"},
		{[]string{"merge", s0, notDoc}, notDoc + `: schema "", want "mqblast.result/v1"`},
		{[]string{"merge", s0, filepath.Join(dir, "absent.json")}, "cannot read result document"},
	} {
		_, stderr, code := runMQ(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
		if strings.Contains(tc.want, ": -5 is negative") && !strings.Contains(stderr, "give the file that mqblast run --out or mqblast merge -o wrote") {
			t.Errorf("%v: no fix:\n%s", tc.args, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report --html wrote a page of a refused document")
	}
}
