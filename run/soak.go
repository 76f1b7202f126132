package run

import (
	"context"
	"fmt"
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
		x := &part.Windows[len(part.Windows)-1]
		fmt.Fprintf(s.log, "soak: window %d: p99 %s, lost %d, refusals %d%s\n", k, result.Micros(x.LatencyUS.P99), x.Lost, x.Refusals(), rssText(x))
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

// rssText is a window's broker RSS for a progress line ("": not watched).
func rssText(w *result.SoakWindow) string {
	if w.BrokerRSSBytes == 0 {
		return ""
	}
	return fmt.Sprintf(", broker RSS %.1f MiB", float64(w.BrokerRSSBytes)/(1<<20))
}
