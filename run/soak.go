package run

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// A soak (--sustain) holds a load for a long time and judges its drift by window
// (result.NewSoak): a search holds its answer after it, a fixed-rate run measures for the
// hold (its warm-up before it).

// prepareSoak sets a fixed-rate run's scenario s up for the soak sp asks: it publishes for
// the warm-up and then the hold, so that the measure phase is the hold.
func prepareSoak(s *scenario.Scenario, sp *spec.Spec) error {
	if sp.Sustain <= 0 || sp.Limit != nil {
		return nil
	}
	if len(s.Parameters.Stages) > 0 {
		return usage(spec.Errorf("sustain", "{sustain} %v: the scenario has stages, and a soak holds one rate: leave out its parameters.stages", sp.Sustain.D()))
	}
	w := s.Parameters.Warmup // the default's, from the hold as duration_sec
	if err := s.Set("parameters.warmup_sec", w.String()); err != nil {
		return kind(errInvalid, err)
	}
	if err := s.Set("parameters.duration_sec", (sp.Sustain.D() + w).String()); err != nil {
		return kind(errInvalid, err)
	}
	return nil
}

// runSoak is the soak of a fixed-rate run: its measure phase, in windows of window, the
// last window's messages through the drain. A run that publishes nothing (Connections,
// Subscribe) has no measure phase: its soak is the time its clients were held, from the
// end of its connect phase to its last interval.
func runSoak(res *result.Result, window time.Duration) *result.Soak {
	rel := func(t time.Time) float64 { return t.Sub(res.StartedAt).Seconds() }
	tail := 0.0
	if n := len(res.Intervals); n > 0 {
		tail = res.Intervals[n-1].TS
	}
	from, to := res.Connections.ConnectPhaseS, tail
	if !res.MeasureFrom.IsZero() {
		from, to = rel(res.MeasureFrom), rel(res.MeasureTo)
	}
	return result.NewSoak(res, from, to, max(tail, to), window.Seconds(), 0)
}

// answer is the search's sustained rate so far (0: none held).
func (s *search) answer() float64 {
	rate := 0.0
	for _, st := range s.out.Steps {
		if st.OK && !st.Overruled && !st.BrokerGone {
			rate = max(rate, st.Rate)
		}
	}
	return rate
}

// hold holds the search's answer from the end of its last step for Sustain, then pauses the
// schedule until what the broker still held has arrived, and judges the hold by window.
// Each window is logged as it ends. A search that found nothing, or ended by the broker
// going away or an interrupt, holds nothing.
func (s *search) hold(ctx context.Context, rc bench.RateControl, runStart time.Time) {
	lo := &s.lo
	rate := s.answer()
	switch s.out.Ended {
	case "interrupted", "broker_gone", "start_failed":
		return
	}
	if rate == 0 || ctx.Err() != nil {
		return
	}
	s.holding = true
	at := s.next
	end := at.Add(lo.Sustain)
	if err := rc.SetRate(at, rate/lo.StartRate, 0); err == nil {
		if err = rc.SetRate(end, 0, 0); err != nil {
			fmt.Fprintf(s.log, "limit: cannot pause the schedule: %v\n", err)
		}
	}
	fmt.Fprintf(s.log, "soak: holding %s msg/s (%s per publisher) for %v, in windows of %v\n", report.RateText(rate),
		report.RateText(rate/float64(s.pubs)), lo.Sustain, lo.Window)
	rel := func(t time.Time) float64 { return t.Sub(runStart).Seconds() }
	from, w := rel(at), lo.Window.Seconds()
	for k := 1; from+float64(k)*w <= rel(end)+0.05; k++ {
		if !s.until(ctx, from+float64(k)*w) {
			break
		}
		part := result.NewSoak(&s.seen, from, from+float64(k)*w, 0, w, rate)
		logWindow(s.log, part)
		if lo.SoakLive != nil {
			lo.SoakLive(part)
		}
	}
	resume, ok := s.pause(ctx, end.Add(lo.Pause), runStart, rel, func(last *result.Interval) bool { return last.Received == 0 && last.Published == 0 })
	to := rel(end)
	if !ok { // interrupted: the hold so far
		if len(s.seen.Intervals) == 0 {
			return
		}
		if to = min(to, s.seen.Intervals[len(s.seen.Intervals)-1].TS); to-from < 2*w {
			return
		}
		resume = runStart.Add(time.Duration(to * float64(time.Second)))
	}
	s.soak = result.NewSoak(&s.seen, from, to, rel(resume), w, rate)
	fmt.Fprintf(s.log, "soak: %s\n", s.soak.Verdict)
}

// logWindow logs the last window of part, a soak so far, as it ends.
func logWindow(log io.Writer, part *result.Soak) {
	x := &part.Windows[len(part.Windows)-1]
	p99 := "-" // nothing arrived in it (a Connections run)
	if x.LatencyUS.Count > 0 {
		p99 = result.Micros(x.LatencyUS.P99)
	}
	fmt.Fprintf(log, "soak: window %d: p99 %s, lost %d, refusals %d%s\n", len(part.Windows), p99, x.Lost, x.Refusals(), rssText(x))
}

// liveSoak is a fixed-rate run's soak while it runs: it keeps the intervals of the window
// going on and, as each window of the hold ends, logs its figures and gives the soak so far
// (a copy) to live (nil: none), the live metrics, as a search's hold does.
type liveSoak struct {
	log    io.Writer
	live   func(*result.Soak)
	window float64

	mu       sync.Mutex
	seen     result.Result // the intervals since the last window ended, the one that ended it first
	from, to float64       // the hold, once the run knows it (OnMeasure)
	known    bool
	soak     *result.Soak // the windows ended so far
}

// liveSoakOf has the run o runs tell its soak's windows as they end: on o.Log, and to live
// (nil: none). The run must be in this process: worker processes' intervals are timed
// from each one's start, and their run's soak is told at its end.
func liveSoakOf(o *options, live func(*result.Soak), window time.Duration) {
	l := &liveSoak{log: o.Log, live: live, window: window.Seconds()}
	prev, tune := o.OnInterval, o.tune
	o.OnInterval = func(iv result.Interval, snap *result.Snapshot) {
		if prev != nil {
			prev(iv, snap)
		}
		l.interval(iv)
	}
	o.tune = func(r *bench.Runner) {
		if tune != nil {
			tune(r)
		}
		r.OnMeasure = l.measure
	}
}

// measure is the runner's OnMeasure: the hold's span.
func (l *liveSoak) measure(from, to float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.from, l.to, l.known = from, to, true
}

// interval is the run's OnInterval: it keeps iv and ends the windows that end by it.
func (l *liveSoak) interval(iv result.Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen.Intervals = append(l.seen.Intervals, iv)
	for l.known {
		n := 0
		if l.soak != nil {
			n = len(l.soak.Windows)
		}
		// the windows NewSoak makes of the hold: the last one to its end
		last := result.SoakWindowCount(l.to-l.from, l.window) - 1
		start, end := l.from+float64(n)*l.window, l.from+float64(n+1)*l.window
		if n == last {
			end = l.to
		}
		if n > last || iv.TS < end-0.05 {
			return
		}
		one := result.NewSoak(&l.seen, start, end, 0, l.window, 0)
		if l.soak == nil {
			l.soak = one
		} else {
			l.soak.Extend(one)
		}
		// What follows the window stays, and the interval before it: the next window's
		// first is timed from its end (an interval is in the window its middle is in).
		ivs, prev, j := l.seen.Intervals, 0.0, len(l.seen.Intervals)
		for i := range ivs {
			if (prev+ivs[i].TS)/2 >= end {
				j = i
				break
			}
			prev = ivs[i].TS
		}
		l.seen.Intervals = ivs[max(j-1, 0):]
		logWindow(l.log, l.soak)
		if l.live != nil {
			c := *l.soak
			c.Windows, c.Reasons = slices.Clone(c.Windows), slices.Clone(c.Reasons)
			l.live(&c)
		}
	}
}

// rssText is a window's broker RSS for a progress line ("": not watched).
func rssText(w *result.SoakWindow) string {
	if w.BrokerRSSBytes == 0 {
		return ""
	}
	return fmt.Sprintf(", broker RSS %.1f MiB", float64(w.BrokerRSSBytes)/(1<<20))
}
