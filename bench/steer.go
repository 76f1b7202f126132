package bench

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// A steerable run (Runner.Steerable: the live API's) records its plan's rate as a stage from
// the start of publishing, so that a change made while it publishes (Runner.Steer) is a
// stage of its own: the change takes effect at an interval's boundary, ends the stage it
// falls in there, and starts one at the new rate (0: a pause) that lasts to the end of
// publishing or the next change. Every interval lies in one stage, and the stages' figures
// are those of their intervals (result.Result.SummarizeStages), so that they add up to the
// run's across a change as across the stages of --stages.

// SteerLead is at least how long after a request a change takes effect (the next interval
// boundary after it): time for the change to reach every worker process.
const SteerLead = 250 * time.Millisecond

// ErrNotPublishing is Steer's error outside the run's publishing: before it started (the
// connect phase) and after it ended.
var ErrNotPublishing = errors.New("the run is not publishing: a rate can change only while it publishes")

// steering is what Steer changes: the engine's rate and the run's stages.
type steering struct {
	eng   *reactor.Engine
	clock *stageClock
	base  float64 // the rate of each publisher the schedule was built for (scale 1)
}

// steerSlot holds a run's steering while it publishes (nil otherwise).
type steerSlot = atomic.Pointer[steering]

// MaxRate returns the highest rate of each publisher a steerable run can be given: the
// rate its schedule was built for (the plan's publish_rate, a staged run's peak); 0 when
// the run publishes nothing at a rate.
func (cr *Runner) MaxRate() float64 { return cr.BaseRate }

// SteerBoundary returns the instant a change asked now takes effect: the first interval
// boundary of the run's publishing at least SteerLead from now. Its error is
// ErrNotPublishing outside the run's publishing.
func (cr *Runner) SteerBoundary() (time.Time, error) {
	s := cr.steer.Load()
	if s == nil {
		return time.Time{}, ErrNotPublishing
	}
	return s.clock.boundary(time.Now().Add(SteerLead)), nil
}

// Steer changes each publisher's rate to rate (messages per second; 0 pauses publishing)
// at at, an interval boundary (SteerBoundary, or the parent's for a worker), as a new stage
// made by source (e.g. "api"). It refuses a rate that is not a number, negative or above
// MaxRate, and a change outside the run's publishing (ErrNotPublishing) or at or after its
// end. Safe for concurrent use with the run.
func (cr *Runner) Steer(at time.Time, rate float64, source string) error {
	if err := CheckSteerRate(rate, cr.MaxRate()); err != nil {
		return err
	}
	s := cr.steer.Load()
	if s == nil {
		return ErrNotPublishing
	}
	at, err := s.clock.steer(at, rate, source)
	if err != nil {
		return err
	}
	return s.eng.SetRate(at, rate/s.base, 0)
}

// RateNow returns each publisher's rate now by the run's stages; its error is
// ErrNotPublishing outside the run's publishing.
func (cr *Runner) RateNow() (float64, error) {
	s := cr.steer.Load()
	if s == nil {
		return 0, ErrNotPublishing
	}
	return s.clock.rateAt(time.Now()), nil
}

// CheckSteerRate refuses a rate of each publisher that is not a number, negative, or above
// ceiling (the rate the run's schedule was built for), saying why.
func CheckSteerRate(rate, ceiling float64) error {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return fmt.Errorf("rate %v: want a number of messages per second, 0 or more", rate)
	}
	if rate > ceiling {
		return fmt.Errorf("rate %v/s per publisher: above %v/s, the rate this run's schedule was built for "+
			"(its publish_rate, or its stages' peak); run with a higher publish_rate to go higher", rate, ceiling)
	}
	return nil
}

// StagePlan is a run's stages as the parent of its worker processes keeps them to steer
// them: the same stages and boundaries as each worker's, from the workers' common start of
// publishing, without an engine.
type StagePlan struct {
	clock   *stageClock
	ceiling float64
}

// NewStagePlan returns the stages of a run of stages (none: its one rate, base, for d)
// whose publishing starts at start, with intervals of every; base is the rate its schedule
// was built for.
func NewStagePlan(stages []scenario.Stage, d time.Duration, base float64, start time.Time, every time.Duration) *StagePlan {
	if len(stages) == 0 {
		stages = implicitStages(d, base)
	}
	return &StagePlan{clock: newStageClock(nil, stages, start, every), ceiling: base}
}

// Boundary returns the instant a change asked now takes effect (Runner.SteerBoundary).
func (p *StagePlan) Boundary() time.Time { return p.clock.boundary(time.Now().Add(SteerLead)) }

// Steer records the change every worker makes at at (Runner.Steer), refusing what they
// would.
func (p *StagePlan) Steer(at time.Time, rate float64, source string) error {
	if err := CheckSteerRate(rate, p.ceiling); err != nil {
		return err
	}
	_, err := p.clock.steer(at, rate, source)
	return err
}

// RateAt returns each publisher's rate at t by the stages.
func (p *StagePlan) RateAt(t time.Time) float64 { return p.clock.rateAt(t) }

// rateAt returns each publisher's rate at t: its stage's, along a ramp's line; 0 outside
// the stages.
func (c *stageClock) rateAt(t time.Time) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, st := range c.stages {
		if t.Before(c.bounds[i]) || !t.Before(c.bounds[i+1]) {
			continue
		}
		if !st.Ramp || st.Duration <= 0 {
			return st.PublishRate
		}
		prev := 0.0
		if i > 0 {
			prev = c.stages[i-1].PublishRate
		}
		return prev + float64(t.Sub(c.bounds[i]))/float64(st.Duration)*(st.PublishRate-prev)
	}
	return 0
}

// implicitStages are the stages of a steerable run without stages of its own: one, its
// plan's rate for its duration.
func implicitStages(d time.Duration, rate float64) []scenario.Stage {
	return []scenario.Stage{{Duration: d, PublishRate: rate}}
}

// boundary returns the first interval boundary from the start of publishing at or after t.
func (c *stageClock) boundary(t time.Time) time.Time {
	if !t.After(c.start) || c.every <= 0 {
		return c.start
	}
	k := (t.Sub(c.start) + c.every - 1) / c.every
	return c.start.Add(k * c.every)
}

// steer ends the stage that holds at there and starts one at rate from at to the end of the
// last stage (the stages after at are dropped: the change holds to the end), made by source.
// at is taken to the nearest interval boundary, which it returns.
func (c *stageClock) steer(at time.Time, rate float64, source string) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.every > 0 && at.After(c.start) { // its boundary as this process times it (a worker's parent's is µs off)
		at = c.start.Add(at.Sub(c.start).Round(c.every))
	}
	end := c.bounds[len(c.bounds)-1]
	if !at.Before(end) {
		return at, fmt.Errorf("%w: its publishing ends at %s, before the change would (%s)", ErrNotPublishing,
			end.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	if at.Before(c.start) {
		at = c.start
	}
	i := 0
	for i+1 < len(c.bounds)-1 && !at.Before(c.bounds[i+1]) {
		i++
	}
	keep := i // stages before at
	if at.After(c.bounds[i]) {
		st := &c.stages[i]
		if st.Ramp { // cut short: it reached the rate of its line at at
			prev := 0.0
			if i > 0 {
				prev = c.stages[i-1].PublishRate
			}
			f := float64(at.Sub(c.bounds[i])) / float64(st.Duration)
			st.PublishRate = prev + f*(st.PublishRate-prev)
		}
		st.Duration = at.Sub(c.bounds[i])
		keep = i + 1
	}
	for len(c.sources) < len(c.stages) {
		c.sources = append(c.sources, "")
	}
	c.stages = append(c.stages[:keep:keep], scenario.Stage{Duration: end.Sub(at), PublishRate: rate})
	c.sources = append(c.sources[:keep:keep], source)
	c.bounds = append(c.bounds[:1:1], make([]time.Time, len(c.stages))...)
	for k, st := range c.stages {
		c.bounds[k+1] = c.bounds[k].Add(st.Duration)
	}
	return at, nil
}

// StageDefs returns the run's stages as they stand (their definitions: index, rate, ramp,
// start and duration from the start of publishing, source), once it publishes; nil before.
func (cr *Runner) StageDefs() []result.Stage {
	c := cr.clock.Load()
	if c == nil {
		return nil
	}
	return c.defs()
}

// StageDefs returns the stages as they stand (Runner.StageDefs).
func (p *StagePlan) StageDefs() []result.Stage { return p.clock.defs() }

// defs returns the stages' definitions.
func (c *stageClock) defs() []result.Stage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]result.Stage, len(c.stages))
	for i, st := range c.stages {
		out[i] = result.Stage{Index: i, PublishRate: st.PublishRate, Ramp: st.Ramp,
			StartS: c.bounds[i].Sub(c.start).Seconds(), DurationS: st.Duration.Seconds()}
		if i < len(c.sources) {
			out[i].Source = c.sources[i]
		}
	}
	return out
}
