package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/sink"
)

// TestIfaddrFamilyRefused: conn's --ifaddr of another family than the broker's is refused
// before any socket opens, naming the flag (the run's refusals of such source addresses:
// run's TestBindInterfaceBrokerFamily).
func TestIfaddrFamilyRefused(t *testing.T) {
	t.Parallel()
	r := runBin(t, "conn", "-H", "127.0.0.1", "-p", "1", "-c", "5", "--ifaddr", "::1", "--no-check", "--procs", "1")
	if want := "--ifaddr ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4"; r.code != exitUsage || !strings.Contains(r.stderr, want) ||
		strings.Contains(r.stderr, "connecting") {
		t.Errorf("exit %d, want %d with %q before connecting:\n%s", r.code, exitUsage, want, r.stderr)
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

// TestLimitRateBounds: limit's rates against what its publishers can send (1,000,000 msg/s
// each). The default --max-rate (1000 × --start-rate) stays within it, so a start rate the
// publishers can send is taken without --max-rate; a start rate or a --max-rate beyond it
// is refused (exit 2) naming the flag, in plain digits.
func TestLimitRateBounds(t *testing.T) {
	t.Parallel()
	lim := []string{"limit", "quick-p2p-100", "--set", "publishers.client_count=10", "--set", "subscribers.client_count=10",
		"--broker", "127.0.0.1:1", "--no-check", "--slo", "messages.lost==0"}
	stderr, code := runRefused(t, nil, append(lim, "--start-rate", "80000")...)
	if code == exitUsage || strings.Contains(stderr, "max-rate") || !strings.Contains(stderr, "connecting") {
		t.Errorf("--start-rate 80000 of 10 publishers without --max-rate: exit %d, want it taken (it connects)\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--start-rate", "20000000"}, "--start-rate 20000000 is 2,000,000 per publisher, above the most one publisher sends (1,000,000)"},
		{[]string{"--start-rate", "80000", "--max-rate", "80000000"}, "--max-rate 80000000 is 8,000,000 per publisher, above the most one publisher sends (1,000,000)"},
		{[]string{"--start-rate", "5e6", "--max-rate", "1e6"}, "--start-rate 5000000 is above --max-rate 1000000"},
		{[]string{"--start-rate", "-1e7"}, "--start-rate -10000000: want a rate above 0"},
	} {
		stderr, code := runRefused(t, nil, append(lim, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "e+") || strings.Contains(stderr, "connecting") {
			t.Errorf("%v: exit %d, want %d with %q before connecting, no e-notation:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}

// TestLimitFind: --find alone names the search whatever --vary's default says; the SLO is
// checked against its kind, --find and --vary that disagree are refused, and --vary
// parameters.connection_rate is --find connect-rate — each before any socket (exit 2).
func TestLimitFind(t *testing.T) {
	t.Parallel()
	lim := []string{"limit", "quick-conn-100", "--set", "parameters.connection_rate=100", "--broker", "127.0.0.1:1", "--no-check"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--find", "connections", "--slo", "latency_us.p99<5000"}, "--slo latency_us.p99<5000: a connections search has no messages"},
		{[]string{"--find", "connect-rate", "--slo", "messages.lost==0"}, "a connect-rate search has no messages"},
		{[]string{"--vary", "parameters.connection_rate", "--slo", "messages.lost==0"}, "a connect-rate search has no messages"},
		{[]string{"--find", "connections", "--vary", "parameters.connection_rate", "--slo", "connections.failed==0"},
			"--find connections and --vary parameters.connection_rate say different things"},
		{[]string{"--find", "connections", "--slo", "connections.failed==0", "--max-rate", "5000"}, "--max-rate 5000 connections: the scenario has 100 clients"},
	} {
		stderr, code := runRefused(t, nil, append(lim, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "connecting") {
			t.Errorf("%v: exit %d, want %d with %q before connecting:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}

// TestSustainRefused: a sustain too short to judge a drift, or one that does not go with the
// run, is refused (exit 2) naming the flag, before any socket.
func TestSustainRefused(t *testing.T) {
	t.Parallel()
	run := []string{"run", "quick-p2p-100", "--broker", "127.0.0.1:1", "--no-check"}
	lim := []string{"limit", "quick-p2p-100", "--broker", "127.0.0.1:1", "--no-check", "--slo", "messages.lost==0"}
	conn := []string{"limit", "quick-conn-100", "--broker", "127.0.0.1:1", "--no-check", "--slo", "connections.failed==0",
		"--vary", "parameters.connection_rate"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(run, "--sustain", "1s"), "--sustain 1s is shorter than two intervals (2s)"},
		{append(lim, "--sustain", "1s"), "--sustain 1s is shorter than two intervals (2s)"},
		{append(run, "--sustain", "1m", "--sustain-window", "45s"), "--sustain 1m0s is shorter than two windows (--sustain-window 45s)"},
		{append(run, "--sustain-window", "10s"), "--sustain-window needs --sustain DURATION"},
		{append(run, "--sustain", "1m", "--duration", "30s"), "--duration and --sustain: a soak measures for its --sustain"},
		{append(run, "--sustain", "1m", "--stages", "30s:10"), "--stages and --sustain: a soak holds one rate"},
		{append(run, "--sustain", "2h", "--sustain-window", "1s"), "is 7200 windows, more than 1440: give a longer --sustain-window"},
		{append(conn, "--sustain", "1m"), "holding a connect rate would dial rate × sustain new clients"},
		{[]string{"limit", "quick-conn-100", "--broker", "127.0.0.1:1", "--no-check", "--slo", "connections.failed==0", "--find", "connections",
			"--sustain", "1m"}, "a held population's soak is a Connections run's"},
	} {
		stderr, code := runRefused(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "connecting") {
			t.Errorf("%v: exit %d, want %d with %q before connecting:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}
