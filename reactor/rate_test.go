package reactor_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/sink"
)

// dueObs is acct plus the due time of every message published (written whole).
type dueObs struct {
	*acct
	dmu  sync.Mutex
	dues []int64
}

func (o *dueObs) Published(loop, client, receivers int, qos byte, due, at int64, lag time.Duration) {
	o.acct.Published(loop, client, receivers, qos, due, at, lag)
	o.dmu.Lock()
	o.dues = append(o.dues, due)
	o.dmu.Unlock()
}

// ratedRun is a run of n publishers at rate msg/s each (publisher i at phase i/(n*rate),
// so that the plan's messages are evenly spread) against a real sink.
type ratedRun struct {
	e     *reactor.Engine
	obs   *dueObs
	start time.Time
	// stopLo and stopHi bracket the StopPublishing call.
	stopLo, stopHi time.Time
}

// startSink starts mqblast sink in this process on a free loopback port, closed when the
// test ends.
func startSink(t *testing.T) *sink.Server {
	t.Helper()
	srv, err := sink.Start(context.Background(), sink.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func startRated(t *testing.T, n int, rate float64, count int, before func(e *reactor.Engine)) *ratedRun {
	t.Helper()
	tier.Integration(t)
	srv := startSink(t)
	obs := &dueObs{acct: newAcct()}
	e := startEngine(t, reactor.Config{Brokers: []string{srv.Addr()}, Clients: n, Loops: 2, Observer: obs,
		Client: func(i int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: fmt.Sprintf("p%d", i), Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("r/x"), Rate: rate, Count: count, PayloadSize: 24, Receivers: 0,
				Phase: time.Duration(float64(i) * float64(time.Second) / (rate * float64(n)))}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != int64(n) {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	if before != nil {
		before(e)
	}
	return &ratedRun{e: e, obs: obs, start: e.StartPublishing(0)}
}

// until stops publishing at start+d, finishes and disconnects.
func (r *ratedRun) until(t *testing.T, d time.Duration) {
	t.Helper()
	time.Sleep(time.Until(r.start.Add(d)))
	r.stopLo = time.Now()
	r.e.StopPublishing()
	r.stopHi = time.Now()
	time.Sleep(100 * time.Millisecond)
	r.e.FinishPublishing(false)
	r.e.Disconnect(time.Second)
	o := r.obs
	o.mu.Lock()
	defer o.mu.Unlock()
	if int64(o.published+o.unsentTotal()) != o.scheduled {
		t.Errorf("scheduled %d != published %d + unsent %v", o.scheduled, o.published, o.unsent)
	}
	if lo, hi := r.e.ScheduledBefore(r.stopLo), r.e.ScheduledBefore(r.stopHi); o.scheduled < lo || o.scheduled > hi {
		t.Errorf("the publishers' accounts say %d scheduled, ScheduledBefore the stop %d to %d", o.scheduled, lo, hi)
	}
}

// bins counts the due times published in bins of width w from the start, up to the last
// bin that ended before the stop.
func (r *ratedRun) bins(w time.Duration) []int {
	r.obs.dmu.Lock()
	defer r.obs.dmu.Unlock()
	start := r.start.UnixNano()
	out := make([]int, int(r.stopLo.Sub(r.start)/w))
	for _, d := range r.obs.dues {
		if b := (d - start) / int64(w); d >= start && b < int64(len(out)) {
			out[b]++
		}
	}
	return out
}

// TestRateStep: 100 publishers at 10 msg/s each; a second into the run the rate is set to 3
// times the plan's from 2 s on. The due times published give 1,000/s before and 3,000/s
// after to within 2 % in every 100 ms, with neither a burst nor a gap at the step: the
// publishers are re-phased, not restarted.
func TestRateStep(t *testing.T) {
	r := startRated(t, 100, 10, 0, nil)
	time.Sleep(time.Second)
	if err := r.e.SetRate(r.start.Add(2*time.Second), 3, 0); err != nil {
		t.Fatal(err)
	}
	if s := r.e.RateScale(r.start.Add(1999 * time.Millisecond)); s != 1 {
		t.Errorf("scale just before the step %v, want 1", s)
	}
	if s := r.e.RateScale(r.start.Add(2 * time.Second)); s != 3 {
		t.Errorf("scale at the step %v, want 3", s)
	}
	r.until(t, 3500*time.Millisecond)
	bins := r.bins(100 * time.Millisecond)
	if len(bins) < 35 {
		t.Fatalf("%d bins of 100 ms", len(bins))
	}
	for i, n := range bins {
		want := 100
		if i >= 20 {
			want = 300
		}
		if n < want*98/100 || n > want*102/100 {
			t.Errorf("due times in [%v, %v): %d, want %d (bins %v)", time.Duration(i)*100*time.Millisecond,
				time.Duration(i+1)*100*time.Millisecond, n, want, bins)
		}
		if n > 330 || n < 90 {
			t.Errorf("bin %d: %d due times: a burst or a gap", i, n)
		}
	}
}

// TestRateRamp: a ramp of the scale from 1 to 5 over 5 s, set before the run starts: the
// per-second counts of the due times published follow it within 2 %.
func TestRateRamp(t *testing.T) {
	r := startRated(t, 100, 10, 0, func(e *reactor.Engine) {
		// Before the start: the ramp begins at the start.
		if err := e.SetRate(time.Time{}, 5, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
	r.until(t, 5100*time.Millisecond)
	bins := r.bins(time.Second)
	if len(bins) != 5 {
		t.Fatalf("%d bins of 1 s", len(bins))
	}
	for i, n := range bins {
		// ∫ 1000 (1 + 0.8 t) dt over [i, i+1) s.
		want := 1000 * (1 + 0.8*(float64(i)+0.5))
		if d := float64(n) - want; d > want*0.02 || d < -want*0.02 {
			t.Errorf("second %d: %d due times, the ramp says %.0f (all: %v)", i, n, want, bins)
		}
	}
}

// TestRatePause: the scale goes to 0 half a second in, until a change a second later brings
// it back: no message falls due in between, the schedule resumes at 1,000/s without a
// burst, and the accounts add up.
func TestRatePause(t *testing.T) {
	r := startRated(t, 100, 10, 0, nil)
	if err := r.e.SetRate(r.start.Add(500*time.Millisecond), 0, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(r.start.Add(1500 * time.Millisecond)))
	resumed := time.Now()
	if err := r.e.SetRate(time.Time{}, 1, 0); err != nil {
		t.Fatal(err)
	}
	r.until(t, 2600*time.Millisecond)
	bins := r.bins(100 * time.Millisecond)
	r.obs.dmu.Lock()
	dues := slices.Clone(r.obs.dues)
	r.obs.dmu.Unlock()
	slices.Sort(dues)
	pauseFrom, pauseTo := r.start.Add(500*time.Millisecond).UnixNano(), resumed.UnixNano()
	for i, d := range dues {
		if d > pauseFrom && d < pauseTo { // one due at the pause's first ns is before it
			t.Fatalf("message due at start+%v, in the pause", time.Duration(d-r.start.UnixNano()))
		}
		if d >= pauseTo && (i == 0 || dues[i-1] <= pauseFrom) {
			if late := time.Duration(d - pauseTo); late > 2*time.Millisecond {
				t.Errorf("first due time after the resume %v after it", late)
			}
		}
	}
	for i := range 5 {
		if bins[i] != 100 {
			t.Errorf("before the pause, bin %d: %d due times, want 100", i, bins[i])
		}
	}
	// From the resume on: 100 due times per 100 ms, counted from the resume.
	after := make([]int, int(r.stopLo.Sub(resumed)/(100*time.Millisecond)))
	for _, d := range dues {
		if b := (d - pauseTo) / int64(100*time.Millisecond); d >= pauseTo && b < int64(len(after)) {
			after[b]++
		}
	}
	for i, n := range after {
		if n < 98 || n > 102 {
			t.Errorf("after the resume, bin %d: %d due times, want 100 (%v)", i, n, after)
		}
	}
}

// TestRateCountAndStartScale: a scale of 4 set before the start applies from the start,
// and Count still bounds the schedule: 50 messages at 100 msg/s times 4, every 2.5 ms.
func TestRateCountAndStartScale(t *testing.T) {
	r := startRated(t, 1, 100, 50, func(e *reactor.Engine) {
		if err := e.SetRate(time.Time{}, 4, 0); err != nil {
			t.Fatal(err)
		}
		if err := e.SetRate(time.Time{}, -1, 0); err == nil {
			t.Error("a negative scale was taken")
		}
	})
	r.until(t, 400*time.Millisecond)
	r.obs.dmu.Lock()
	defer r.obs.dmu.Unlock()
	dues := slices.Clone(r.obs.dues)
	slices.Sort(dues)
	if len(dues) != 50 || r.obs.scheduled != 50 {
		t.Fatalf("published %d, scheduled %d; want the Count, 50", len(dues), r.obs.scheduled)
	}
	for i, d := range dues {
		if want := r.start.UnixNano() + int64(i)*2_500_000; d != want {
			t.Errorf("message %d due at start+%v, want %v", i, time.Duration(d-r.start.UnixNano()), time.Duration(want-r.start.UnixNano()))
		}
	}
}

// TestRateWhileDisconnected: the broker closes the publisher's connection after 10
// messages and refuses it from then on; a change to twice the rate while it has no
// connection counts in its unsent messages: what the profile scheduled meanwhile.
func TestRateWhileDisconnected(t *testing.T) {
	addr, _ := closeAfter(t, 10)
	obs := newAcct()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs, Reconnect: true,
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "p", Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("t"), Rate: 100, PayloadSize: 16, Receivers: 1}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 1 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	start := e.StartPublishing(0)
	time.Sleep(time.Until(start.Add(300 * time.Millisecond)))
	if err := e.SetRate(start.Add(400*time.Millisecond), 2, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(start.Add(time.Second)))
	stopAccounted(t, e, obs)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// 40 messages in the first 400 ms, 200/s from then: 160 by 1 s (100 without the change).
	if obs.scheduled < 160 || obs.scheduled > 175 {
		t.Errorf("scheduled %d, want 160 and what the stop's delay adds", obs.scheduled)
	}
	if obs.unsent[reactor.UnsentDisconnected] != int(obs.scheduled)-obs.published || obs.published > 12 {
		t.Errorf("published %d, unsent %v of %d scheduled: want the rest as disconnected", obs.published, obs.unsent, obs.scheduled)
	}
}

// TestSetConnectRate: 300 clients at 100 connects/s would take 3 s; half a second in, the
// rate goes to 1,000/s, and the other 250 follow within about a quarter of a second, the
// first of them no sooner than the new pace allows.
func TestSetConnectRate(t *testing.T) {
	tier.Integration(t)
	srv := startSink(t)
	e := startEngine(t, reactor.Config{Brokers: []string{srv.Addr()}, Clients: 300, Loops: 2, ConnectRate: 100,
		Observer: reactor.NopObserver{}, Client: specs(4, 0, "", "")})
	var mu sync.Mutex
	var at500 int
	var sped time.Time
	began := time.Now()
	go func() {
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		sped = time.Now()
		if err := e.SetConnectRate(1000); err != nil {
			t.Error(err)
		}
	}()
	err := e.Connect(context.Background(), func(started int) {
		mu.Lock()
		if sped.IsZero() {
			at500 = started
		}
		mu.Unlock()
	})
	took := time.Since(began)
	if err != nil || e.Open() != 300 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	mu.Lock()
	defer mu.Unlock()
	// 50 dials by 0.5 s at 100/s, the other 250 at 1,000/s: done at 0.75 s.
	if at500 > 60 {
		t.Errorf("%d dials before the change at 0.5 s, want about 50", at500)
	}
	if rest := took - sped.Sub(began); rest < 230*time.Millisecond || rest > 600*time.Millisecond {
		t.Errorf("the last 250 dials took %v after the change to 1,000/s, want about 250 ms", rest)
	}
	if err := e.SetConnectRate(-1); err == nil {
		t.Error("a negative connect rate was taken")
	}
}

// TestConnectDelay: a worker's turn. 100 clients at 1,000/s with a ConnectDelay of 400 ms
// dial nothing for 400 ms, then all of them in about 100 ms; re-paced while waiting for its
// turn, the phase starts from its first client, without a burst.
func TestConnectDelay(t *testing.T) {
	tier.Timing(t)
	srv := startSink(t)
	for _, repace := range []bool{false, true} {
		e := startEngine(t, reactor.Config{Brokers: []string{srv.Addr()}, Clients: 100, Loops: 2, ConnectRate: 1000,
			ConnectDelay: 400 * time.Millisecond, Observer: reactor.NopObserver{}, Client: specs(4, 0, "", "")})
		var started atomic.Int64
		done := make(chan error, 1)
		began := time.Now()
		go func() { done <- e.Connect(context.Background(), func(n int) { started.Store(int64(n)) }) }()
		time.Sleep(300 * time.Millisecond)
		if n := started.Load(); n != 0 {
			t.Fatalf("repace=%v: %d dials 300 ms into a phase whose turn comes at 400 ms", repace, n)
		}
		if repace { // from now, at 500/s: 100 clients in about 200 ms
			if err := e.SetConnectRate(500); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if n := started.Load(); n > 35 {
				t.Errorf("%d dials 50 ms after re-pacing to 500/s, want about 25", n)
			}
		}
		if err := <-done; err != nil || e.Open() != 100 {
			t.Fatalf("repace=%v: connect: %v, open %d", repace, err, e.Open())
		}
		took := time.Since(began)
		if lo, hi := 490*time.Millisecond, 900*time.Millisecond; !repace && (took < lo || took > hi) {
			t.Errorf("100 clients at 1,000/s after a 400 ms turn took %v, want about 500 ms", took)
		} else if repace && (took < lo || took > hi) {
			t.Errorf("100 clients re-paced to 500/s at 300 ms took %v, want about 500 ms", took)
		}
	}
}

// TestPauseConnect: a connect phase that starts paused dials nothing until SetConnectRate;
// 100 clients at 200/s then take half a second; paused again after 50 of them, it dials
// none for as long as the pause, and resumed at 1,000/s it dials the other 50 in about
// 50 ms, from where it stopped (no burst of the dials the pause skipped).
func TestPauseConnect(t *testing.T) {
	tier.Integration(t)
	srv := startSink(t)
	e := startEngine(t, reactor.Config{Brokers: []string{srv.Addr()}, Clients: 100, Loops: 2, ConnectRate: 100,
		Observer: reactor.NopObserver{}, Client: specs(4, 0, "", "")})
	e.PauseConnect()
	var started atomic.Int64
	done := make(chan error, 1)
	go func() { done <- e.Connect(context.Background(), func(n int) { started.Store(int64(n)) }) }()
	time.Sleep(300 * time.Millisecond)
	if n := started.Load(); n != 0 {
		t.Fatalf("%d dials while the phase was paused from its start", n)
	}
	if err := e.SetConnectRate(200); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	e.PauseConnect()
	time.Sleep(150 * time.Millisecond) // progress reports every 100 ms
	paused := started.Load()
	if paused < 40 || paused > 60 {
		t.Errorf("%d dials in 250 ms at 200/s, want about 50", paused)
	}
	if e.ConnectPending() != 0 {
		t.Errorf("%d dials without a verdict 150 ms after the pause (the sink answers at once)", e.ConnectPending())
	}
	time.Sleep(300 * time.Millisecond)
	if n := started.Load(); n != paused {
		t.Errorf("%d dials during the pause", n-paused)
	}
	resumed := time.Now()
	if err := e.SetConnectRate(1000); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || e.Open() != 100 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	if took := time.Since(resumed); took < time.Duration(100-paused-1)*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("the last %d dials took %v at 1,000/s, want about %d ms", 100-paused, took, 100-paused)
	}
}
