package run

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// leakingMosquitto is a Mosquitto made to leak: it queues without bound (max_queued_messages
// 0) for a persistent session that subscribed to every topic at QoS 1 and went away, so it
// keeps every message the run publishes.
func leakingMosquitto(t *testing.T) *testbroker.Mosquitto {
	t.Helper()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"max_queued_messages 0"}})
	host, port, _ := strings.Cut(m.Addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// -W 1: it connects, subscribes, and leaves after a second, its session kept (-c).
	out, err := exec.CommandContext(ctx, "mosquitto_sub", "-h", host, "-p", port, "-c", "-i", "soak-ghost", "-q", "1", "-t", "#", "-W", "1").CombinedOutput()
	if ctx.Err() != nil || (err != nil && !strings.Contains(err.Error(), "exit status 27")) {
		t.Fatalf("mosquitto_sub: %v\n%s", err, out)
	}
	return m
}

// soakSpec is a fixed-rate soak of quick-p2p-100 at 1,000 msg/s against m for sustain, in
// windows of window, the broker watched by its pid.
func soakSpec(m *testbroker.Mosquitto, sustain, window time.Duration) *Spec {
	sp := quick("quick-p2p-100", m.Addr, "parameters.publish_rate=10", "parameters.warmup_sec=1")
	sp.NoCheck, sp.Sustain, sp.SustainWindow = true, spec.Duration(sustain), spec.Duration(window)
	sp.Watch.BrokerPID = m.Cmd.Process.Pid
	return sp
}

// TestSoakLeak: a fixed-rate soak of 20 s in 4 s windows against a Mosquitto that keeps every
// message: the soak's windows cover the measure phase, the broker's RSS climbs, its slope is
// above the memory rule's and the verdict says degraded with it; the summary says it in the
// same words.
func TestSoakLeak(t *testing.T) {
	testbroker.Need(t)
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Skip("no mosquitto_sub (mosquitto-clients)")
	}
	t.Parallel()
	m := leakingMosquitto(t)
	r := doOK(t, soakSpec(m, 20*time.Second, 4*time.Second))
	s := r.res.Soak
	if s == nil {
		t.Fatalf("no soak in the result\n%s", r.stderr)
	}
	if len(s.Windows) != 5 || s.WindowS != 4 || s.BrokerRSS != "process" {
		t.Fatalf("%d windows of %v s, broker RSS from %q: want 5 of 4 s, from the process", len(s.Windows), s.WindowS, s.BrokerRSS)
	}
	first, last := s.Windows[0].BrokerRSSBytes, s.Windows[len(s.Windows)-1].BrokerRSSBytes
	if s.Held || s.BrokerRSSSlopeBytesPerH < result.SoakRSSSlopeBytesPerH || last < first+4<<20 ||
		!strings.Contains(s.Verdict, "broker RSS +") || !strings.Contains(strings.Join(s.Reasons, " "), "memory: the broker's RSS grows") {
		t.Errorf("verdict %q, RSS %d → %d bytes, slope %.0f bytes/h, reasons %q: want degraded by memory", s.Verdict, first, last,
			s.BrokerRSSSlopeBytesPerH, s.Reasons)
	}
	if !strings.Contains(r.stdout, "SOAK") || !strings.Contains(r.stdout, s.Verdict) || !strings.Contains(r.stdout, result.SoakRule) {
		t.Errorf("the summary does not give the verdict and its rule:\n%s", r.stdout)
	}
	t.Logf("%s; RSS %.1f → %.1f MiB", s.Verdict, float64(first)/(1<<20), float64(last)/(1<<20))
}

// TestSoakSteady: the same soak against a Mosquitto that keeps nothing says held.
func TestSoakSteady(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	r := doOK(t, soakSpec(m, 20*time.Second, 4*time.Second))
	s := r.res.Soak
	if s == nil || len(s.Windows) != 5 {
		t.Fatalf("soak %+v, want 5 windows\n%s", s, r.stderr)
	}
	if !s.Held || s.Verdict != "held" {
		tm.Errorf("verdict %q, reasons %q: want held", s.Verdict, s.Reasons)
	}
	t.Logf("%s; RSS slope %s", s.Verdict, result.MiBPerHour(s.BrokerRSSSlopeBytesPerH))
}

// TestLimitSoak: a search that holds its answer (--sustain) against the leaking Mosquitto:
// the hold is at the sustained rate, after the last step, in its windows, and says degraded
// by memory.
func TestLimitSoak(t *testing.T) {
	testbroker.Need(t)
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Skip("no mosquitto_sub (mosquitto-clients)")
	}
	t.Parallel()
	m := leakingMosquitto(t)
	sp := quick("quick-p2p-100", m.Addr)
	sp.Watch.BrokerPID = m.Cmd.Process.Pid
	sp.Sustain, sp.SustainWindow = spec.Duration(16*time.Second), spec.Duration(4*time.Second)
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<2000000"}, StartRate: 500, MaxRate: 1000, MaxDuration: spec.Duration(60 * time.Second)}
	res, output := limitRun(t, sp)
	s, l := res.Soak, res.Limit
	if s == nil {
		t.Fatalf("no soak in the result\n%s", output)
	}
	steps := l.Steps
	lastStep := steps[len(steps)-1]
	if !l.Found || s.Rate != l.Sustained || len(s.Windows) != 4 || s.FromS < lastStep.ToS || math.Abs(s.ToS-s.FromS-16) > 1e-6 {
		t.Fatalf("limit %v sustained (found %v), soak at %v msg/s over %v–%v s in %d windows, after the last step's end %v: "+
			"want the answer held after the search, 4 windows\n%s", l.Sustained, l.Found, s.Rate, s.FromS, s.ToS, len(s.Windows), lastStep.ToS, output)
	}
	var got int64
	for _, w := range s.Windows {
		got += w.Received
	}
	if want := int64(0.9 * s.Rate * (s.ToS - s.FromS)); got < want {
		t.Errorf("%d copies arrived in the hold, want at least %d (the sustained rate held)", got, want)
	}
	if s.Held || !strings.Contains(s.Verdict, "broker RSS +") {
		t.Errorf("verdict %q, reasons %q: want degraded by memory", s.Verdict, s.Reasons)
	}
	if !strings.Contains(output, "soak: window 4:") || !strings.Contains(output, "soak: "+s.Verdict) {
		t.Errorf("no window lines or verdict in the progress:\n%s", output)
	}
	t.Logf("%s; sustained %v msg/s", s.Verdict, l.Sustained)
}

// TestSoakConnections: a Connections run's soak is the time its clients are held, after
// the connect phase, in its windows, each logged as it ends.
func TestSoakConnections(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-conn-100", m.Addr)
	sp.NoCheck, sp.Sustain, sp.SustainWindow = true, spec.Duration(6*time.Second), spec.Duration(2*time.Second)
	sp.Watch.BrokerPID = m.Cmd.Process.Pid
	r := doOK(t, sp)
	s := r.res.Soak
	if s == nil || len(s.Windows) != 3 || s.FromS < r.res.Connections.ConnectPhaseS || s.ToS-s.FromS < 5 || s.Windows[0].BrokerRSSBytes == 0 {
		t.Fatalf("soak %+v, want 3 windows after the connect phase (%v s), the broker's RSS in them\n%s", s, r.res.Connections.ConnectPhaseS, r.stderr)
	}
	if w := s.Windows[1]; !strings.Contains(r.stderr, fmt.Sprintf("soak: window 2: p99 -, lost 0, refusals %d, broker RSS ", w.Refusals())) ||
		!strings.Contains(r.stderr, "soak: window 3:") {
		t.Errorf("the hold's windows were not logged as they ended:\n%s", r.stderr)
	}
}

// TestLimitSoakInterrupted: Ctrl-C during the hold leaves the search's answer and its end as
// they were (max_rate), and gives the soak of the hold so far; while it held, the live
// metrics had the windows ended so far.
func TestLimitSoakInterrupted(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-p2p-100", m.Addr)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	sp.NoCheck, sp.Outputs.Metrics = true, addr
	sp.Sustain, sp.SustainWindow = spec.Duration(time.Minute), spec.Duration(2*time.Second)
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<2000000"}, StartRate: 500, MaxRate: 1000, MaxDuration: spec.Duration(60 * time.Second),
		Step: spec.Duration(2 * time.Second), Settle: spec.Duration(time.Second), Pause: spec.Duration(time.Second)}
	testbroker.Binary(t, "../cmd/mqblast")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := goSpec(ctx, t, sp)
	for !strings.Contains(g.progress(), "soak: window 3:") && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	p, ok := scrapeMetrics("http://" + addr + "/metrics")
	cancel() // Ctrl-C
	r := g.wait()
	l, s := r.res.Limit, r.res.Soak
	if l == nil || s == nil {
		t.Fatalf("limit %v, soak %v: want both\n%s", l, s, r.stderr)
	}
	if l.Ended != "max_rate" || !l.Found || l.Sustained != 1000 {
		t.Errorf("the search ended %q, sustained %v: want max_rate, 1000 (the hold's interrupt is not the search's)", l.Ended, l.Sustained)
	}
	if n := len(s.Windows); n < 3 || n > 10 || s.ToS-s.FromS > 30 {
		t.Errorf("%d windows over %.1f s: want the hold until the interrupt", n, s.ToS-s.FromS)
	}
	if n := p.byName["mqblast_soak_windows"]; !ok || n < 3 || n > 4 || p.byName["mqblast_run_finished"] != 0 ||
		p.byName["mqblast_soak_window_latency_p99_seconds"] != float64(s.Windows[int(n)-1].LatencyUS.P99)/1e6 {
		t.Errorf("metrics during the hold (%v): %v windows, p99 %v s: want the third window's (%d µs), the run going on", ok, n,
			p.byName["mqblast_soak_window_latency_p99_seconds"], s.Windows[2].LatencyUS.P99)
	}
}

// TestSoakLive: a fixed-rate soak (7 s in 2 s windows: the last one 1 s) tells each window
// as it ends, before the run's end: its progress line (as a search's hold does) and the
// live metrics' soak series; the lines' figures and windows are the result's.
func TestSoakLive(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := soakSpec(m, 7*time.Second, 2*time.Second)
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	sp.Outputs.Metrics = addr
	testbroker.Binary(t, "../cmd/mqblast")
	g := goSpec(context.Background(), t, sp)
	exited := make(chan ran, 1)
	go func() { exited <- g.wait() }()
	var r ran
	var during []promText // scrapes with a soak window and the run not finished
	linesBefore := ""
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case r = <-exited:
			break wait
		case <-tick.C:
			if p, ok := scrapeMetrics("http://" + addr + "/metrics"); ok && p.byName["mqblast_run_finished"] == 0 && p.byName["mqblast_soak_windows"] > 0 {
				during = append(during, p)
			}
			linesBefore = g.progress()
		}
	}
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	s := r.res.Soak
	if s == nil || len(s.Windows) != 4 {
		t.Fatalf("soak %+v, want 4 windows\n%s", s, r.stderr)
	}
	for k := 1; k <= 3; k++ {
		w := &s.Windows[k-1]
		line := fmt.Sprintf("soak: window %d: p99 %s, lost %d, refusals %d, broker RSS ", k, result.Micros(w.LatencyUS.P99), w.Lost, w.Refusals())
		if !strings.Contains(linesBefore, line) {
			t.Errorf("window %d: no line %q in the progress before the run ended:\n%s", k, line, linesBefore)
		}
	}
	if i := strings.Index(r.stderr, "soak: window 4:"); i < 0 || i > strings.Index(r.stderr, "soak: "+s.Verdict) ||
		strings.Contains(r.stderr, "soak: window 5:") {
		t.Errorf("want the last window's line (the fourth) before the verdict:\n%s", r.stderr)
	}
	if len(during) == 0 {
		t.Fatalf("no scrape saw a soak window before the run finished\n%s", r.stderr)
	}
	seen := map[float64]bool{}
	for _, p := range during {
		n := p.byName["mqblast_soak_windows"]
		seen[n] = true
		if n < 1 || n > 4 {
			t.Fatalf("mqblast_soak_windows %v", n)
		}
		w := &s.Windows[int(n)-1]
		if got := p.byName["mqblast_soak_window_latency_p99_seconds"]; got != float64(w.LatencyUS.P99)/1e6 && int(n) < 4 {
			t.Errorf("window %v: p99 %v s live, %v µs in the result", n, got, w.LatencyUS.P99)
		}
		if p.byName["mqblast_soak_window_broker_rss_bytes"] <= 0 || p.samples["mqblast_soak_held"] != 1 && p.samples["mqblast_soak_held"] != 0 {
			t.Errorf("window %v: broker RSS %v, held %v", n, p.byName["mqblast_soak_window_broker_rss_bytes"], p.samples["mqblast_soak_held"])
		}
	}
	if len(seen) < 2 {
		t.Errorf("the scrapes saw windows %v: want the count rising while the run went on", seen)
	}
}
