package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mqblast/mqblast/broker"
	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

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
	sp := quick("quick-conn-100", addr, sets("publishers.client_count", 400, "parameters.connection_rate", 200,
		"parameters.duration_sec", 2, "parameters.keep_alive_sec", 5)...)
	sp.Procs = 2
	r := doOK(t, sp)
	res := r.res
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
	sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", 2000, "parameters.connection_rate", 4000,
		"parameters.duration_sec", 1.5, "parameters.keep_alive_sec", 1)...)
	sp.Procs = 2
	r := doOK(t, sp)
	res := r.res
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
// reason and the run fails (an error without a kind: exit 1) without counting them as
// established.
func TestRunRefusedByBroker(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": "secret"}})
	conn := sets("publishers.client_count", 30, "parameters.connection_rate", 1000, "parameters.duration_sec", 0.2)
	r := doSpec(t, quick("quick-conn-100", m.Addr, append(conn, "publishers.protocol_version=5")...))
	if !r.failed() || r.res == nil {
		t.Fatalf("%v, want a failed run with its result\n%s", r.err, r.stderr)
	}
	if r.res.Connections.Established != 0 || r.res.Connections.Refused["not_authorized"] != 30 {
		t.Fatalf("established %d, refused %v; want 30 not_authorized", r.res.Connections.Established, r.res.Connections.Refused)
	}
	r = doSpec(t, quick("quick-conn-100", m.Addr, append(conn, "server.username=bench", "server.password=secret")...))
	if r.err != nil || r.res.Connections.Established != 30 {
		t.Fatalf("with the password: %v\n%s", r.err, r.stderr)
	}
}

// TestRunNothingListening: the run fails (exit 1) within seconds with one line naming the
// cause.
func TestRunNothingListening(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	r := doSpec(t, quick("quick-conn-100", fmt.Sprintf("127.0.0.1:%d", port), sets("publishers.client_count", 20,
		"parameters.connection_rate", 1000, "parameters.duration_sec", 5)...))
	if !r.failed() {
		t.Fatalf("%v, want a failed run\n%s", r.err, r.stderr)
	}
	if r.took > 5*time.Second {
		t.Errorf("took %v", r.took)
	}
	if msg := r.err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "connection refused") {
		t.Errorf("want one error line naming the refusal, got %q\n%s", msg, r.stderr)
	}
}

// TestRunCapacityShortfall: more connections than one source address has ports for one
// destination is refused before any socket opens.
func TestRunCapacityShortfall(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	sp := quick("quick-conn-100", fmt.Sprintf("127.0.0.1:%d", port), sets("publishers.client_count", 70000,
		"parameters.connection_rate", 1000)...)
	sp.Bind, sp.NoCheck, sp.Procs = []string{"127.0.0.2"}, true, 1
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrNotReady) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrNotReady, r.stderr)
	}
	if !strings.Contains(r.err.Error(), "source addresses, have 1") || strings.Contains(r.stderr, "established") {
		t.Errorf("%v\nstderr:\n%s", r.err, r.stderr)
	}
}

// TestRunBuiltinOnEmbeddedBroker: a built-in scenario without a server runs against the
// embedded broker started in a child process.
func TestRunBuiltinOnEmbeddedBroker(t *testing.T) {
	t.Parallel()
	out := t.TempDir() + "/r.json"
	sp := quick("quick-conn-100", "", "parameters.connection_rate=2000")
	sp.Duration, sp.Outputs.Out = spec.Duration(time.Second), out
	r := doOK(t, sp)
	if !strings.Contains(r.stderr, "embedded broker") || !strings.Contains(r.stdout, "100 of 100 established") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	res, err := result.ReadFile(out)
	if err != nil || res.Schema != result.Schema || res.Connections.Established != 100 {
		t.Fatalf("result file: %v %+v", err, res)
	}
}

// TestRunProcsInterruptedInTurn: an interrupt while the first of two workers waits at the
// hold gate for the second (one lane at 100/s: the first dials in 0-2 s, the second in
// 2-4 s) ends both at once with a partial result of what each connected, interrupted, and
// no error for the gate.
func TestRunProcsInterruptedInTurn(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", 400, "parameters.connection_rate", 100,
		"parameters.duration_sec", 60, "parameters.keep_alive_sec", 5)...)
	sp.Procs, sp.Outputs.Out = 2, t.TempDir()+"/r.json"
	r := doSpecCtx(interruptAfter(t, 3*time.Second), t, sp)
	if !errors.Is(r.err, fail.ErrInterrupted) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrInterrupted, r.stderr)
	}
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil || !res.Interrupted {
		t.Fatalf("partial result: %v interrupted=%v\n%s", err, res != nil && res.Interrupted, r.stderr)
	}
	if n := res.Connections.Established; n < 230 || n > 350 || r.took > 15*time.Second {
		t.Errorf("%d established, ended %v after the start: want the first worker's 200 and some of the second's, at once", n, r.took)
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
	sp := quick("quick-fanout-1-100", m.Addr, "parameters.warmup_sec=500ms", "publishers.qos=1", "subscribers.qos=1")
	sp.Procs, sp.Duration = 2, spec.Duration(2*time.Second)
	r := doOK(t, sp)
	res := r.res
	msg := res.Messages
	if res.Host.Procs != 2 || msg.Subscribed != 100 || msg.Expected == 0 || msg.Received != msg.Expected || msg.Lost != 0 {
		t.Fatalf("procs %d, messages %+v", res.Host.Procs, msg)
	}
	if res.LatencyUS.Count == 0 || res.Histograms.Latency.Count() != res.LatencyUS.Count {
		t.Errorf("latency %+v", res.LatencyUS)
	}
}

// TestPubSubRuns: a sub run measures what a pub run beside it publishes, on topics of
// pub's placeholders (the client's index, %rand_N drawn per message).
func TestPubSubRuns(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sub := goSpec(context.Background(), t, subSpec(m.Addr, "bench/#", sets("subscribers.client_count", 4, "subscribers.qos", 1,
		"parameters.duration_sec", 4)...))
	time.Sleep(800 * time.Millisecond) // connected and subscribed
	pub := doSpec(t, pubSpec(m.Addr, "bench/$clientindex/%rand_3", sets("publishers.client_count", 5, "parameters.publish_rate", 50,
		"publishers.qos", 1, "parameters.payload_size", 32, "parameters.duration_sec", 1)...))
	if pub.err != nil {
		t.Fatalf("pub: %v\n%s", pub.err, pub.stderr)
	}
	s := sub.wait()
	if s.err != nil {
		t.Fatalf("sub: %v\n%s", s.err, s.stderr)
	}
	p := pub.res
	if p.Messages.Published < 240 || p.Messages.Acked != p.Messages.Published {
		t.Fatalf("pub messages %+v", p.Messages)
	}
	if got := s.res.Messages; got.Received != 4*p.Messages.Published || got.Unmeasured != 0 || s.res.LatencyUS.Count == 0 || s.res.LatencyRaw.Count == 0 {
		t.Fatalf("sub got %+v for %d published; latency %+v", got, p.Messages.Published, s.res.LatencyUS)
	}
}

// TestRunRefusedByHostChecks: a run bound to fail on this host (a million connections in
// one process) is refused before any socket opens, with the findings; the fix names --procs.
func TestRunRefusedByHostChecks(t *testing.T) {
	t.Parallel()
	port := testbroker.FreePort(t, "127.0.0.1")
	sp := quick("singlenode-conn-tcp-1M-5K", fmt.Sprintf("127.0.0.1:%d", port))
	sp.Procs = 1
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrNotReady) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrNotReady, r.stderr)
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

// TestRunIPv6: a broker at an IPv6 address, with and without an IPv6 source address; the
// embedded broker listens on ::1.
func TestRunIPv6(t *testing.T) {
	t.Parallel()
	b, err := broker.Start("[::1]:0", io.Discard)
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer b.Close() //nolint:errcheck
	_, port, _ := net.SplitHostPort(b.Addr())
	for _, bind := range [][]string{nil, {"::1"}} {
		sp := quick("quick-conn-100", net.JoinHostPort("::1", port), sets("publishers.client_count", 20,
			"parameters.connection_rate", 1000, "parameters.duration_sec", 0.1)...)
		sp.Bind, sp.NoCheck = bind, true
		r := doSpec(t, sp)
		if r.err != nil {
			t.Fatalf("bind %v: %v\n%s", bind, r.err, r.stderr)
		}
		if n := r.res.Connections.Established; n != 20 {
			t.Errorf("bind %v: established %d of 20\n%s", bind, n, r.stderr)
		}
	}
}
