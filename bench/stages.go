package bench

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// A staged run (scenario parameters.stages) builds its schedule at the stages' peak rate
// (the plan's publish_rate) and scales it to each stage's rate with the engine's rate
// profile (reactor.Engine.SetRate): the connections stay up, the publishers re-phase at
// each boundary. Its intervals are aligned to the start of publishing, so that a stage
// boundary at a whole number of intervals falls between two intervals; each interval
// records its stage and what the schedule offered in it.

// setStageRates gives the engine the rate profile of stages for publishing that starts at
// start (base is the plan's rate of each publisher, the scale's 1). Call before
// StartPublishing: the first stage then shapes the schedule from its start.
func setStageRates(eng *reactor.Engine, stages []scenario.Stage, base float64, start time.Time) error {
	if base <= 0 {
		return fmt.Errorf("bench: staged run with publish rate %v", base)
	}
	at := start
	for i, st := range stages {
		scale := st.PublishRate / base
		var err error
		switch {
		case i == 0 && st.Ramp:
			// A first ramp climbs from 0: the schedule starts paused.
			if err = eng.SetRate(time.Time{}, 0, 0); err == nil {
				err = eng.SetRate(at, scale, st.Duration)
			}
		case i == 0:
			err = eng.SetRate(time.Time{}, scale, 0)
		case st.Ramp:
			err = eng.SetRate(at, scale, st.Duration)
		default:
			err = eng.SetRate(at, scale, 0)
		}
		if err != nil {
			return fmt.Errorf("cannot set the rate of stage %d: %w", i, err)
		}
		at = at.Add(st.Duration)
	}
	return nil
}

// stageClock is a staged run's stages in wall-clock time, from the start of publishing:
// it marks each interval with its stage and what the schedule offered in it.
type stageClock struct {
	eng *reactor.Engine
	// mu guards stages, sources and bounds, which a steered run changes (steer) while the
	// interval loop reads them.
	mu      sync.Mutex
	stages  []scenario.Stage
	sources []string    // who made each stage: "" the plan, else the steering's source
	start   time.Time   // publishing starts
	bounds  []time.Time // stage i is [bounds[i], bounds[i+1])
	every   time.Duration
	done    int64 // what the schedule made due before the previous interval's end
}

func newStageClock(eng *reactor.Engine, stages []scenario.Stage, start time.Time, every time.Duration) *stageClock {
	c := &stageClock{eng: eng, stages: slices.Clone(stages), start: start, every: every, bounds: []time.Time{start}}
	for _, st := range stages {
		c.bounds = append(c.bounds, c.bounds[len(c.bounds)-1].Add(st.Duration))
	}
	return c
}

// mark returns the mark of the interval [from, to): the stage its middle lies in (its slot
// is the recorderSource's), and what the schedule made due in it up to the end of the last
// stage.
func (c *stageClock) mark(from, to time.Time) (intervalMark, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m intervalMark
	mid := from.Add(to.Sub(from) / 2)
	for i := range c.stages {
		if !mid.Before(c.bounds[i]) && mid.Before(c.bounds[i+1]) {
			m.stage = &i
			break
		}
	}
	end := to
	if last := c.bounds[len(c.bounds)-1]; end.After(last) {
		end = last
	}
	n := c.eng.ScheduledBefore(end)
	offered := max(n-c.done, 0)
	c.done = max(n, c.done)
	return m, offered
}

// resultStages returns the stages for the result: each stage's window in the intervals'
// time (seconds from runStart), the first one's from the measure window's start (after a
// warm-up), and its definition. Their figures come from the intervals
// (Result.SummarizeStages).
func (c *stageClock) resultStages(runStart, measureFrom time.Time) []result.Stage {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]result.Stage, len(c.stages))
	for i, st := range c.stages {
		from := c.bounds[i]
		if measureFrom.After(from) {
			from = measureFrom
		}
		out[i] = result.Stage{Index: i, PublishRate: st.PublishRate, Ramp: st.Ramp,
			StartS: c.bounds[i].Sub(c.start).Seconds(), DurationS: st.Duration.Seconds()}
		if i < len(c.sources) {
			out[i].Source = c.sources[i]
		}
		out[i].FromS = from.Sub(runStart).Seconds()
		out[i].ToS = c.bounds[i+1].Sub(runStart).Seconds()
	}
	return out
}

// intervalMark is what a run knows of an interval besides its snapshot: its stage (nil
// outside a staged run's stages) and its slot (0 in a run not aligned to publishing).
type intervalMark struct {
	stage *int
	slot  int
}
