package run

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// searchOptions are the settings of a search for the broker's limit (Limit), its
// defaults filled in (newSearchOptions). Rates are totals, messages per second offered by
// every publisher together.
type searchOptions struct {
	// SLO are threshold expressions over a step's summary (result.StageSummary's paths:
	// latency_us.p99<50000, messages.lost==0, throughput.receive_per_s>=...).
	SLO []string
	// StartRate is the first step's rate (0: the scenario's, publish_rate × publishers);
	// MaxRate the highest the search tries (0: 1000 × the start rate, at most what the
	// publishers send: scenario.MaxPublishRate each).
	StartRate, MaxRate float64
	// Precision is where the bisection stops: first failed / sustained - 1 at most this.
	// Factor is the geometric step up before a step fails.
	Precision, Factor float64
	// Step is how long each rate is held, Settle how much of its start is not judged,
	// Pause how long the schedule idles after it so that what is in flight arrives before
	// the next step: whole seconds, the intervals' length.
	Step, Settle, Pause time.Duration
	// MaxDuration bounds the search.
	MaxDuration time.Duration
	// Confirm repeats a step that failed, once, at the same rate: the search goes by the
	// repeat (the first is kept, marked overruled when the repeat held); and it holds the
	// answer once more before giving it (climb).
	Confirm bool
	// Vary is the rate field varied: varyPublishRate or, for a Connections scenario,
	// varyConnectionRate.
	Vary string
	// Kind is what the search finds: result.KindPublishRate, KindConnectRate or
	// KindConnections (a count: its rates are connections held at once).
	Kind string
	// Sustain, when above 0, is how long the answer is held after the search (a soak),
	// judged in windows of Window.
	Sustain, Window time.Duration
	// SoakLive, if set, is given the hold's soak so far as each window ends (the live
	// metrics).
	SoakLive func(*result.Soak)
}

// The rate fields a search varies: the publishers' rate (messages per second of each
// publisher, the search's rates being their total) and a Connections scenario's connect
// rate (connections per second of the whole run). A connect-rate search dials clients
// that were never connected at each step's rate, so the scenario's clients bound it.
const (
	varyPublishRate    = spec.VaryPublishRate
	varyConnectionRate = result.VaryConnectionRate
)

// newSearchOptions are the settings of the Spec's search, its defaults filled in.
func newSearchOptions(l *spec.Limit) *searchOptions {
	lo := &searchOptions{SLO: l.SLO, StartRate: l.StartRate, MaxRate: l.MaxRate, Precision: cmpPositive(l.Precision, 0.05),
		Factor: cmpPositive(l.Factor, 2), Confirm: l.Confirms(), Vary: l.Vary, Kind: l.Kind()}
	lo.Step, lo.Settle, lo.Pause, lo.MaxDuration = l.Durations()
	switch lo.Kind {
	case result.KindConnectRate:
		lo.Vary = varyConnectionRate
	case result.KindConnections:
		lo.Vary = ""
	default:
		lo.Vary = varyPublishRate
	}
	return lo
}

// number is a rate as it was given, in plain digits (never e-notation): 80000000, 12.5.
func number(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func cmpPositive(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// prepareLimit checks a search's options against its scenario (est its plan's estimate)
// before any socket (each problem a usage error that names the field), and sets s up for
// it: publishing at the start rate for the whole search, no warm-up, no stages; or,
// varying the connection rate, connecting at the start rate.
func prepareLimit(s *scenario.Scenario, est scenario.Estimate, lo *searchOptions) error {
	pubs := est.Publishers
	if lo.Kind == result.KindConnections {
		if s.Type != scenario.TypeConnections {
			return usage(spec.Errorf("limit.find", "{limit.find} %s: only for a Connections scenario (this one, type %s, publishes)", lo.Kind, s.Type))
		}
		if err := checkSLOKind(lo.Kind, lo.SLO); err != nil {
			return err
		}
		if err := result.CheckStageThresholdPaths(lo.SLO); err != nil {
			return usage(spec.Errorf("limit.slo", "{limit.slo}: %v", err))
		}
		return prepareCountLimit(s, est.Clients, lo)
	}
	switch {
	case lo.Vary == varyConnectionRate && s.Type != scenario.TypeConnections:
		return usage(spec.Errorf("limit.vary", "{limit.vary} %s: only for a Connections scenario (this one, type %s, publishes: vary %s)",
			lo.Vary, s.Type, varyPublishRate))
	case lo.Vary == varyPublishRate && pubs == 0:
		return usage(spec.Errorf("limit.vary", "the scenario (type %s) has no publishers: limit varies the publish rate, and there is none to vary"+
			" (a Connections scenario: {limit.vary} %s)", s.Type, varyConnectionRate))
	}
	if err := checkSLOKind(lo.Kind, lo.SLO); err != nil {
		return err
	}
	if err := result.CheckStageThresholdPaths(lo.SLO); err != nil {
		return usage(spec.Errorf("limit.slo", "{limit.slo}: %v", err))
	}
	if lo.Vary == varyConnectionRate {
		return prepareConnectLimit(s, est.Clients, lo)
	}
	if lo.StartRate == 0 {
		lo.StartRate = s.Parameters.PublishRate * float64(pubs)
	}
	most := scenario.MaxPublishRate * float64(pubs) // what the publishers can send together
	if lo.MaxRate == 0 {
		// 1000 × the start rate, within what the publishers send (a start rate above that
		// is refused as such)
		lo.MaxRate = max(min(1000*lo.StartRate, most), lo.StartRate)
	}
	switch {
	case lo.StartRate <= 0:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s: want a rate above 0 (messages per second, all publishers together)", number(lo.StartRate)))
	case lo.StartRate > most:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s is %s per publisher, above the most one publisher sends (%s): lower it or add publishers",
			number(lo.StartRate), report.RateText(lo.StartRate/float64(pubs)), countfmt.Thousands(scenario.MaxPublishRate)))
	case lo.StartRate > lo.MaxRate:
		return usage(spec.Errorf("limit.start_rate", "{limit.start_rate} %s is above {limit.max_rate} %s", number(lo.StartRate), number(lo.MaxRate)))
	case lo.MaxRate > most:
		return usage(spec.Errorf("limit.max_rate", "{limit.max_rate} %s is %s per publisher, above the most one publisher sends (%s): lower it or add publishers",
			number(lo.MaxRate), report.RateText(lo.MaxRate/float64(pubs)), countfmt.Thousands(scenario.MaxPublishRate)))
	}
	p := &s.Parameters
	p.PublishRate = lo.StartRate / float64(pubs)
	p.Stages = nil
	p.Warmup = 0
	p.Duration = lo.MaxDuration
	return nil
}

// Limit runs plan (prepared by prepareLimit) once, connecting once, and searches for the
// highest rate its broker sustains within lo.SLO: each probe a step of that run. It runs
// in this process (a search changes the rate of one engine). The result has Limit; the
// error is errThreshold's kind when even the start rate failed.
func searchLimit(ctx context.Context, plan *scenario.Plan, o options, lo searchOptions) (*result.Result, error) {
	if o.Procs > 1 {
		return nil, usage(spec.Errorf("procs", "{procs} %d: limit runs in one process (it changes the rate of one engine); "+
			"give {procs} 1, or fewer clients than one process holds", o.Procs))
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	est := plan.Estimate()
	pubs := est.Publishers
	s := &search{lo: lo, pubs: pubs, clients: est.Clients, pace: plan.Scenario().Parameters.ConnectionRate, log: o.Log, ivs: make(chan result.Interval, 64),
		out: &result.Limit{Precision: lo.Precision, Publishers: pubs, Vary: lo.Vary, Kind: lo.Kind, SLO: lo.SLO}}
	s.onStep = o.OnStep
	prev := o.OnInterval
	o.OnInterval = func(iv result.Interval, snap *result.Snapshot) {
		if prev != nil {
			prev(iv, snap)
		}
		select {
		case s.ivs <- iv:
		default: // the search is not reading (it ended): nothing waits on it
		}
	}
	o.tune = func(r *bench.Runner) {
		r.Warmup, r.Stages = 0, nil
		if lo.Kind == result.KindConnections {
			r.ConnectController, r.Duration = s.controlCount, 0 // no hold after the search
			return
		}
		if lo.Vary == varyConnectionRate {
			r.ConnectController, r.Duration = s.controlConnect, 0 // no hold after the search
			return
		}
		r.Controller = s.control
	}
	res, err := execute(ctx, plan, o)
	if res == nil {
		return nil, err
	}
	s.finish(res)
	res.Limit = s.out
	res.Soak = s.soak
	if gone := s.out.Steps; err == nil && s.out.Ended == "broker_gone" {
		st := gone[len(gone)-1]
		err = fmt.Errorf("the broker went away during the search, at step %d (%s %s): %s; the search stopped there, its steps before it kept as they ran",
			st.Index+1, report.RateText(st.Rate), s.out.Unit(), st.Failed[0])
	}
	if err == nil && !s.out.Found {
		err = kind(errThreshold, spec.Errorf("limit.start_rate", "even the start rate %s %s failed the SLO: lower {limit.start_rate}", report.RateText(lo.StartRate), s.out.Unit()))
	}
	return res, err
}

// search is the state of one search: its steps so far and the intervals it has seen.
type search struct {
	lo      searchOptions
	pubs    int
	clients int // the plan's: what a connect-rate search can dial
	log     io.Writer
	ivs     chan result.Interval
	onStep  func(index int, rate float64) // options.OnStep (nil: nobody)
	seen    result.Result                 // the intervals so far
	out     *result.Limit
	last    *result.LimitStep // the first failed step, for the verdict
	pace    float64           // a count search's: the connect rate its steps dial at
	base    stepMemory        // a count search's: the broker's memory before its first step
	next    time.Time         // when the step after the last may start
	soak    *result.Soak      // the answer held after the search (Sustain)
	holding bool              // the search had ended and its answer was being held
	// fromEndpoints: a step's broker process CPU came from its host's endpoints
	// (--broker-metrics' process-exporter), not its pid.
	fromEndpoints bool
}

// control runs the search on a running schedule: step, judge, step again; then, with
// Sustain, holds the answer.
func (s *search) control(ctx context.Context, rc bench.RateControl, pubStart, runStart time.Time) {
	s.next = pubStart
	s.climb(ctx, pubStart, nil, func(rate float64, at time.Time) (*result.LimitStep, time.Time, bool) {
		st, next, ok := s.probe(ctx, rc, rate, at, runStart)
		if ok {
			s.next = next
		}
		return st, next, ok
	})
	if s.lo.Sustain > 0 {
		s.hold(ctx, rc, runStart)
	}
}

// climb runs the search from at: steps up from the start rate until one fails, then
// bisects, each step probe's (which returns when the next may start, and false when ctx
// ended). room, if set, says whether a step at a rate can still run (the clients left).
//
// With Confirm, a step that fails is repeated at its rate and the search goes by the
// repeat; and once the precision is reached, the answer is held once more before it is
// given: if two of the steps at its rate have failed by then (that check and its repeat,
// or a failure the first time and one now), the steps that held there are overruled and
// the bisection goes on below it. One step spoilt by the host, or one that held in a quiet
// moment of a shared host, then does not make the answer; a rate that fails every other
// time is not sustained.
func (s *search) climb(ctx context.Context, at time.Time, room func(rate float64) bool,
	probe func(rate float64, at time.Time) (*result.LimitStep, time.Time, bool)) {
	lo := &s.lo
	deadline := at.Add(lo.MaxDuration)
	fits := func(from time.Time, rate float64) bool {
		return !from.Add(lo.Step+lo.Pause).After(deadline) && (room == nil || room(rate))
	}
	// try probes rate, and again when it failed (Confirm): the second decides.
	try := func(rate float64) (*result.LimitStep, bool) {
		st, next, ok := probe(rate, at)
		if ok && !st.OK && !st.BrokerGone && lo.Confirm && fits(next, rate) {
			first := len(s.out.Steps) - 1
			st, next, ok = probe(rate, next)
			if ok && st.OK {
				s.out.Steps[first].Overruled = true
			}
		}
		if ok {
			at = next
		}
		return st, ok
	}
	good, bad, checked := 0.0, 0.0, 0.0
	var held []float64 // the rates that held, for a fall back below an answer overruled
	rate := lo.StartRate
	s.out.Ended = "precision"
	for {
		if at.Add(lo.Step + lo.Pause).After(deadline) {
			s.out.Ended = "max_duration"
			return
		}
		if room != nil && !room(rate) {
			s.out.Ended = "clients_exhausted"
			return
		}
		st, ok := try(rate)
		if !ok { // the context ended
			s.out.Ended = "interrupted"
			return
		}
		if st.BrokerGone { // nothing more to measure: the steps so far stand as they ran
			s.out.Ended = "broker_gone"
			return
		}
		if st.OK {
			good = max(good, rate)
			held = append(held, rate)
		} else if bad == 0 || rate < bad {
			bad = rate
			s.last = st
		}
	decide:
		switch {
		case bad == lo.StartRate:
			s.out.Ended = "start_failed"
			return
		case bad == 0 && rate >= lo.MaxRate:
			s.out.Ended = "max_rate"
			return
		case bad == 0:
			rate = min(rate*lo.Factor, lo.MaxRate)
		case bad/good-1 <= lo.Precision:
			if !lo.Confirm || checked == good || lo.Kind == result.KindConnections {
				return // a count search holds more than good already: it is not held again
			}
			if !fits(at, good) { // the answer is not held once more: it is given unconfirmed
				s.out.Ended = "max_duration"
				return
			}
			checked = good
			st, ok := try(good)
			failed, last := 0, -1 // the steps at the answer's rate that failed, the search over
			for i := range s.out.Steps {
				if x := &s.out.Steps[i]; x.Rate == good && !x.OK {
					failed, last = failed+1, i
				}
			}
			switch {
			case !ok:
				s.out.Ended = "interrupted"
				return
			case st.BrokerGone:
				s.out.Ended = "broker_gone"
				return
			case st.OK && failed < 2:
				s.out.Confirmed = true
				return
			}
			// Two steps at this rate failed (its check and its repeat, or one of them and
			// a failure the first time): the rate is not sustained. The search goes by its
			// failures: its held steps are overruled, its failed ones stand.
			for i := range s.out.Steps {
				if x := &s.out.Steps[i]; x.Rate == good {
					x.Overruled = x.OK
				}
			}
			bad, s.last = good, &s.out.Steps[last]
			good = 0
			for _, r := range held {
				if r < bad {
					good = max(good, r)
				}
			}
			goto decide
		default:
			rate = math.Sqrt(good * bad) // halfway on a log scale
		}
	}
}

// probe holds rate for a step from at, then pauses the schedule until what the broker
// still held has arrived (at least Pause, at most bench.MaxDrain more), and judges the step over the
// intervals that cover both: an overloaded broker's backlog is the step's, not the next
// one's. It returns the step and when the next may start; ok is false when ctx ended first.
func (s *search) probe(ctx context.Context, rc bench.RateControl, rate float64, at, runStart time.Time) (_ *result.LimitStep, next time.Time, ok bool) {
	lo := &s.lo
	scale := rate / lo.StartRate
	end, resume := at.Add(lo.Step), at.Add(lo.Step+lo.Pause)
	if err := rc.SetRate(at, scale, 0); err == nil {
		err = rc.SetRate(end, 0, 0)
		if err != nil {
			fmt.Fprintf(s.log, "limit: cannot pause the schedule: %v\n", err)
		}
	}
	s.stepStarts(rate)
	fmt.Fprintf(s.log, "limit: step %d: %s msg/s (%s per publisher) for %v\n", len(s.out.Steps)+1, report.RateText(rate),
		report.RateText(rate/float64(s.pubs)), lo.Step)
	rel := func(t time.Time) float64 { return t.Sub(runStart).Seconds() }
	wait0, ok0 := tuning.SelfRunDelay()
	t0 := time.Now()
	// until an interval in which nothing arrived nor was written (a QoS 1/2 re-send)
	resume, ok = s.pause(ctx, resume, runStart, rel, func(last *result.Interval) bool { return last.Received == 0 && last.Published == 0 })
	if !ok {
		return nil, next, false
	}
	wait1, ok1 := tuning.SelfRunDelay()
	win := result.Window(&s.seen, rel(at.Add(lo.Settle)), rel(end))
	kept := win.Messages                                // the judged window's: what was expected in it and what arrived in it
	all := result.Window(&s.seen, rel(at), rel(resume)) // the pause after it let the copies in flight arrive
	win.Messages = all.Messages
	win.BrokerStalled = all.BrokerStalled
	// The broker's own drops with its losses: its $SYS counter shows them up to a refresh
	// (sys_interval) late, in the pause.
	win.BrokerDropped = all.BrokerDropped
	st := &result.LimitStep{Index: len(s.out.Steps), Rate: rate, PerClient: rate / float64(s.pubs), StageSummary: win}
	s.cpu(st, rel(at.Add(lo.Settle)), rel(end))
	if span := time.Since(t0).Seconds(); ok0 && ok1 && span > 0 {
		st.RunDelayShare = (wait1 - wait0).Seconds() / span
	}
	s.judge(st)
	if w := st.Throughput.PublishPerS; w < offeredShare*rate {
		st.OK = false
		st.Failed = append(st.Failed, fmt.Sprintf("offered rate not kept: %s msg/s written of %s", report.RateText(w), report.RateText(rate)))
	}
	if e := kept.Expected; e > 0 && float64(kept.Received) < offeredShare*float64(e) {
		st.OK = false
		st.Failed = append(st.Failed, fmt.Sprintf("arrivals fell behind: %s msg/s arrived of %s expected (a backlog grew)",
			report.RateText(st.Throughput.ReceivePerS), report.RateText(float64(e)/max(st.Throughput.WindowS, 1e-9))))
	}
	verdict := s.stalled(st, rel(at))
	fmt.Fprintf(s.log, "limit: step %d: %s msg/s achieved %s, p99 %s, lost %d: %s\n", st.Index+1, report.RateText(rate),
		report.RateText(st.Throughput.ReceivePerS), result.Micros(st.LatencyUS.P99), st.Messages.Lost, verdict)
	s.out.Steps = append(s.out.Steps, *st)
	return &s.out.Steps[len(s.out.Steps)-1], resume, true
}

// gone marks st (the step that started from seconds into the run, its intervals seen
// through its pause) as the broker gone when it ended with no connection open while the
// run had had some open: the broker went away (stopped, crashed, its host gone) and did not
// take the clients back, so the step, and any after it, measure nothing of the broker.
func (s *search) gone(st *result.LimitStep, from float64) {
	ivs := s.seen.Intervals
	if len(ivs) == 0 || ivs[len(ivs)-1].Established != 0 {
		return
	}
	var open, dropped, failed int64 // the most open before the step ended; the step's drops and failed connects
	for i := range ivs {
		iv := &ivs[i]
		open = max(open, iv.Established)
		if iv.TS > from {
			dropped, failed = dropped+iv.Dropped, failed+iv.Failed
		}
	}
	if open == 0 {
		return
	}
	st.OK, st.BrokerGone = false, true
	why := fmt.Sprintf("broker gone: no connection open at the step's end (%s were open before; %s dropped in the step",
		countfmt.Thousands(open), countfmt.Thousands(dropped))
	if failed > 0 {
		why += fmt.Sprintf(", %s connects failed", countfmt.Thousands(failed))
	}
	st.Failed = append([]string{why + ")"}, st.Failed...)
}

// judge evaluates the SLO over st's summary: st holds when every expression does.
func (s *search) judge(st *result.LimitStep) {
	if err := st.EvaluateThresholds(s.lo.SLO); err != nil { // checked before the run
		fmt.Fprintf(s.log, "limit: %v\n", err)
	}
	st.OK = true
	for _, t := range st.Thresholds {
		if strings.HasPrefix(strings.TrimSpace(t.Expr), "broker.") && st.Broker == nil {
			st.OK = false // 0 for a figure nobody sampled would hold any ceiling
			st.Failed = append(st.Failed, t.Expr+" (the broker's figures were not sampled: give --broker-pid or --broker-metrics)")
			continue
		}
		if !t.OK {
			st.OK = false
			st.Failed = append(st.Failed, fmt.Sprintf("%s (was %s)", t.Expr, t.ValueText()))
		}
	}
}

// offeredShare is the share of a step's rate that must be written in its window, and of the
// copies expected in it that must arrive in it, for the step to hold: a schedule that falls
// behind has not offered the rate it names, and a broker whose backlog grows does not
// sustain it, whatever its latency and losses look like while the step lasts.
const offeredShare = 0.95

// pause waits until resume, then until the last interval is quiet (or bench.MaxDrain after
// resume), and returns the end of that interval; false when ctx ended first.
func (s *search) pause(ctx context.Context, resume, runStart time.Time, rel func(time.Time) float64,
	quiet func(last *result.Interval) bool) (time.Time, bool) {
	if !s.until(ctx, rel(resume)) {
		return resume, false
	}
	for {
		last := &s.seen.Intervals[len(s.seen.Intervals)-1]
		if quiet(last) || time.Since(resume) > bench.MaxDrain {
			break
		}
		if !s.until(ctx, last.TS+1) {
			return resume, false
		}
	}
	return runStart.Add(time.Duration(s.seen.Intervals[len(s.seen.Intervals)-1].TS * float64(time.Second))), true
}

// until reads intervals until one ends at or after t seconds into the run.
func (s *search) until(ctx context.Context, t float64) bool {
	for {
		if n := len(s.seen.Intervals); n > 0 && s.seen.Intervals[n-1].TS >= t-0.05 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case iv := <-s.ivs:
			s.seen.Intervals = append(s.seen.Intervals, iv)
		}
	}
}

// cpu sets the step's CPU figures: the averages of the intervals whose middle lies in
// [from, to).
func (s *search) cpu(st *result.LimitStep, from, to float64) {
	var n, nb, nh float64
	prev := 0.0
	for _, iv := range s.seen.Intervals {
		mid := (prev + iv.TS) / 2
		prev = iv.TS
		if mid < from || mid >= to {
			continue
		}
		n++
		st.ClientCPUPercent += iv.ClientCPUPercent
		if iv.BrokerCPUPercent > 0 { // its pid's, else its host's process endpoint's
			nb++
			st.BrokerCPUPercent += iv.BrokerCPUPercent
			if h := iv.BrokerHost; h != nil && h.HasProcess && h.ProcessCPUPercent == iv.BrokerCPUPercent {
				s.fromEndpoints = true
			}
			if q := iv.BrokerCPUQuota; q > 0 && (st.BrokerCPUQuota == 0 || q < st.BrokerCPUQuota) {
				st.BrokerCPUQuota = q
			}
		}
		if h := iv.BrokerHost; h != nil && h.HasHost {
			nh++
			st.BrokerHostCPUPercent += h.CPUPercent
		}
	}
	if n > 0 {
		st.ClientCPUPercent /= n
	}
	if nb > 0 {
		st.BrokerCPUPercent /= nb
	}
	if nh > 0 {
		st.BrokerHostCPUPercent /= nh
	}
}

// finish sets the answer from the steps and, from the first failed step's evidence, who
// set the limit.
func (s *search) finish(res *result.Result) {
	out := s.out
	switch {
	case res.Interrupted && out.Ended != "start_failed" && !s.holding: // an interrupted hold leaves the search's end as it was
		out.Ended = "interrupted"
	case !res.Interrupted && out.Ended == "interrupted":
		// Its context ended with the measure phase, at max_duration, in a step that ran
		// past it (a pause waiting for the broker to go quiet).
		out.Ended = "max_duration"
	}
	for _, st := range out.Steps {
		if st.Overruled || st.BrokerGone { // a step without the broker measured nothing of it
			continue
		}
		if st.OK && st.Rate > out.Sustained {
			out.Sustained, out.SustainedPerClient, out.Found = st.Rate, st.PerClient, true
		}
		if !st.OK && (out.FirstFailed == 0 || st.Rate < out.FirstFailed) {
			out.FirstFailed, out.FirstFailedPerClient = st.Rate, st.PerClient
		}
	}
	if out.Found && out.FirstFailed > 0 {
		out.Reached = out.FirstFailed/out.Sustained - 1
	}
	if s.lo.Kind == result.KindConnections && s.finishCount(res) {
		return
	}
	st := s.last
	if out.Ended == "clients_exhausted" && st == nil { // no step failed: no limit, only a floor
		out.LowerBound = true
		out.Fix = fmt.Sprintf("every step held until the scenario's %d clients ran out: no limit was found, and %s is a lower bound "+
			"for the broker's connect rate; raise parameters.clients, or shorten --step (each step dials rate × step new clients)",
			s.clients, report.RateText(out.Sustained)+" "+out.Unit())
	}
	if st == nil {
		return
	}
	out.FailedSLO = st.Failed
	// The step's verdict is judged as a run's (result.Judge), from the step's evidence and
	// the run's kernel findings.
	cores := float64(max(res.Host.Cores, 1))
	run := res.Evidence()
	e := result.Evidence{Failed: true, Calibration: res.Calibration, SharedHost: run.SharedHost, Kernel: run.Kernel}
	if p99 := time.Duration(st.ScheduleLagUS.P99) * time.Microsecond; p99 > result.SaturationLag {
		e.Late = fmt.Sprintf("schedule lag p99 %v > %v", p99, result.SaturationLag)
	}
	if st.ClientCPUPercent > 100*result.ClientCPUShare*cores {
		e.CPUBound = fmt.Sprintf("client CPU %.0f%% of its %d cores", st.ClientCPUPercent, int(cores))
	}
	if st.RunDelayShare >= result.RunDelayShare {
		e.Waited = fmt.Sprintf("the client's threads waited for a CPU %.0f%% of the step's time", 100*st.RunDelayShare)
	}
	if st.BrokerStalled.Stalled {
		e.Stalled = st.BrokerStalled.Evidence
	}
	// Copies the broker said it dropped by its own policy are its doing, however late the
	// subscribers read (a late reader fills its queue sooner: the evidence says so too). A
	// failure is confirmed by its repeat: the failed steps at its rate are one verdict's
	// evidence (at the knee one may lose 19 with 4 dropped by the broker, its repeat 1
	// with none counted yet).
	var brokerDropped, lost int64
	for i := range out.Steps {
		if x := &out.Steps[i]; !x.OK && !x.Overruled && x.Rate == st.Rate {
			brokerDropped, lost = brokerDropped+x.BrokerDropped, lost+x.Messages.Lost
		}
	}
	if brokerDropped > 0 && lost > 0 {
		e.Dropped = append(e.Dropped, fmt.Sprintf("the broker dropped %d messages by its own policy ($SYS publish/messages/dropped: "+
			"a subscriber's queue was full, max_queued_messages) of the %d lost in the failed steps at this rate", brokerDropped, lost))
	}
	var cpu []string // the broker's CPU, as context when it was not at its limit
	from := ""
	if s.fromEndpoints {
		from = " (from --broker-metrics)"
	}
	process := struct {
		limit      float64 // where its CPU's limit is: 100, a core, or its cgroup's quota
		line, busy string
	}{100, "broker process CPU %.0f%% of a core" + from, " over the step: the limit of a broker that runs on one thread (Mosquitto does)"}
	if q := st.BrokerCPUQuota; q > 0 && q < 1 { // a container's CPU limit: at its quota, not a core
		// within /proc's resolution over the step's window (a tick at each end)
		slack := 0.0
		if w := (s.lo.Step - s.lo.Settle).Seconds(); w > 0 {
			slack = 100 * 2 * tuning.ProcessCPUResolution().Seconds() / w
		}
		process.limit, process.line = 100*q-slack/result.BusyShare, "broker process CPU %.1f%% of a core"+from
		process.busy = fmt.Sprintf(" over the step: %.0f%% of the %.3g of a core its cgroup's CPU quota allows, its limit", st.BrokerCPUPercent/q, q)
	}
	for _, b := range []struct {
		p, limit   float64
		line, busy string
	}{
		{st.BrokerCPUPercent, process.limit, process.line, process.busy},
		{st.BrokerHostCPUPercent, 100, "broker host CPU %.0f%% of its CPUs", " over the step"},
	} {
		switch line := fmt.Sprintf(b.line, b.p); {
		case b.p >= result.BusyShare*b.limit:
			e.Busy = append(e.Busy, line+b.busy)
		case b.p > 0:
			cpu = append(cpu, line)
		}
	}
	v := result.Judge(e)
	out.LimitedBy, out.LowerBound = v.LimitedBy, v.LowerBound()
	out.Evidence = append(append(out.Evidence, v.Evidence...), cpu...)
	if len(out.Evidence) == 0 {
		out.Evidence = []string{v.Reason}
	}
	out.Evidence = append(out.Evidence, memoryEvidence(st.Broker, from)...)
	res.LimitedBy, res.LimitedByReason = v.LimitedBy, v.Reason // the search's answer is the run's
	switch v.LimitedBy {
	case "client":
		out.Fix = "the client set this limit, so it is a lower bound for the broker: run the load from more client hosts " +
			"(--shard on each) or a larger one, and not on the broker's host"
	case "host":
		out.Fix = "the host set this limit, so it is a lower bound for the broker: fix the kernel findings, or run on a quieter " +
			"host (dedicated vCPUs, no other work), not on the broker's host"
	}
}

// stepStarts tells options.OnStep that the next step starts at rate.
func (s *search) stepStarts(rate float64) {
	if s.onStep != nil {
		s.onStep(len(s.out.Steps), rate)
	}
}

// memoryEvidence is the broker's memory over a failed step, as context for its verdict:
// its process's resident set (from says where it came from when not its pid) and its host's memory in use
// and available (node_exporter); none where not sampled.
func memoryEvidence(b *result.StageBroker, from string) []string {
	var out []string
	if b == nil {
		return nil
	}
	if b.RSSBytes > 0 {
		out = append(out, fmt.Sprintf("broker process RSS %.1f MiB%s", b.RSSBytes/(1<<20), from))
	}
	if b.HostMemUsedBytes > 0 {
		out = append(out, fmt.Sprintf("broker host memory %.1f MiB in use, %.1f MiB available", b.HostMemUsedBytes/(1<<20),
			b.HostMemAvailableBytes/(1<<20)))
	}
	return out
}
