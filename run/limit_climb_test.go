package run

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// climbWith runs a search's climb (Confirm on) over a scripted broker: verdicts[rate] are
// the verdicts of the successive steps at that rate (a rate without a script, or past its
// end, holds below limit and fails above it). It returns the steps and the answer.
func climbWith(t *testing.T, limit float64, verdicts map[float64][]bool) *result.Limit {
	t.Helper()
	return climbFor(t, time.Hour, limit, verdicts)
}

// climbFor is climbWith with a search bounded by most (limit.max_duration): each step and
// its pause take 3 s.
func climbFor(t *testing.T, most time.Duration, limit float64, verdicts map[float64][]bool) *result.Limit {
	t.Helper()
	s := &search{lo: searchOptions{StartRate: 1000, MaxRate: 1e6, Precision: 0.25, Factor: 2, Step: 2 * time.Second,
		Pause: time.Second, MaxDuration: most, Confirm: true}, out: &result.Limit{Precision: 0.25}}
	tried := map[float64]int{}
	s.climb(context.Background(), time.Unix(0, 0), nil, func(rate float64, at time.Time) (*result.LimitStep, time.Time, bool) {
		r := math.Round(rate)
		ok := r < limit
		if v := verdicts[r]; tried[r] < len(v) {
			ok = v[tried[r]]
		}
		tried[r]++
		s.out.Steps = append(s.out.Steps, result.LimitStep{Index: len(s.out.Steps), Rate: rate, OK: ok})
		return &s.out.Steps[len(s.out.Steps)-1], at.Add(3 * time.Second), true
	})
	s.finish(&result.Result{})
	for i := range s.out.Steps {
		st := &s.out.Steps[i]
		st.Rate = math.Round(st.Rate)
		t.Logf("step %d: %.0f ok %v overruled %v", st.Index+1, st.Rate, st.OK, st.Overruled)
	}
	s.out.Sustained, s.out.FirstFailed = math.Round(s.out.Sustained), math.Round(s.out.FirstFailed)
	return s.out
}

// TestClimbRateFailingEveryOtherTime: a rate that fails, holds on its repeat, and fails
// again when the answer is checked (holding on that repeat too) failed two of four steps:
// it is not the answer. Its held steps are overruled, its failures stand, and the search
// goes on below it. A rate that failed once in three is sustained; one whose check and
// repeat both fail is not.
func TestClimbRateFailingEveryOtherTime(t *testing.T) {
	t.Parallel()
	// Climb 1000, 2000, 4000 (fails, and its repeat: the limit is 3000), bisect: 2828 fails
	// and holds on its repeat, 3364 fails twice, 2828's check fails and holds again: two
	// failures there; 2378 holds and is checked: the answer.
	l := climbWith(t, 3000, map[float64][]bool{2828: {false, true, false, true}})
	if !l.Found || l.Sustained != 2378 || l.FirstFailed != 2828 {
		t.Errorf("sustained %.0f, first failed %.0f; want 2378 and 2828", l.Sustained, l.FirstFailed)
	}
	for _, st := range l.Steps {
		if st.Rate == 2828 && st.Overruled != st.OK {
			t.Errorf("step %d at 2828 ok %v overruled %v: its failures stand, its holds are overruled", st.Index+1, st.OK, st.Overruled)
		}
	}
	// One failure in three at 2828 (the first, overruled by its repeat; the check holds).
	l = climbWith(t, 3000, map[float64][]bool{2828: {false, true, true}})
	if l.Sustained != 2828 || l.FirstFailed != 3364 {
		t.Errorf("one failure in three: sustained %.0f, first failed %.0f; want 2828 and 3364", l.Sustained, l.FirstFailed)
	}
	// The check and its repeat fail: not sustained, as before.
	l = climbWith(t, 3000, map[float64][]bool{2828: {true, false, false}})
	if l.Sustained != 2378 || l.FirstFailed != 2828 {
		t.Errorf("check and repeat failed: sustained %.0f, first failed %.0f; want 2378 and 2828", l.Sustained, l.FirstFailed)
	}
}

// TestFailedStepsAttributedTogether: a rate whose first step lost 19 with 4 dropped by the
// broker and whose repeat lost 1 with none counted is laid to the broker's drops, from both
// steps: 4 of 20 lost.
func TestFailedStepsAttributedTogether(t *testing.T) {
	t.Parallel()
	s := &search{out: &result.Limit{Steps: []result.LimitStep{
		{Index: 0, Rate: 2828, OK: true},
		{Index: 1, Rate: 3364},
		{Index: 2, Rate: 3364},
	}}}
	s.out.Steps[1].BrokerDropped = 4
	s.out.Steps[1].Messages.Lost, s.out.Steps[2].Messages.Lost = 19, 1
	s.last = &s.out.Steps[2]
	s.finish(&result.Result{})
	l := s.out
	if l.LimitedBy != "broker" || len(l.Evidence) == 0 ||
		l.Evidence[0] != "the broker dropped 4 messages by its own policy ($SYS publish/messages/dropped: a subscriber's queue was full, "+
			"max_queued_messages) of the 20 lost in the failed steps at this rate" {
		t.Errorf("limited by %q, evidence %q", l.LimitedBy, l.Evidence)
	}
}

// TestClimbAnswerUnconfirmed: a search whose --max-duration leaves no room to hold the answer
// once more gives it unconfirmed: ended max_duration, confirmed false, and the text says so.
// With the room, the same steps end in the hold: ended precision, confirmed.
func TestClimbAnswerUnconfirmed(t *testing.T) {
	t.Parallel()
	// 1000, 2000 hold, 4000 fails twice, 2828 fails and holds on its repeat, 3364 fails
	// twice: the precision is reached at 24 s, and the hold of 2828 ends at 27 s.
	steps := map[float64][]bool{2828: {false, true}}
	for _, c := range []struct {
		most      time.Duration
		ended     string
		confirmed bool
		steps     int
	}{{26 * time.Second, "max_duration", false, 8}, {time.Hour, "precision", true, 9}} {
		l := climbFor(t, c.most, 3000, steps)
		if l.Sustained != 2828 || l.FirstFailed != 3364 || l.Ended != c.ended || l.Confirmed != c.confirmed || len(l.Steps) != c.steps {
			t.Errorf("max duration %v: %d steps, sustained %.0f, first failed %.0f, ended %q, confirmed %v; want %d, 2828, 3364, %q, %v",
				c.most, len(l.Steps), l.Sustained, l.FirstFailed, l.Ended, l.Confirmed, c.steps, c.ended, c.confirmed)
		}
		text := strings.Join(report.LimitLines(l), "\n")
		if unconfirmed := strings.Contains(text, "before the answer was held once more: it is unconfirmed"); unconfirmed == c.confirmed {
			t.Errorf("max duration %v: the answer says unconfirmed %v, want %v:\n%s", c.most, unconfirmed, !c.confirmed, text)
		}
	}
}

// TestFailedStepJudgedAsRun: the failed step's evidence is judged as a run's: a step whose
// broker did not read while the client was 30 ms late is the broker's limit, not the
// client's; on the broker's host with the client waiting for a CPU it is the host's; with
// Mosquitto at 99 % of its core it is the broker's again, whatever the client waited.
func TestFailedStepJudgedAsRun(t *testing.T) {
	t.Parallel()
	judge := func(local bool, wait, brokerCPU float64) *result.Limit {
		st := result.LimitStep{Index: 1, Rate: 3364, RunDelayShare: wait, BrokerCPUPercent: brokerCPU}
		st.ScheduleLagUS.P99 = 30_000
		st.BrokerStalled = result.StageStalled{Stalled: true, HeldS: 2, Evidence: []string{"publishers held for 2s in all"}}
		s := &search{out: &result.Limit{Steps: []result.LimitStep{{Index: 0, Rate: 2828, OK: true}, st}}}
		s.last = &s.out.Steps[1]
		res := &result.Result{Host: result.HostInfo{Cores: 2}}
		if local {
			res.BrokerProcess = &result.BrokerProcess{Source: "/proc", PID: 7}
		}
		s.finish(res)
		if res.LimitedBy != s.out.LimitedBy {
			t.Errorf("the run's limited_by %q, the search's %q", res.LimitedBy, s.out.LimitedBy)
		}
		return s.out
	}
	for _, c := range []struct {
		name       string
		local      bool
		wait, cpu  float64
		by         string
		lowerBound bool
	}{
		{"remote broker stalled, client late", false, 0, 40, "broker", false},
		{"local broker stalled, client late and waiting", true, 0.3, 40, "host", true},
		{"local broker busy, client late and waiting", true, 0.3, 99, "broker", false},
	} {
		if l := judge(c.local, c.wait, c.cpu); l.LimitedBy != c.by || l.LowerBound != c.lowerBound {
			t.Errorf("%s: limited by %q (lower bound %v), evidence %q; want %q", c.name, l.LimitedBy, l.LowerBound, l.Evidence, c.by)
		}
	}
}
