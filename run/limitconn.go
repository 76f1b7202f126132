package run

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// A search that varies the connection rate (a Connections scenario) steps the connect
// phase's pace: each step dials clients never connected before at its rate for --step,
// then the phase pauses until every dial has its verdict, and the step is judged over its
// window: its connect latency, failed connects and dropped connections, and whether the
// rate it asked for was established. The clients stay connected; every step takes new
// ones, so the scenario's clients bound the search, which ends ("clients_exhausted") when
// the next step needs more than are left.

// prepareConnectLimit is prepareLimit for a connect-rate search of a scenario of clients.
func prepareConnectLimit(s *scenario.Scenario, clients int, lo *searchOptions) error {
	if lo.StartRate == 0 {
		lo.StartRate = s.Parameters.ConnectionRate
	}
	if lo.MaxRate == 0 {
		lo.MaxRate = 1000 * lo.StartRate
	}
	first := math.Ceil(lo.StartRate * lo.Step.Seconds())
	switch {
	case lo.StartRate <= 0:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s: want a rate above 0 (connections per second; the scenario's connection_rate is 0: as fast as possible)", number(lo.StartRate)))
	case lo.StartRate > lo.MaxRate:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s is above {limit.max_rate} %s", number(lo.StartRate), number(lo.MaxRate)))
	case first > float64(clients):
		return usage(spec.Errorf("limit.start_rate", "the first step needs %s clients ({limit.start_rate} %s for {limit.step} %v), the scenario has %s: "+
			"raise parameters.clients, or lower {limit.start_rate} or {limit.step}", countfmt.Thousands(int64(first)), number(lo.StartRate), lo.Step,
			countfmt.Thousands(int64(clients))))
	}
	p := &s.Parameters
	p.ConnectionRate = lo.StartRate
	p.Stages = nil
	p.Warmup = 0
	p.Duration = lo.MaxDuration
	return nil
}

// controlConnect runs the search on a paused connect phase, its steps starting on whole
// intervals (seconds from runStart).
func (s *search) controlConnect(ctx context.Context, cc bench.ConnectControl, runStart time.Time) {
	at := runStart.Add(time.Since(runStart).Truncate(time.Second) + 2*time.Second)
	room := func(rate float64) bool {
		used := cc.ConnectPending()
		for _, iv := range s.seen.Intervals {
			used += iv.Connected + iv.Failed
		}
		// A loop dials what is due within its grain (at most 8 ms) at once: a step may dial
		// that much more than rate × step.
		return float64(used)+math.Ceil(rate*(s.lo.Step.Seconds()+0.01)) <= float64(s.clients)
	}
	s.climb(ctx, at, room, func(rate float64, at time.Time) (*result.LimitStep, time.Time, bool) {
		return s.probeConnect(ctx, cc, rate, at, runStart)
	})
}

// sleepUntil waits until t; false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// probeConnect dials at rate from at for a step, then pauses the connect phase until every
// dial of the step has its verdict (at least Pause, at most bench.MaxDrain more), and judges the step:
// the rate established over its window (after Settle), and the connect latency, failures
// and dropped connections from Settle through the pause (a slow connect arrives late).
func (s *search) probeConnect(ctx context.Context, cc bench.ConnectControl, rate float64, at, runStart time.Time) (_ *result.LimitStep, next time.Time, ok bool) {
	lo := &s.lo
	end, resume := at.Add(lo.Step), at.Add(lo.Step+lo.Pause)
	rel := func(t time.Time) float64 { return t.Sub(runStart).Seconds() }
	// The intervals wait in their channel while the step runs (it holds a minute's).
	if !sleepUntil(ctx, at) {
		return nil, next, false
	}
	s.stepStarts(rate)
	fmt.Fprintf(s.log, "limit: step %d: %s connections/s for %v\n", len(s.out.Steps)+1, report.RateText(rate), lo.Step)
	wait0, ok0 := tuning.SelfRunDelay()
	t0 := time.Now()
	if err := cc.SetConnectRate(rate); err != nil {
		fmt.Fprintf(s.log, "limit: cannot set the connect rate: %v\n", err)
	}
	if !sleepUntil(ctx, end) {
		cc.PauseConnect()
		return nil, next, false
	}
	cc.PauseConnect()
	// until every dial has its verdict and an interval passed in which none connected
	resume, ok = s.pause(ctx, resume, runStart, rel, func(last *result.Interval) bool {
		return cc.ConnectPending() == 0 && last.Connected == 0 && last.Failed == 0
	})
	if !ok {
		return nil, next, false
	}
	wait1, ok1 := tuning.SelfRunDelay()
	win := result.Window(&s.seen, rel(at.Add(lo.Settle)), rel(end))
	tail := result.Window(&s.seen, rel(at.Add(lo.Settle)), rel(resume))
	all := result.Window(&s.seen, rel(at), rel(resume))
	win.ConnectLatencyUS = tail.ConnectLatencyUS
	win.Connections.Failed = all.Connections.Failed
	win.BrokerStalled = all.BrokerStalled
	st := &result.LimitStep{Index: len(s.out.Steps), Rate: rate, PerClient: rate, StageSummary: win}
	s.cpu(st, rel(at.Add(lo.Settle)), rel(end))
	if span := time.Since(t0).Seconds(); ok0 && ok1 && span > 0 {
		st.RunDelayShare = (wait1 - wait0).Seconds() / span
	}
	s.judge(st)
	if c := st.Connections.ConnectPerS; c < offeredShare*rate {
		st.OK = false
		st.Failed = append(st.Failed, fmt.Sprintf("connect rate not kept: %s connections/s established of %s", report.RateText(c),
			report.RateText(rate)))
	}
	verdict := s.stalled(st, rel(at))
	fmt.Fprintf(s.log, "limit: step %d: %s connections/s established %s, connect p99 %s, failed %d: %s\n", st.Index+1,
		report.RateText(rate), report.RateText(st.Connections.ConnectPerS), result.Micros(st.ConnectLatencyUS.P99),
		st.Connections.Failed, verdict)
	s.out.Steps = append(s.out.Steps, *st)
	return &s.out.Steps[len(s.out.Steps)-1], resume, true
}
