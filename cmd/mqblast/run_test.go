package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqblast/mqblast/broker"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// mqblastBin builds the binary once: run starts itself again (embedded broker, workers), so
// these tests drive the real executable.
func mqblastBin(t *testing.T) string { return testbroker.Binary(t, ".") }

type cliRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func runBin(t *testing.T, args ...string) cliRun {
	t.Helper()
	return runBinEnvVars(t, nil, args...)
}

// runBinEnvVars runs mqblast with args, and env (NAME=value) added to this process's
// environment.
func runBinEnvVars(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	r, err := execBin(mqblastBin(t), env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// execBin runs the mqblast binary bin with args, and env (NAME=value) added to this
// process's environment; the error is one of starting it (a test's goroutine can call it).
func execBin(bin string, env []string, args ...string) (cliRun, error) {
	c := exec.Command(bin, args...)
	if env != nil {
		c.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	start := time.Now()
	err := c.Run()
	r := cliRun{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code, err = ee.ExitCode(), nil
	}
	return r, err
}

// interruptedRun runs mqblast with args and --out FILE, sends it SIGINT after d, fails the
// test unless it exits 130, and returns the partial result it wrote and its stderr.
func interruptedRun(t *testing.T, d time.Duration, args ...string) ([]byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	c := exec.Command(mqblastBin(t), append(args, "--out", out)...)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	_ = c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d\n%s", err, exitInterrupted, errOut.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no partial result: %v\n%s", err, errOut.String())
	}
	return b, errOut.String()
}

func decodeResult(t *testing.T, r cliRun) *result.Result {
	t.Helper()
	var res result.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not one result document: %v\nstdout: %.500s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return &res
}

// connectLog is a mochi hook that records when each client's CONNECT came.
type connectLog struct {
	mqtt.HookBase
	mu sync.Mutex
	at map[string]time.Time
}

func (h *connectLog) ID() string { return "connect-log" }

func (h *connectLog) Provides(b byte) bool { return b == mqtt.OnConnect }

func (h *connectLog) OnConnect(cl *mqtt.Client, _ packets.Packet) error {
	h.mu.Lock()
	h.at[cl.ID] = time.Now()
	h.mu.Unlock()
	return nil
}

// TestRunProcsTurns: two worker processes at 200 connections a second (under 1,000/s a lane:
// one lane) dial in turns, the first its 200 clients in the first second, the second its own
// in the next (what mochi saw of their CONNECTs), and hold together: every connection is
// held through the hold, which starts once the last worker has connected, and the merged
// intervals come every second while the first worker waits for the second.
func TestRunProcsTurns(t *testing.T) {
	t.Parallel()
	log := &connectLog{at: map[string]time.Time{}}
	_, addr := testbroker.StartMochi(t, nil, log)
	host, port, _ := strings.Cut(addr, ":")
	r := runBin(t, "conn", "-H", host, "-p", port, "-c", "400", "-R", "200", "--hold", "2s", "-k", "5",
		"--procs", "2", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	c := res.Connections
	if c.Established != 400 || c.Failed != 0 || c.Dropped != 0 || c.ConnectPhaseS < 1.9 {
		t.Fatalf("established %d, failed %d, dropped %d in a connect phase of %.2f s: want 400 in 2 s", c.Established, c.Failed, c.Dropped, c.ConnectPhaseS)
	}
	// Whose CONNECTs came in the first 0.8 s: the first worker's (clients 0-199) alone.
	log.mu.Lock()
	var first time.Time
	for _, at := range log.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	early := [2]int{}
	for id, at := range log.at {
		n, err := strconv.Atoi(strings.TrimLeftFunc(id, func(r rune) bool { return r < '0' || r > '9' }))
		if err != nil {
			t.Fatalf("client id %q has no index", id)
		}
		if at.Sub(first) < 800*time.Millisecond {
			early[min(n/200, 1)]++
		}
	}
	log.mu.Unlock()
	// The workers' turns count from each one's own start, which can lag the other's by
	// some 100 ms on a loaded host: a few of the second's may come early, not a third.
	if len(log.at) != 400 || early[0] < 100 || 4*early[1] > early[0] {
		t.Errorf("%d CONNECTs; in the first 0.8 s %d of clients 0-199 and %d of 200-399: want the first worker's turn alone",
			len(log.at), early[0], early[1])
	}
	var all int
	prev := 0.0
	for _, iv := range res.Intervals {
		if iv.TS-prev > 1.5 {
			t.Errorf("an interval line ends at %.2f s, %.2f s after the one before: the merged intervals skipped one", iv.TS, iv.TS-prev)
		}
		prev = iv.TS
		if iv.Established == 400 {
			all++
		}
	}
	if all < 2 {
		t.Errorf("%d interval(s) with all 400 established, want the 2 s hold's: a worker let go before the others held theirs\n%s", all, r.stderr)
	}
}

// TestRunProcs2Merged: two worker processes against Mosquitto give one result whose counts
// and histograms cover both.
func TestRunProcs2Merged(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	r := runBin(t, "conn", "-H", host, "-p", port, "-c", "2000", "-R", "4000", "--hold", "1500ms", "-k", "1",
		"--procs", "2", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	c := res.Connections
	if res.Host.Procs != 2 || c.Target != 2000 || c.Established != 2000 || c.Failed != 0 || c.Dropped != 0 {
		t.Fatalf("procs %d, target %d, established %d, failed %d, dropped %d", res.Host.Procs, c.Target, c.Established, c.Failed, c.Dropped)
	}
	// The host checks run before the run are in the result (host.checks, one per check).
	var checks []struct{ Name, Verdict string }
	if err := json.Unmarshal(res.Host.Checks, &checks); err != nil || len(checks) < 3 || checks[0].Name == "" {
		t.Errorf("host.checks %s: %v", res.Host.Checks, err)
	}
	if n := res.Histograms.ConnectLatency.Count(); n != 2000 {
		t.Errorf("merged connect-latency histogram holds %d values, want 2000", n)
	}
	if c.ConnectLatencyUS.Count != 2000 || c.ConnectLatencyUS.P99 < c.ConnectLatencyUS.P50 {
		t.Errorf("connect latency summary %+v", c.ConnectLatencyUS)
	}
	if c.Pings < 2000 {
		t.Errorf("pings %d: every connection should have pinged at keepalive 1 s over 1.5 s", c.Pings)
	}
	if len(res.Intervals) == 0 || res.Intervals[0].Connected == 0 {
		t.Errorf("intervals: %+v", res.Intervals)
	}
	if !strings.Contains(r.stderr, "2 worker processes") {
		t.Errorf("stderr does not announce the workers:\n%s", r.stderr)
	}
}

// TestRunRefusedByBroker: a broker demanding a password refuses; refusals are counted by
// reason and the run fails (exit 1) without counting them as established.
func TestRunRefusedByBroker(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": "secret"}})
	host, port, _ := strings.Cut(m.Addr, ":")
	r := runBin(t, "conn", "-H", host, "-p", port, "-c", "30", "-R", "1000", "--hold", "200ms", "-V", "5", "--format", "json")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitFailed, r.stderr)
	}
	res := decodeResult(t, r)
	if res.Connections.Established != 0 || res.Connections.Refused["not_authorized"] != 30 {
		t.Fatalf("established %d, refused %v; want 30 not_authorized", res.Connections.Established, res.Connections.Refused)
	}
	r = runBin(t, "conn", "-H", host, "-p", port, "-c", "30", "-R", "1000", "--hold", "200ms", "-u", "bench", "-P", "secret", "--format", "json")
	if r.code != 0 || decodeResult(t, r).Connections.Established != 30 {
		t.Fatalf("with the password: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunNothingListening: one line on stderr naming the cause, exit 1, within seconds.
func TestRunNothingListening(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	r := runBin(t, "conn", "-H", "127.0.0.1", "-p", fmt.Sprint(port), "-c", "20", "-R", "1000", "--hold", "5s")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitFailed, r.stderr)
	}
	if r.took > 5*time.Second {
		t.Errorf("took %v", r.took)
	}
	var errLines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "mqblast: ") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 || !strings.Contains(errLines[0], "connection refused") {
		t.Errorf("want one error line naming the refusal, got %q\n%s", errLines, r.stderr)
	}
}

// TestRunCapacityShortfall: more connections than one source address has ports for one
// destination is refused before any socket opens.
func TestRunCapacityShortfall(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	r := runBin(t, "conn", "-H", "127.0.0.1", "-p", fmt.Sprint(port), "-c", "70000", "--ifaddr", "127.0.0.2",
		"-R", "1000", "--no-check", "--procs", "1")
	if r.code != exitNotReady {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitNotReady, r.stderr)
	}
	if !strings.Contains(r.stderr, "source addresses, have 1") || strings.Contains(r.stderr, "established") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestRunBuiltinOnEmbeddedBroker: a built-in scenario without a server runs against the
// embedded broker started in a child process.
func TestRunBuiltinOnEmbeddedBroker(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := runBin(t, "run", "quick-conn-100", "--duration", "1s", "--set", "parameters.connection_rate=2000", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "embedded broker") || !strings.Contains(r.stdout, "100 of 100 established") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil || res.Schema != result.Schema || res.Connections.Established != 100 {
		t.Fatalf("result file: %v %+v", err, res.Connections)
	}
}

// TestRunInterrupted: SIGINT during the hold disconnects, writes the partial result, exit 130.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	b, _ := interruptedRun(t, 1500*time.Millisecond, "conn", "-H", host, "-p", port, "-c", "200", "-R", "1000", "--hold", "60s")
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil || !res.Interrupted || res.Connections.Established != 200 {
		t.Fatalf("partial result: %v interrupted=%v established=%d", err, res.Interrupted, res.Connections.Established)
	}
}

// TestRunProcsInterruptedInTurn: SIGINT while the first of two workers waits at the hold
// gate for the second (one lane at 100/s: the first dials in 0-2 s, the second in 2-4 s)
// ends both at once with a partial result of what each connected, exit 130, and no error
// for the gate.
func TestRunProcsInterruptedInTurn(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	began := time.Now()
	b, stderr := interruptedRun(t, 3*time.Second, "conn", "-H", host, "-p", port, "-c", "400", "-R", "100", "--hold", "60s",
		"-k", "5", "--procs", "2")
	took := time.Since(began)
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil || !res.Interrupted {
		t.Fatalf("partial result: %v interrupted=%v\n%s", err, res.Interrupted, stderr)
	}
	if n := res.Connections.Established; n < 230 || n > 350 || took > 15*time.Second {
		t.Errorf("%d established, ended %v after the start: want the first worker's 200 and some of the second's, at once", n, took)
	}
	for _, e := range res.Errors {
		if e.Kind == "start_gate" {
			t.Errorf("an interrupt counted as the gate's error: %+v", e)
		}
	}
}

// TestRunMessagingProcs2: a fan-out split over two worker processes (the publisher in one,
// subscribers in both) starts publishing only when both have subscribed, and the merged
// result accounts for every copy.
func TestRunMessagingProcs2(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	r := runBin(t, "run", "quick-fanout-1-100", "--broker", m.Addr, "--procs", "2", "--duration", "2s",
		"--set", "parameters.warmup_sec=500ms", "--set", "publishers.qos=1", "--set", "subscribers.qos=1", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	msg := res.Messages
	if res.Host.Procs != 2 || msg.Subscribed != 100 || msg.Expected == 0 || msg.Received != msg.Expected || msg.Lost != 0 {
		t.Fatalf("procs %d, messages %+v", res.Host.Procs, msg)
	}
	if res.LatencyUS.Count == 0 || res.Histograms.Latency.Count() != res.LatencyUS.Count {
		t.Errorf("latency %+v", res.LatencyUS)
	}
}

// TestMergeShards runs two shards of one scenario as separate commands (as on two hosts)
// and merges their result files: counts add up and the histogram holds every value.
func TestMergeShards(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	var files []string
	for i := 0; i < 2; i++ {
		f := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		r := runBin(t, "run", "quick-conn-100", "--broker", m.Addr, "--shard", fmt.Sprintf("%d/2", i), "--run-id", "merge-shards",
			"--duration", "500ms", "--set", "parameters.connection_rate=1000", "--out", f)
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, r.code, r.stderr)
		}
		files = append(files, f)
	}
	out := filepath.Join(dir, "merged.json")
	r := runBin(t, append([]string{"merge", "-o", out, "--format", "json"}, files...)...)
	if r.code != 0 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	if res.Connections.Target != 100 || res.Connections.Established != 100 || res.Host.Procs != 2 ||
		res.Histograms.ConnectLatency.Count() != 100 || res.Connections.ConnectLatencyUS.Count != 100 {
		t.Fatalf("merged %+v procs %d", res.Connections, res.Host.Procs)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
	if r := runBin(t, "merge", filepath.Join(dir, "nope.json")); r.code != exitUsage || !strings.Contains(r.stderr, "cannot read result") {
		t.Errorf("missing file: exit %d %s", r.code, r.stderr)
	}
}

// TestPubSubVerbs: mqblast sub measures what mqblast pub publishes (a separate process), with
// emqtt-bench flags and topic placeholders.
func TestPubSubVerbs(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	sub := exec.Command(mqblastBin(t), "sub", "-H", host, "-p", port, "-c", "4", "-t", "bench/#", "-q", "1",
		"--duration", "4s", "--format", "json")
	var subOut, subErr bytes.Buffer
	sub.Stdout, sub.Stderr = &subOut, &subErr
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(800 * time.Millisecond) // connected and subscribed
	pub := runBin(t, "pub", "-H", host, "-p", port, "-c", "5", "-t", "bench/%i/%rand_3", "-I", "20", "-q", "1",
		"-s", "32", "--duration", "1s", "--format", "json")
	if pub.code != 0 {
		t.Fatalf("pub: exit %d\n%s", pub.code, pub.stderr)
	}
	if err := sub.Wait(); err != nil {
		t.Fatalf("sub: %v\n%s", err, subErr.String())
	}
	p := decodeResult(t, pub)
	s := decodeResult(t, cliRun{stdout: subOut.String(), stderr: subErr.String()})
	if p.Messages.Published < 240 || p.Messages.Acked != p.Messages.Published {
		t.Fatalf("pub messages %+v", p.Messages)
	}
	if s.Messages.Received != 4*p.Messages.Published || s.Messages.Unmeasured != 0 || s.LatencyUS.Count == 0 || s.LatencyRaw.Count == 0 {
		t.Fatalf("sub got %+v for %d published; latency %+v", s.Messages, p.Messages.Published, s.LatencyUS)
	}
	if r := runBin(t, "pub", "-c", "1"); r.code != exitUsage || !strings.Contains(r.stderr, "--topic") {
		t.Errorf("pub without a topic: exit %d %s", r.code, r.stderr)
	}
}

// TestRunRefusedByHostChecks: a run bound to fail on this host (a million connections in
// one process) is refused before any socket opens, with the findings; the fix names --procs.
func TestRunRefusedByHostChecks(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	r := runBin(t, "run", "singlenode-conn-tcp-1M-5K", "--procs", "1", "--broker", fmt.Sprintf("127.0.0.1:%d", port))
	if r.code != exitNotReady {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitNotReady, r.stderr)
	}
	for _, want := range []string{"not ready", "RLIMIT_NOFILE", "--procs"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "connecting") || r.took > 10*time.Second {
		t.Errorf("it dialed or took %v", r.took)
	}
}

// TestConnIPv6: -H takes an IPv6 address bare or bracketed, and --ifaddr binds an IPv6
// source; the embedded broker listens on ::1.
func TestConnIPv6(t *testing.T) {
	t.Parallel()
	b, err := broker.Start("[::1]:0", io.Discard)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer b.Close() //nolint:errcheck
	_, port, _ := net.SplitHostPort(b.Addr())
	for _, args := range [][]string{{"-H", "::1"}, {"-H", "[::1]", "--ifaddr", "::1"}} {
		r := runBin(t, append([]string{"conn", "-p", port, "-c", "20", "-R", "1000", "--hold", "100ms",
			"--no-check", "--format", "json"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
		var res struct {
			Connections struct{ Established int } `json:"connections"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Connections.Established != 20 {
			t.Errorf("%v: established %d of 20 (%v)\n%s", args, res.Connections.Established, err, r.stderr)
		}
	}
}
