package run

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/tuning"
)

// connectSLO is a connect-rate search's SLO (a step's paths) with a p99 bound of p99US, and
// runThresholds the same bounds as a fixed-rate Connections run's thresholds (the
// result's paths), with the search's own rule that a step keeps 95 % of its rate.
func connectSLO(p99US int) []string {
	return []string{fmt.Sprintf("connect_latency_us.p99<%d", p99US), "connections.failed==0"}
}

func runThresholds(p99US int, rate float64) []string {
	return []string{fmt.Sprintf("connections.connect_latency_us.p99<%d", p99US), "connections.failed==0",
		fmt.Sprintf("connections.connect_rate_per_s>=%.0f", math.Floor(0.95*rate))}
}

// fixedConnectRun runs quick-conn-100 changed by sets against broker as a plain run: rate
// connections a second for 8 s (rate × 8 clients), held 1 s, judged by
// runThresholds(p99US, rate).
func fixedConnectRun(t *testing.T, broker string, p99US int, rate float64, sets ...string) ran {
	t.Helper()
	sp := quick("quick-conn-100", broker, append([]string{fmt.Sprintf("publishers.client_count=%.0f", 8*rate),
		fmt.Sprintf("parameters.connection_rate=%.0f", rate), "parameters.duration_sec=1"}, sets...)...)
	sp.NoCheck, sp.Thresholds = true, runThresholds(p99US, rate)
	r := doSpec(t, sp)
	if r.err != nil && !errors.Is(r.err, fail.ErrThreshold) || r.res == nil {
		t.Fatalf("a fixed run at %.0f connections/s: %v\n%s", rate, r.err, r.stderr)
	}
	c := r.res.Connections
	t.Logf("fixed run at %.0f/s: %d established at %.0f/s, connect p99 %d µs, failed %d: %v", rate, c.Established,
		c.ConnectRatePerS, c.ConnectLatencyUS.P99, c.Failed, r.err)
	return r
}

// waitBrokerIdle waits (at most 30 s) until process pid used under 5 % of a core over half
// a second: a broker still working off what the run before left.
func waitBrokerIdle(t *testing.T, pid int) {
	t.Helper()
	start := time.Now()
	for end := start.Add(30 * time.Second); time.Now().Before(end); {
		a, err := tuning.ReadProcess(pid)
		time.Sleep(500 * time.Millisecond)
		b, err2 := tuning.ReadProcess(pid)
		if err != nil || err2 != nil {
			t.Fatalf("broker pid %d: %v %v", pid, err, err2)
		}
		if busy := (b.CPU - a.CPU).Seconds() / 0.5; busy < 0.05 {
			t.Logf("broker pid %d idle after %.1f s", pid, time.Since(start).Seconds())
			return
		}
	}
	t.Logf("broker pid %d still busy after 30 s", pid)
}

// TestLimitConnectFixedRuns: Mosquitto capped at 2 % of a core (its limit, not this
// host's), a connect-rate search with a connect SLO finds a rate; redone as plain
// fixed-rate Connections runs judged by the same bounds as thresholds, 80 % of it meets
// them and 150 % does not (its connect p99, or the rate it established, breaks them).
// Each run has a broker of its own, started as the search's was: at 2 % of a core,
// Mosquitto takes seconds to close the thousands of connections a search leaves, and a
// run right after it on the same broker failed at 80 % (connect p99 7.2 s).
func TestLimitConnectFixedRuns(t *testing.T) {
	tier.Timing(t) // alone: a connect-latency bound on a broker with a CPU quota
	capped := testbroker.Options{CPUQuota: 0.02}
	m := testbroker.StartMosquitto(t, capped)
	sp := quick("quick-conn-100", m.Addr, "publishers.client_count=14000")
	sp.Watch.BrokerPID = m.Cmd.Process.Pid
	sp.Limit = &spec.Limit{SLO: connectSLO(100000), Find: spec.FindConnectRate, StartRate: 100, Precision: 0.25,
		MaxDuration: spec.Duration(120 * time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	checkConnectSearch(t, l)
	if l.Kind != result.KindConnectRate || !l.Found || l.FirstFailed == 0 || l.LimitedBy != "broker" {
		t.Fatalf("limit %+v: want a connect rate found below the clients' bound, limited by the broker\n%s", l, output)
	}
	if ev := strings.Join(l.Evidence, "; "); !strings.Contains(ev, "of the 0.02 of a core its cgroup's CPU quota allows, its limit") {
		t.Errorf("evidence %q: want the broker at its cgroup's CPU quota (0.02 of a core), not a core's 95 %%", ev)
	}
	t.Logf("limited by the broker: %s", strings.Join(l.Evidence, "; "))
	under := fixedConnectRun(t, testbroker.StartMosquitto(t, capped).Addr, 100000, 0.8*l.Sustained)
	if under.err != nil {
		t.Errorf("80 %% of the %.0f/s found failed its thresholds: %v (%+v)", l.Sustained, under.err, under.res.Thresholds)
	}
	over := fixedConnectRun(t, testbroker.StartMosquitto(t, capped).Addr, 100000, 1.5*l.Sustained)
	if !errors.Is(over.err, fail.ErrThreshold) || !strings.Contains(over.err.Error(), "thresholds failed") {
		t.Errorf("150 %% of the %.0f/s found met the thresholds: %v (%+v)", l.Sustained, over.err, over.res.Thresholds)
	}
}

// TestLimitConnectSink: a connect-rate search against mqblast sink (a calibration run: the
// sink shares this host's CPU with the client) with a connect SLO below this host's floor
// (p99 under 150 µs: a quiet host's p99 is 300-400 µs from 250/s to 2,000/s, and a
// 5 ms SLO held to the last step the clients reach, 2,000/s) fails, the start rate
// included, and lays the limit to the client or the host, a lower bound, never to the
// broker.
func TestLimitConnectSink(t *testing.T) {
	tier.Timing(t) // alone: its connect-latency bound is the host's to meet
	sp := quick("quick-conn-100", "", "publishers.client_count=15000")
	sp.Sink, sp.NoCheck, sp.Outputs.Out = &spec.Sink{}, true, filepath.Join(t.TempDir(), "limit.json")
	sp.Limit = &spec.Limit{SLO: []string{"connect_latency_us.p99<150", "connections.failed==0"}, Find: spec.FindConnectRate,
		StartRate: 250, Precision: 0.5, MaxDuration: spec.Duration(90 * time.Second), Step: spec.Duration(2 * time.Second),
		Settle: spec.Duration(time.Second), Pause: spec.Duration(time.Second)}
	r := doSpec(t, sp)
	if r.err != nil && !errors.Is(r.err, fail.ErrThreshold) {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Limit
	checkConnectSearch(t, l)
	if !res.Calibration || l.FirstFailed == 0 || len(l.FailedSLO) == 0 {
		t.Fatalf("limit %+v (calibration %v): want a connect rate that failed the SLO against the sink\n%s", l, res.Calibration, r.stderr)
	}
	if l.LimitedBy != "client" && l.LimitedBy != "host" || !l.LowerBound || !strings.Contains(l.Fix, "lower bound") || res.LimitedBy == "broker" {
		t.Errorf("limited by %q (run: %q), lower bound %v, fix %q: against the sink the client or the host sets the limit",
			l.LimitedBy, res.LimitedBy, l.LowerBound, l.Fix)
	}
	t.Logf("sustained %.0f/s, first failed %.0f/s, limited by %s: %q", l.Sustained, l.FirstFailed, l.LimitedBy, l.Evidence)
}
