package bench

import (
	"fmt"
	"math"
	"time"

	"github.com/mqblast/mqblast/result"
)

// MaxDrain bounds how long a wait for what the broker still owes goes on past its own
// length while copies keep arriving: a run's drain past its Drain, a limit search's pause
// after a step past its Pause. An overloaded broker's backlog can take longer than any
// drain a scenario names; the bound keeps a run from waiting on it without end.
const MaxDrain = 30 * time.Second

// arrivals are the drain's readings of what had arrived and been written so far, taken each
// time it looks (every 50 ms), kept over the last interval: they tell whether copies are
// still arriving, and at what rate. Each reading holds the run's received and published
// counts, then each group's received (a mixed run).
type arrivals struct {
	every time.Duration // the window: one interval
	at    []time.Time
	got   [][]int64
}

// read adds a reading of t, the run's total so far, taken at now, and forgets those older
// than the one that opens the window.
func (a *arrivals) read(now time.Time, t *result.Snapshot) {
	v := make([]int64, 2+len(t.Groups))
	v[0], v[1] = t.Received, t.Published
	for g, s := range t.Groups {
		if s != nil {
			v[2+g] = s.Received
		}
	}
	a.at, a.got = append(a.at, now), append(a.got, v)
	cut := 0
	for cut+1 < len(a.at) && !a.at[cut+1].After(now.Add(-a.every)) {
		cut++
	}
	a.at, a.got = a.at[cut:], a.got[cut:]
}

// quiet reports whether arrivals stopped: the readings span an interval, and in it no copy
// arrived and no message was written.
func (a *arrivals) quiet() bool {
	n := len(a.at)
	if n < 2 || a.at[n-1].Sub(a.at[0]) < a.every {
		return false
	}
	first, last := a.got[0], a.got[n-1]
	return first[0] == last[0] && first[1] == last[1]
}

// rates returns the copies per second that arrived over the readings (at most the last
// interval): the run's, then each group's (nil: no two readings).
func (a *arrivals) rates() []int64 {
	n := len(a.at)
	if n < 2 {
		return nil
	}
	d := a.at[n-1].Sub(a.at[0]).Seconds()
	if d <= 0 {
		return nil
	}
	first, last := a.got[0], a.got[n-1]
	out := make([]int64, 0, len(last)-1)
	for i := range last {
		if i == 1 { // published
			continue
		}
		var f int64
		if i < len(first) {
			f = first[i]
		}
		out = append(out, int64(math.Round(float64(last[i]-f)/d)))
	}
	return out
}

// drainBound is how long the drain may go on past Drain while copies keep arriving.
func (r *run) drainBound() time.Duration {
	if r.maxDrain > 0 {
		return r.maxDrain
	}
	return MaxDrain
}

// drainEnded judges, once the drain has ended without every copy in, what is still missing
// from what it saw last: copies still arriving (over its last interval) are owed, and their
// rate goes into the run's figures (owed: the run's, then each group's, for finish);
// arrivals that had stopped leave the missing copies lost.
func (r *run) drainEnded(seen *arrivals) {
	r.src.collect()
	seen.read(time.Now(), r.src.total)
	if seen.quiet() {
		return
	}
	if rates := seen.rates(); len(rates) > 0 && rates[0] > 0 {
		r.owed = rates
		if r.Progress != nil {
			fmt.Fprintf(r.Progress, "drain ended after %v with copies still arriving at %d/s: those still missing are owed at the end, not lost\n",
				time.Duration(r.res.Messages.DrainS*float64(time.Second)).Round(time.Millisecond), rates[0])
		}
	}
}

// cutShort judges a run interrupted before its drain as drainEnded judges a drain cut
// short: copies that arrived in its last interval were still arriving, and those missing
// are owed at the end (the run's rate only; its groups follow the run).
func (r *run) cutShort() {
	if perS := int64(math.Round(r.log.receivePerS)); perS > 0 {
		r.owed = []int64{perS}
	}
}

// addOwed puts the rate at which copies were still arriving when the drain ended into fix,
// the run's figures completed after it: the run's and each group's.
func (r *run) addOwed(fix *result.Snapshot) {
	if len(r.owed) == 0 {
		return
	}
	fix.OwedArrivalPerS += r.owed[0]
	for g, s := range fix.Groups {
		if 1+g < len(r.owed) && s != nil {
			s.OwedArrivalPerS += r.owed[1+g]
		}
	}
}
