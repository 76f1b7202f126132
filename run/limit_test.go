package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// TestLimitBadInput: each input a search cannot use is one usage error naming its field
// (an invalid one for a scenario that does not validate), before any socket: the broker
// address is one nothing listens on, so a run that started would fail otherwise.
func TestLimitBadInput(t *testing.T) {
	t.Parallel()
	lost := []string{"messages.lost==0"}
	for _, c := range []struct {
		name  string
		limit spec.Limit
		sp    Spec
		want  string
	}{
		{"no slo", spec.Limit{}, Spec{}, "needs at least one limit.slo"},
		{"bad path", spec.Limit{SLO: []string{"latency_us.p77<5"}}, Spec{}, "latency_us.p77"},
		{"bad expr", spec.Limit{SLO: []string{"latency_us.p99 about 5"}}, Spec{}, "limit.slo"},
		{"start above max", spec.Limit{SLO: lost, StartRate: 5000, MaxRate: 1000}, Spec{}, "limit.start_rate 5000 is above limit.max_rate 1000"},
		{"vary", spec.Limit{SLO: lost, Vary: spec.VaryConnectionRate}, Spec{}, "only for a Connections scenario"},
		{"vary field", spec.Limit{SLO: lost, Vary: "parameters.qos"}, Spec{}, "limit.vary parameters.qos: want parameters.publish_rate"},
		{"settle", spec.Limit{SLO: lost, Step: spec.Duration(2 * time.Second), Settle: spec.Duration(2 * time.Second)}, Spec{},
			"limit.settle 2s is not shorter than limit.step 2s"},
		{"stages", spec.Limit{SLO: lost}, Spec{Stages: "10s:100"}, "stages: limit sets the rate itself"},
		{"procs", spec.Limit{SLO: lost}, Spec{Procs: 2}, "limit runs in one process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sp := c.sp
			sp.Scenario, sp.Brokers, sp.NoCheck, sp.Limit = spec.Scenario{Name: "quick-p2p-100"}, []string{"127.0.0.1:9"}, true, &c.limit
			r := doSpec(t, &sp)
			if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), c.want) || strings.Contains(r.stderr, "connecting") {
				t.Errorf("%v, want %v with %q before connecting:\n%s", r.err, fail.ErrUsage, c.want, r.stderr)
			}
		})
	}
	sp := quick("quick-conn-100", "127.0.0.1:9")
	sp.NoCheck, sp.Limit = true, &spec.Limit{SLO: lost}
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "has no publishers") ||
		!strings.Contains(r.err.Error(), "limit.vary parameters.connection_rate") {
		t.Errorf("a Connections scenario: %v\n%s", r.err, r.stderr)
	}
	sp.Limit = &spec.Limit{SLO: []string{"connect_latency_us.p99<100000"}, Vary: spec.VaryConnectionRate, StartRate: 50}
	r = doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "the first step needs 500 clients") || strings.Contains(r.stderr, "connecting") {
		t.Errorf("a connect-rate search with too few clients for its first step: %v\n%s", r.err, r.stderr)
	}
}

// limitRun runs the search sp, unchecked, with pauses of 1 s and short steps unless the
// test gives longer ones (2 s, 1 s of them settling), its result to a file; it fails the
// test unless the search succeeded, and returns the result the file holds and the output.
func limitRun(t *testing.T, sp *Spec) (*result.Result, string) {
	t.Helper()
	sp.NoCheck, sp.Outputs.Out = true, filepath.Join(t.TempDir(), "limit.json")
	sp.Limit.Pause = spec.Duration(time.Second)
	if sp.Limit.Step == 0 {
		sp.Limit.Step, sp.Limit.Settle = spec.Duration(2*time.Second), spec.Duration(time.Second)
	}
	r := doOK(t, sp)
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit == nil {
		t.Fatalf("no limit in the result\n%s", r.stderr)
	}
	return res, r.stdout + r.stderr
}

// checkSearch asserts what every search's steps must show: the geometric climb from the
// start rate, each failure repeated once at its rate (limit.confirm) and the search going by the
// repeat, the bisection between the last step that held and the first that failed, the
// answer held once more at the end (and when two steps at its rate have failed by then,
// the steps that held there overruled and the bisection going on below it), and an answer
// that is those steps'.
func checkSearch(t *testing.T, l *result.Limit, start, factor float64) {
	t.Helper()
	for i, st := range l.Steps {
		t.Logf("step %d: %.0f msg/s, arrived %.0f, p99 %d µs, lost %d, ok %v %v overruled %v", i+1, st.Rate, st.Throughput.ReceivePerS,
			st.LatencyUS.P99, st.Messages.Lost, st.OK, st.Failed, st.Overruled)
		if st.PerClient*float64(l.Publishers) < st.Rate*0.999 || st.Throughput.WindowS <= 0 {
			t.Errorf("step %d: per client %.2f × %d publishers, window %.1fs", i+1, st.PerClient, l.Publishers, st.Throughput.WindowS)
		}
	}
	i := 0
	type try1 struct{ first, repeat int } // the steps of one try (repeat -1: none)
	var tries []try1
	failsAt := map[float64]int{}    // the failed steps at each rate
	overruled := map[float64]bool{} // the rates the answer's check found not sustained
	// try takes the steps of one rate (a failure and its repeat), false when none is left.
	try := func(rate float64) (held, ran bool) {
		if i >= len(l.Steps) {
			return false, false
		}
		st := l.Steps[i]
		if d := st.Rate/rate - 1; d > 1e-6 || d < -1e-6 {
			t.Errorf("step %d: rate %.1f, want %.1f", i+1, st.Rate, rate)
		}
		i++
		if !st.OK {
			failsAt[rate]++
		}
		if st.OK || i >= len(l.Steps) {
			tries = append(tries, try1{i - 1, -1})
			return st.OK, true
		}
		again := l.Steps[i]
		if d := again.Rate/rate - 1; d > 1e-6 || d < -1e-6 {
			t.Errorf("step %d repeats %.1f at %.1f", i+1, rate, again.Rate)
		}
		if !again.OK {
			failsAt[rate]++
		}
		tries = append(tries, try1{i - 1, i})
		i++
		return again.OK, true
	}
	good, bad, checked := 0.0, 0.0, 0.0
	var held []float64
	rate := start
	done := false
	for !done && i < len(l.Steps) {
		ok, _ := try(rate)
		if ok {
			good = max(good, rate)
			held = append(held, rate)
		} else if bad == 0 || rate < bad {
			bad = rate
		}
	decide:
		switch {
		case bad == start || bad == 0 && rate >= 1000*start: // limit.max_rate's default
			done = true
		case bad == 0:
			rate = min(rate*factor, 1000*start)
		case bad/good-1 <= l.Precision:
			if checked == good {
				done = true
				break
			}
			checked = good
			ok, ran := try(good)
			if !ran && l.Ended == "precision" {
				t.Errorf("the answer %.1f was not held once more before it was given", good)
			}
			if !ran && l.Confirmed {
				t.Errorf("the answer %.1f was not held once more, and is given as confirmed", good)
			}
			if !ran || ok && failsAt[good] < 2 {
				done = true
				break
			}
			overruled[good] = true // two steps failed there: not sustained
			bad, good = good, 0
			for _, r := range held {
				if r < bad {
					good = max(good, r)
				}
			}
			goto decide
		default:
			rate = math.Sqrt(good * bad)
		}
	}
	// What the search went by: at a rate found not sustained, its failures (held steps
	// overruled); elsewhere a repeat's verdict (a failure it held after overruled).
	for _, tr := range tries {
		st := l.Steps[tr.first]
		switch {
		case overruled[st.Rate]:
			for _, k := range []int{tr.first, tr.repeat} {
				if k >= 0 && l.Steps[k].Overruled != l.Steps[k].OK {
					t.Errorf("step %d (ok %v) at %.1f, a rate not sustained: overruled %v", k+1, l.Steps[k].OK, st.Rate, l.Steps[k].Overruled)
				}
			}
		case tr.repeat >= 0:
			if again := l.Steps[tr.repeat]; st.Overruled != again.OK || again.Overruled {
				t.Errorf("step %d held %v (overruled %v); the step it repeated is overruled %v", tr.repeat+1, again.OK, again.Overruled, st.Overruled)
			}
		case st.Overruled:
			t.Errorf("step %d overruled, with no repeat and at a rate sustained", tr.first+1)
		}
	}
	if l.Ended == "precision" && !l.Confirmed {
		t.Errorf("the answer was reached and held once more, and is given as unconfirmed")
	}
	if done && i < len(l.Steps) {
		t.Errorf("%d steps after the search had its answer", len(l.Steps)-i)
	}
	var sustained, failed float64
	for _, st := range l.Steps {
		switch {
		case st.Overruled:
		case st.OK:
			sustained = max(sustained, st.Rate)
		case failed == 0 || st.Rate < failed:
			failed = st.Rate
		}
	}
	if l.Sustained != sustained || l.FirstFailed != failed || l.Found != (sustained > 0) || sustained > 0 && sustained != good ||
		failed > 0 && failed != bad {
		t.Errorf("answer sustained %.1f first failed %.1f found %v; the steps say %.1f and %.1f, the search %.1f and %.1f", l.Sustained,
			l.FirstFailed, l.Found, sustained, failed, good, bad)
	}
}

// TestLimitSink: a search against mqblast sink finds the client host's own ceiling, and
// says that the client or the host set it, never the broker, with the words that make it
// a lower bound and the fix; the HTML report of the search draws its charts.
func TestLimitSink(t *testing.T) {
	tier.Timing(t) // alone: its p99 bound is the host's to meet, and beside the parallel pass's load
	// the start rate failed it (p99 11 ms at 1,000 msg/s, steal 10 %: no limit to find)
	sp := quick("quick-p2p-100", "")
	sp.Sink, sp.Outputs.HTML = &spec.Sink{}, filepath.Join(t.TempDir(), "limit.html")
	// p99 < 10 ms: on a quiet host the client and the sink together carry 1M msg/s, max_rate's
	// default here, with p99 40 ms (CI, 2 cores), so a 50 ms bound found no limit; 10 ms fails
	// by 512K there (42 ms) and holds at 64K (4.4 ms), and a busy host fails it sooner.
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<10000", "messages.lost==0"}, StartRate: 1000, Factor: 8, Precision: 0.5,
		MaxDuration: spec.Duration(120 * time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	checkSearch(t, l, 1000, 8)
	if !l.Found || l.FirstFailed == 0 || l.Ended != "precision" || l.Reached > 0.5 {
		t.Errorf("limit %+v: want a limit within 50 %%", l)
	}
	if l.LimitedBy != "client" && l.LimitedBy != "host" || !l.LowerBound || !strings.Contains(l.Fix, "lower bound") {
		t.Errorf("limited by %q, lower bound %v, fix %q: against the sink, the client or the host sets the limit", l.LimitedBy, l.LowerBound, l.Fix)
	}
	if !strings.Contains(output, "LIMIT") || !strings.Contains(output, "sustains") {
		t.Errorf("the summary does not give the answer:\n%s", output)
	}
	b, err := os.ReadFile(sp.Outputs.HTML)
	if err != nil || !strings.Contains(string(b), "limit_achieved") {
		t.Errorf("the HTML report has no limit chart (%v)", err)
	}
}

// TestLimitMosquitto: a search against Mosquitto with a latency SLO ends with an answer whose
// steps hold below it and fail above it (by the SLO, or by a backlog or a schedule that fell
// behind), and whose first failed step names what it broke.
func TestLimitMosquitto(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-p2p-100", m.Addr)
	sp.Procs, sp.Watch.BrokerPID = 1, m.Cmd.Process.Pid
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<50000"}, StartRate: 1000, Factor: 4, Precision: 0.25,
		MaxDuration: spec.Duration(120 * time.Second)}
	res, _ := limitRun(t, sp)
	l := res.Limit
	checkSearch(t, l, 1000, 4)
	if !l.Found || len(l.FailedSLO) == 0 {
		t.Errorf("limit %+v: want a limit with what its first failed step broke", l)
	}
	for _, st := range l.Steps {
		if st.BrokerCPUPercent <= 0 {
			t.Errorf("step %d: no broker CPU (watch.broker_pid)", st.Index+1)
		}
	}
}

// TestLimitRoundTrip: a search over a round trip (clients pinging their own topic with a
// 64 KiB payload) finds where the round trip's p99 leaves the SLO, and names it.
func TestLimitRoundTrip(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-roundtrip-10", m.Addr, "parameters.payload_size=65536")
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<50000"}, StartRate: 20, Factor: 8, Precision: 0.5,
		MaxDuration: spec.Duration(120 * time.Second)}
	res, _ := limitRun(t, sp)
	l := res.Limit
	checkSearch(t, l, 20, 8)
	if !l.Found || l.FirstFailed == 0 || len(l.FailedSLO) == 0 {
		t.Fatalf("limit %+v: want a rate that held and one that failed", l)
	}
	for _, st := range l.Steps {
		if st.OK && st.LatencyUS.P99 >= 50000 || st.LatencyUS.Count == 0 {
			t.Errorf("step %d: p99 %d µs over %d round trips, ok %v", st.Index+1, st.LatencyUS.P99, st.LatencyUS.Count, st.OK)
		}
	}
}

// TestLimitInterrupted: an interrupt (Ctrl-C) during a search writes what is known: the
// steps that ran and the answer they give, marked interrupted, and the run is interrupted.
func TestLimitInterrupted(t *testing.T) {
	t.Parallel()
	sp := quick("quick-p2p-100", "")
	sp.Sink, sp.NoCheck, sp.Outputs.Out = &spec.Sink{}, true, filepath.Join(t.TempDir(), "r.json")
	sp.Limit = &spec.Limit{SLO: []string{"latency_us.p99<900000"}, StartRate: 500, Factor: 1.5, Step: spec.Duration(2 * time.Second),
		Settle: spec.Duration(time.Second), Pause: spec.Duration(time.Second)}
	r := doSpecCtx(interruptAfter(t, 9*time.Second), t, sp)
	if !errors.Is(r.err, fail.ErrInterrupted) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrInterrupted, r.stderr)
	}
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	l := res.Limit
	if l == nil || l.Ended != "interrupted" || len(l.Steps) == 0 || !l.Found {
		t.Fatalf("limit %+v: want the steps so far and their answer, interrupted\n%s", l, r.stderr)
	}
	checkSearch(t, l, 500, 1.5)
}

// checkConnectSearch asserts what every connect-rate search's steps must show: rates in
// connections per second (per client the same), each step judged by its connect figures
// (the rate it established, its connect latency), a step that held having kept its rate
// within 5 %, and an answer that is the steps'.
func checkConnectSearch(t *testing.T, l *result.Limit) {
	t.Helper()
	good, bad := 0.0, 0.0
	for i, st := range l.Steps {
		t.Logf("step %d: %.0f conn/s, established %.0f/s, connect p99 %d µs, failed %d, ok %v %v overruled %v", i+1, st.Rate,
			st.Connections.ConnectPerS, st.ConnectLatencyUS.P99, st.Connections.Failed, st.OK, st.Failed, st.Overruled)
		if st.PerClient != st.Rate || st.ConnectLatencyUS.Count == 0 || st.Throughput.WindowS <= 0 {
			t.Errorf("step %d: per client %.1f of %.1f, %d connect latencies, window %.1fs", i+1, st.PerClient, st.Rate,
				st.ConnectLatencyUS.Count, st.Throughput.WindowS)
		}
		if st.OK && (st.Connections.ConnectPerS < 0.95*st.Rate || st.ConnectLatencyUS.P99 >= 100000) {
			t.Errorf("step %d held with %.0f/s established of %.0f, p99 %d µs", i+1, st.Connections.ConnectPerS, st.Rate, st.ConnectLatencyUS.P99)
		}
		if st.Overruled {
			continue
		}
		if st.OK {
			good = max(good, st.Rate)
		} else if bad == 0 || st.Rate < bad {
			bad = st.Rate
		}
	}
	if l.Sustained != good || l.FirstFailed != bad || l.Vary != "parameters.connection_rate" || l.Publishers != 0 {
		t.Errorf("answer sustained %.1f first failed %.1f (vary %s, %d publishers), the steps say %.1f and %.1f", l.Sustained,
			l.FirstFailed, l.Vary, l.Publishers, good, bad)
	}
}

// TestLimitConnect: a search that steps a Connections scenario's connect rate (--find
// connect-rate, or --vary parameters.connection_rate as the second search does). Against
// Mosquitto on plain TCP (thousands of connects a second here) 330 clients run out at
// 100/s, before any step fails: the answer says that no limit was found and that the rate is a
// lower bound, and gives no first failed rate. With Mosquitto's CPU capped, a limit is
// found below what the clients allow, and its first failed step names what it broke.
func TestLimitConnect(t *testing.T) {
	tier.Timing(t) // alone: its connect-latency SLO is the host's to meet; beside the parallel
	// pass's load a Mosquitto capped at 2 % of a core failed even the start rate (p99 361 ms)
	slo := []string{"connect_latency_us.p99<100000", "connections.failed==0"}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-conn-100", m.Addr, "publishers.client_count=330")
	sp.Limit = &spec.Limit{SLO: slo, Find: spec.FindConnectRate, StartRate: 50, MaxDuration: spec.Duration(60 * time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	checkConnectSearch(t, l)
	if l.Kind != result.KindConnectRate || l.Unit() != "connections/s" {
		t.Errorf("--find connect-rate: kind %q, unit %q", l.Kind, l.Unit())
	}
	if len(l.Steps) != 2 || l.Ended != "clients_exhausted" || l.FirstFailed != 0 || !l.LowerBound || l.Sustained != 100 ||
		!strings.Contains(output, "no limit found") || !strings.Contains(l.Fix, "parameters.clients") {
		t.Errorf("limit %+v: want 50 and 100/s held, then the clients out (400 needed of 30 left), said so\n%s", l, output)
	}
	if c := res.Connections; c.Established < 295 || c.Established > 310 {
		t.Errorf("%d established, want the 300 the two steps dialed", c.Established)
	}

	// Capped at 2 % of a core, Mosquitto accepts some hundreds of connections a second.
	cm := testbroker.StartMosquitto(t, testbroker.Options{CPUQuota: 0.02})
	sp = quick("quick-conn-100", cm.Addr, "publishers.client_count=14000")
	sp.Outputs.HTML, sp.Watch.BrokerPID = filepath.Join(t.TempDir(), "limit.html"), cm.Cmd.Process.Pid
	sp.Limit = &spec.Limit{SLO: slo, Vary: spec.VaryConnectionRate, StartRate: 100, Precision: 0.25, MaxDuration: spec.Duration(120 * time.Second)}
	res, output = limitRun(t, sp)
	l = res.Limit
	checkConnectSearch(t, l)
	if !l.Found || l.FirstFailed == 0 || len(l.FailedSLO) == 0 || l.LimitedBy == "" || !strings.Contains(output, "connections/s") {
		t.Errorf("limit %+v: want a connect rate that held and one that failed, with who set it\n%s", l, output)
	}
	if b, err := os.ReadFile(sp.Outputs.HTML); err != nil || !strings.Contains(string(b), "Connect latency against offered") {
		t.Errorf("the HTML report has no connect-latency chart (%v)", err)
	}
}

// TestLimitDrops: against Mosquitto that keeps at most 100 messages queued for a
// subscriber (max_queued_messages 100) and drops the rest, a search with the SLO
// messages.lost==0 over a Fan-In (100 publishers, one subscriber's queue) finds where the
// drops begin and lays them to the broker ($SYS publish/messages/dropped). Redone as plain
// fixed-rate runs, 85 % of the sustained rate runs clean, and 15 % above the first failed rate
// loses messages that the broker says it dropped itself.
//
// The broker is on a host of its own whose link sends 2 Mbit/s (a token bucket): its
// subscriber's queue overflows where the messages and the publishers' PUBACKs (~105 bytes
// a message on the wire) fill the link, 2,300-2,500 msg/s, whatever else runs here (with
// three CPU hogs on the 2 cores: 2,100 clean, 2,300 lost 29). A broker capped at 10 % of a
// core instead dropped from 2,000 to 3,400 msg/s as the hypervisor's steal moved, and a
// fixed run at 85 % of what a search had sustained lost 141 and 171 of 9,600; uncapped, the
// drops began where the host's scheduling stalled the subscriber's reader (15,000 msg/s
// clean in one run, 27,852 lost in the next). It runs in the timing tier all the same:
// under a load average of 148 the client itself is late.
func TestLimitDrops(t *testing.T) {
	tm := tier.Timing(t)
	ns, addr := netnstest.Host(t, "drops")
	netnstest.LimitOut(t, ns, "2mbit")
	m := testbroker.StartMosquitto(t, testbroker.Options{Host: addr.String(), Netns: ns, Extra: []string{"max_queued_messages 100", "sys_interval 1"}})
	// Steps of 4 s, 3 of them judged, and fixed runs as long: near the knee a loss comes now
	// and then, and a step judged over 1 s held at a rate where a 6 s run lost 12 messages.
	sp := quick("quick-fanin-100-1", m.Addr)
	sp.Watch.BrokerSys, sp.Watch.BrokerPID = true, m.Cmd.Process.Pid
	sp.Limit = &spec.Limit{SLO: []string{"messages.lost==0"}, StartRate: 1000, Precision: 0.25, MaxDuration: spec.Duration(150 * time.Second),
		Step: spec.Duration(4 * time.Second), Settle: spec.Duration(time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	checkSearch(t, l, 1000, 2)
	if !l.Found || l.FirstFailed == 0 || !strings.Contains(strings.Join(l.FailedSLO, " "), "messages.lost==0") || l.LimitedBy != "broker" ||
		!strings.Contains(strings.Join(l.Evidence, " "), "dropped") {
		t.Fatalf("limit %+v: want drops beginning between two rates, laid to the broker's own drops\n%s", l, output)
	}
	fixed := func(perClient float64) *result.Result {
		sp := quick("quick-fanin-100-1", m.Addr, "parameters.publish_rate="+strconv.FormatFloat(perClient, 'f', 3, 64))
		sp.Watch.BrokerSys, sp.NoCheck, sp.Duration = true, true, spec.Duration(4*time.Second)
		r := doSpec(t, sp)
		if r.err != nil {
			t.Fatalf("run at %.1f msg/s per publisher: %v\n%s", perClient, r.err, r.stderr)
		}
		return r.res
	}
	// A fixed run counts its start, which a step's judged window leaves out (limit.settle): at
	// the knee, 3,364 msg/s held in two 3 s judged steps and lost 11 and 39 in 4 s fixed
	// runs. So the clean run is at 85 % of the answer, as make limit-check brackets it.
	cleanRate := 0.85 * l.Sustained
	clean := fixed(0.85 * l.SustainedPerClient)
	if clean.Messages.Lost != 0 { // the search confirms a failure by repeating it; so does this check
		t.Logf("at 85 %% of the sustained rate, %.0f msg/s: %d lost; once more", cleanRate, clean.Messages.Lost)
		clean = fixed(0.85 * l.SustainedPerClient)
	}
	if clean.Messages.Lost != 0 || clean.Messages.Received == 0 {
		tm.Errorf("a fixed run at 85 %% of the sustained rate, %.0f msg/s: %d received, %d lost, want none lost", cleanRate, clean.Messages.Received,
			clean.Messages.Lost)
	}
	over := fixed(1.15 * l.FirstFailedPerClient)
	var dropped int64
	if b := over.BrokerSys; b != nil {
		dropped, _ = b.Total(result.SysPublishDropped)
	}
	if over.Messages.Lost == 0 || dropped < over.Messages.Lost/2 {
		tm.Errorf("a fixed run 15 %% above the first failed rate (%.0f msg/s): %d lost, the broker says it dropped %d: want drops, the broker's",
			1.15*l.FirstFailed, over.Messages.Lost, dropped)
	}
	t.Logf("sustained %.0f msg/s, first failed %.0f; fixed runs: at %.0f lost %d; at %.0f lost %d (broker dropped %d)", l.Sustained,
		l.FirstFailed, cleanRate, clean.Messages.Lost, 1.15*l.FirstFailed, over.Messages.Lost, dropped)
}

// TestLimitBrokerGone: Mosquitto killed during a search, after a step that held, of the
// publish rate and of the connect rate. The search stops at the first step that ends with
// no connection open (it does not go on stepping a broker that is not there, nor overrule
// the steps that held), says so (ended broker_gone, the step's reason), and the run fails
// (exit 1), not as a threshold. The SLOs are loose: what is asserted is the search's end,
// not where the broker's limit lies.
func TestLimitBrokerGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, scenario, slo, vary, unit, verb string
		sets                                  []string
		start                                 float64
	}{
		{"publish", "quick-p2p-100", "latency_us.p99<500000", "", "msg/s", "achieved",
			[]string{"publishers.client_count=10", "subscribers.client_count=10"}, 500},
		{"connect", "quick-conn-100", "connect_latency_us.p99<500000", spec.VaryConnectionRate, "connections/s", "established",
			[]string{"publishers.client_count=600"}, 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := testbroker.StartMosquitto(t, testbroker.Options{})
			sp := quick(c.scenario, m.Addr, c.sets...)
			sp.NoCheck, sp.Outputs.Out = true, filepath.Join(t.TempDir(), "limit.json")
			sp.Limit = &spec.Limit{SLO: []string{c.slo}, Vary: c.vary, StartRate: c.start, Step: spec.Duration(2 * time.Second),
				Settle: spec.Duration(time.Second), Pause: spec.Duration(time.Second), MaxDuration: spec.Duration(90 * time.Second)}
			checkBrokerGone(t, m, sp, c.unit, c.verb)
		})
	}
}

// checkBrokerGone runs the search sp against m, kills m once a step has held, and checks
// how the search ends (TestLimitBrokerGone).
func checkBrokerGone(t *testing.T, m *testbroker.Mosquitto, sp *Spec, unit, verb string) {
	t.Helper()
	g := goSpec(context.Background(), t, sp)
	held := regexp.MustCompile(`limit: step (\d+): ([0-9,]+) ` + unit + " " + verb + ` .*: holds`)
	var first []string // the first step that held: its number and rate
	for first == nil {
		select {
		case r := <-g.done:
			t.Fatalf("the search ended before a step held: %v\n%s", r.err, r.stderr)
		case <-time.After(20 * time.Millisecond):
		}
		first = held.FindStringSubmatch(g.progress())
	}
	m.Kill(t)
	r := g.wait()
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatalf("%v\n%s", err, r.said())
	}
	l := res.Limit
	var failed float64 // the lowest rate that failed with the broker there
	for _, st := range l.Steps {
		t.Logf("step %d: %.0f %s ok %v overruled %v broker gone %v %q", st.Index+1, st.Rate, unit, st.OK, st.Overruled, st.BrokerGone, st.Failed)
		if !st.OK && !st.Overruled && !st.BrokerGone && (failed == 0 || st.Rate < failed) {
			failed = st.Rate
		}
		if st.OK && st.Overruled {
			t.Errorf("step %d held and was overruled", st.Index+1)
		}
	}
	if !r.failed() || !strings.Contains(r.err.Error(), "the broker went away") {
		t.Errorf("the run's error %v (kind %v), want a failure without a kind (exit 1) that says the broker went away", r.err, r.kind())
	}
	n, _ := strconv.Atoi(first[1])
	rate, _ := strconv.ParseFloat(strings.ReplaceAll(first[2], ",", ""), 64)
	if l.Ended != "broker_gone" || len(l.Steps) != n+1 || !l.Steps[n-1].OK || l.Steps[n].OK || !l.Steps[n].BrokerGone ||
		!strings.HasPrefix(l.Steps[n].Failed[0], "broker gone: no connection open at the step's end (") {
		t.Fatalf("ended %q after %d steps: want broker_gone at step %d, the one after the kill, step %d held and kept", l.Ended, len(l.Steps), n+1, n)
	}
	if !l.Found || l.Sustained != rate || l.FirstFailed != failed || failed == 0 && l.LimitedBy != "" || l.Confirmed {
		t.Errorf("sustained %.0f (found %v), first failed %.0f, limited by %q, confirmed %v: want %.0f held, %.0f failed and no more",
			l.Sustained, l.Found, l.FirstFailed, l.LimitedBy, l.Confirmed, rate, failed)
	}
	out := r.stdout + r.said()
	if !strings.Contains(out, "the broker went away during the search: no limit found; the steps before held up to "+first[2]+" "+unit) ||
		!strings.Contains(out, fmt.Sprintf("the search stopped at step %d: broker gone", n+1)) ||
		regexp.MustCompile(`(?m)^(step|LIMIT|limit: step).*: *$`).MatchString(out) {
		t.Errorf("the output does not say the broker went away, or prints an empty reason:\n%s", out)
	}
}
