package bench

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// stageDefs is a compact form of stages: "DURATION:RATE[ramp][/source]".
func stageDefs(st []result.Stage) string {
	s := ""
	for _, x := range st {
		ramp := ""
		if x.Ramp {
			ramp = "ramp"
		}
		s += fmt.Sprintf("%v@%v:%v%s/%s ", x.DurationS, x.StartS, x.PublishRate, ramp, x.Source)
	}
	return s
}

// TestStageSteer: a change ends the stage that holds it there (a ramp cut short at the rate
// its line reached) and starts one to the end of the last stage, dropping the planned
// stages after it; a change at a stage's start replaces that stage; an instant a few ms off
// a boundary is taken to it; one at or after the end is refused as not publishing; the rate
// at an instant follows the stages; rates out of bounds are refused with a reason.
func TestStageSteer(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	p := NewStagePlan([]scenario.Stage{{Duration: 10 * time.Second, PublishRate: 100},
		{Duration: 10 * time.Second, PublishRate: 200, Ramp: true}, {Duration: 10 * time.Second, PublishRate: 50}},
		0, 200, t0, time.Second)
	if r := p.RateAt(t0.Add(15 * time.Second)); r != 150 {
		t.Errorf("rate half-way up the ramp: %v, want 150", r)
	}
	if err := p.Steer(t0.Add(15*time.Second+3*time.Millisecond), 40, "api"); err != nil {
		t.Fatal(err)
	}
	if got, want := stageDefs(p.StageDefs()), "10@0:100/ 5@10:150ramp/ 15@15:40/api "; got != want {
		t.Errorf("after a change in the ramp: %s, want %s", got, want)
	}
	if err := p.Steer(t0.Add(15*time.Second), 0, "api"); err != nil { // at the new stage's start: replaces it
		t.Fatal(err)
	}
	if got, want := stageDefs(p.StageDefs()), "10@0:100/ 5@10:150ramp/ 15@15:0/api "; got != want {
		t.Errorf("after a change at a stage's start: %s, want %s", got, want)
	}
	if r := p.RateAt(t0.Add(20 * time.Second)); r != 0 {
		t.Errorf("rate in the pause: %v", r)
	}
	if err := p.Steer(t0.Add(30*time.Second), 10, "api"); !errors.Is(err, ErrNotPublishing) {
		t.Errorf("a change at the end: %v, want ErrNotPublishing", err)
	}
	for _, rate := range []float64{-1, 200.5, 1e9} {
		if err := p.Steer(t0.Add(20*time.Second), rate, "api"); err == nil {
			t.Errorf("rate %v accepted", rate)
		}
	}
	if got := p.Boundary(); got.Sub(t0)%time.Second != 0 || time.Until(got) < SteerLead {
		t.Errorf("boundary %v: not a whole interval from the start at least %v ahead", got, SteerLead)
	}
}
