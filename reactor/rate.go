package reactor

import (
	"errors"
	"math"
	"slices"
	"sync"
	"time"
)

// The rate scale profile: one engine-wide factor m(t) >= 0 on every publisher's rate, so that
// a run can change its offered rate while its connections stay up (stages, a search for the
// broker's limit). m is 1 (the plan's rates) until a change says otherwise; a change takes
// it from its value at the change's time to a new scale, linearly over a ramp or in a step,
// and there it stays until the next change.
//
// A publisher's schedule runs in schedule time τ(t) = ∫ m(s) ds from the start of publishing
// (engine ns): message k is due at the first engine ns t with τ(t) >= Phase + offset(k),
// the plan's own formula with τ in place of t - start. τ is continuous, so a change re-phases
// every publisher at once without a burst or a gap; a ramp's due times solve τ's quadratic
// within its segment; a pause (m = 0) has no due times. Without a change the loops never look
// at a profile (a nil pointer, tested once per message): the schedule is the plan's, bit for
// bit.

// rateChange is one SetRate call: from at (engine ns) the scale goes linearly from its value
// then to scale over ramp ns (0: a step).
type rateChange struct {
	at    int64
	scale float64
	ramp  int64
}

// rateSeg is a piece of the profile from engine ns from up to the next segment's from: the
// scale is m0 + slope*(t-from) (slope per ns; 0 but between a ramp's ends) and τ at from is
// tau (schedule ns).
type rateSeg struct {
	from  int64
	tau   float64
	m0    float64
	slope float64
}

// profile is an immutable rate scale profile for publishing that started at engine ns
// start: segs[0].from == start, the last segment constant. Loops hold it by pointer; a
// change makes a new one.
type profile struct {
	start int64
	segs  []rateSeg
}

// rates is the engine's profile state: the changes (under mu) and, once publishing has
// started, the profile they make (loaded by the loops without a lock).
type rates struct {
	mu      sync.Mutex
	changes []rateChange
}

// buildProfile makes the profile of changes (in call order, each superseding what earlier
// ones said from its time on) for publishing that starts at start.
func buildProfile(start int64, changes []rateChange) *profile {
	segs := []rateSeg{{from: start, m0: 1}}
	for _, c := range changes {
		at := max(c.at, start)
		v := scaleAt(segs, at)
		i := len(segs)
		for i > 0 && segs[i-1].from >= at {
			i--
		}
		segs = segs[:i]
		if c.ramp > 0 && v != c.scale {
			segs = append(segs, rateSeg{from: at, m0: v, slope: (c.scale - v) / float64(c.ramp)},
				rateSeg{from: at + c.ramp, m0: c.scale})
		} else {
			segs = append(segs, rateSeg{from: at, m0: c.scale})
		}
	}
	for i := 1; i < len(segs); i++ {
		p := &segs[i-1]
		d := float64(segs[i].from - p.from)
		segs[i].tau = p.tau + (p.m0+p.slope*d/2)*d
	}
	return &profile{start: start, segs: segs}
}

// scaleAt returns the scale at engine ns t of segments segs (t at or after the first).
func scaleAt(segs []rateSeg, t int64) float64 {
	i := segAt(segs, t)
	s := &segs[i]
	return s.m0 + s.slope*float64(t-s.from)
}

// segAt returns the index of the segment holding engine ns t (0 before the first).
func segAt(segs []rateSeg, t int64) int {
	i, _ := slices.BinarySearchFunc(segs, t, func(s rateSeg, t int64) int {
		switch {
		case s.from <= t:
			return -1
		default:
			return 1
		}
	})
	return max(i-1, 0)
}

// tau returns the schedule time at engine ns t: 0 before the start.
func (pr *profile) tau(t int64) float64 {
	if t <= pr.start {
		return 0
	}
	s := &pr.segs[segAt(pr.segs, t)]
	d := float64(t - s.from)
	return s.tau + (s.m0+s.slope*d/2)*d
}

// firstSeg returns the index of the segment in which schedule time x (> 0) is reached: the
// last whose tau is below x. Pauses (segments that add nothing to τ) are passed over.
func (pr *profile) firstSeg(x float64) int {
	i, _ := slices.BinarySearchFunc(pr.segs, x, func(s rateSeg, x float64) int {
		if s.tau < x {
			return -1
		}
		return 1
	})
	return max(i-1, 0)
}

// at returns the first engine ns at which τ reaches x, segment i being where it does (see
// firstSeg); never when the profile stays paused before it.
func (pr *profile) at(x float64, i int) int64 {
	if x <= 0 {
		return pr.start
	}
	s := &pr.segs[i]
	r := x - s.tau
	var d float64
	switch s.slope {
	case 0:
		if s.m0 <= 0 {
			return never // the last segment, a pause for good
		}
		d = r / s.m0
	default: // m0*d + slope*d²/2 = r, in the form that keeps its precision for small slopes
		d = 2 * r / (s.m0 + math.Sqrt(max(s.m0*s.m0+2*s.slope*r, 0)))
	}
	if i+1 < len(pr.segs) {
		d = min(d, float64(pr.segs[i+1].from-s.from)) // rounding at the segment's end
	}
	c := math.Ceil(d)
	if c >= float64(never-s.from) {
		return never
	}
	return s.from + int64(c)
}

// due returns the engine ns at which the message at schedule offset x (Phase + offset(k),
// schedule ns) is due.
func (pr *profile) due(x float64) int64 { return pr.at(x, pr.firstSeg(x)) }

// dueAt returns p's message k's due time under pr, seg being the segment hint that k only
// moves forward (p.seg).
func (p *pubState) dueAt(pr *profile, k int64) int64 {
	x := float64(p.phase + p.offset(k))
	i := int(p.seg)
	for i+1 < len(pr.segs) && pr.segs[i+1].tau < x {
		i++
	}
	p.seg = int32(i)
	return pr.at(x, i)
}

// dueCount returns how many of p's messages (before its Count) are due before engine ns t
// under pr: those k whose due time is below t.
func (p *pubState) dueCount(pr *profile, t int64) int64 {
	if t <= pr.start {
		return 0
	}
	phase := p.phase
	k := int64(0)
	if x := pr.tau(t-1) - float64(phase); x >= 0 {
		k = int64(x/p.period) + 1
	}
	dueK := func(k int64) int64 { return pr.due(float64(phase + p.offset(k))) }
	for k > 0 && dueK(k-1) >= t { // float rounding: the due times decide
		k--
	}
	for dueK(k) < t {
		k++
	}
	if c := int64(p.spec.Count); c > 0 && k > c {
		k = c
	}
	return k
}

// validChange checks SetRate's arguments.
func validChange(scale float64, ramp time.Duration) error {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale < 0 {
		return errors.New("reactor: rate scale must be a finite number >= 0 (1 is the plan's rate)")
	}
	if ramp < 0 {
		return errors.New("reactor: rate ramp must be >= 0 (0 is a step)")
	}
	return nil
}

// SetRate changes the rate of every publisher: from at, the scale on the plan's rates goes
// linearly from its value at at to scale over ramp (0: a step), and stays there until a later
// change. A change supersedes what earlier ones said from at on. at before the engine's
// clock now is taken as now: the past schedule stays as it was. Before StartPublishing the
// changes shape the profile from the start: one at or before the start (time.Time{} for
// one) sets the scale the schedule starts at (a ramp then starts at the start).
//
// Every publisher is re-phased at the change without a burst or a gap: its schedule runs in
// schedule time τ = ∫ scale dt from the start of publishing, message k being due when τ
// reaches Phase + k/Rate; at scale 0 (a pause) nothing falls due. The loops pick a change up
// at their next tick (SetRate wakes them); messages already encoded keep their due times.
// Count still bounds each publisher's messages; Behind, FinishPublishing and the unsent
// accounts count by the same schedule. scale must be finite and >= 0, ramp >= 0.
func (e *Engine) SetRate(at time.Time, scale float64, ramp time.Duration) error {
	if err := validChange(scale, ramp); err != nil {
		return err
	}
	now := e.now()
	t := now
	if !at.IsZero() {
		t = max(int64(at.Sub(e.epoch)), now)
	}
	r := &e.rates
	r.mu.Lock()
	kept := r.changes[:0:0]
	for _, c := range r.changes {
		if c.at < t {
			kept = append(kept, c)
		}
	}
	kept = append(kept, rateChange{at: t, scale: scale, ramp: int64(ramp)})
	r.changes = kept
	if start := e.pubStart.Load(); start != 0 {
		e.prof.Store(buildProfile(start, r.changes))
	}
	r.mu.Unlock()
	for _, l := range e.loops {
		l.wakeup()
	}
	return nil
}

// RateScale returns the rate scale at t: 1 without a change, the profile's value otherwise
// (before StartPublishing, as if publishing started now).
func (e *Engine) RateScale(t time.Time) float64 {
	pr := e.profileNow()
	if pr == nil {
		return 1
	}
	return scaleAt(pr.segs, max(int64(t.Sub(e.epoch)), pr.start))
}

// profileNow returns the profile in force, or before StartPublishing the one the changes so
// far would make if publishing started now; nil without a change.
func (e *Engine) profileNow() *profile {
	if pr := e.prof.Load(); pr != nil {
		return pr
	}
	r := &e.rates
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.changes) == 0 {
		return nil
	}
	start := e.pubStart.Load()
	if start == 0 {
		start = max(e.now(), 1)
	}
	return buildProfile(start, r.changes)
}

// ScheduledBefore returns how many messages the schedule of every publisher that has dialed
// makes due before t (Count respected), under the rate profile: what the plan offered up to
// t. It runs on every loop; 0 before StartPublishing.
func (e *Engine) ScheduledBefore(t time.Time) int64 {
	var mu sync.Mutex
	var n int64
	e.OnLoops(func(i int) {
		l := e.loops[i]
		start := e.pubStart.Load()
		if start == 0 {
			return
		}
		l.syncProfile()
		at := int64(t.Sub(e.epoch))
		var sum int64
		for _, p := range l.pubs {
			sum += p.dueBefore(at, start, l.prof)
		}
		mu.Lock()
		n += sum
		mu.Unlock()
	})
	return n
}

// syncProfile makes the loop's schedule follow the engine's rate profile if it changed:
// every publisher not done gets its next due time from its k under the new profile, and the
// heap is rebuilt. Messages already encoded keep theirs.
func (l *loop) syncProfile() {
	pr := l.e.prof.Load()
	if pr == l.prof {
		return
	}
	l.prof = pr
	for _, p := range l.pubs {
		p.seg = 0
		if !p.done {
			p.seg = int32(pr.firstSeg(float64(p.phase + p.offset(p.k))))
			p.nextDue = p.dueAt(pr, p.k)
		}
	}
	l.heap.Init()
}
