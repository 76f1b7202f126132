package reactor

import (
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// randomProfile returns a profile of n random changes (steps, ramps, pauses, ramps to and
// from 0) over the first 10 s after start.
func randomProfile(r *rand.Rand, start int64, n int) *profile {
	var ch []rateChange
	for range n {
		c := rateChange{at: start + r.Int64N(int64(10*time.Second)), scale: r.Float64() * 5}
		switch r.IntN(4) {
		case 0:
			c.scale = 0
		case 1:
			c.ramp = r.Int64N(int64(3 * time.Second))
		}
		if r.IntN(3) == 0 { // out of order: it supersedes the later ones
			c.at = start + r.Int64N(int64(time.Second))
		}
		ch = append(ch, c)
	}
	return buildProfile(start, ch)
}

// TestProfileInverse: for random profiles, the engine ns at which τ reaches τ(t) is t within
// 1 ns wherever the scale is not nearly 0, never after t+1 anywhere (in a pause it is the
// pause's start), τ does not decrease, and the segments' τ join up (continuity).
func TestProfileInverse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const start = int64(12345678901)
	for round := range 300 {
		pr := randomProfile(r, start, 1+r.IntN(6))
		for i := 1; i < len(pr.segs); i++ {
			p, s := pr.segs[i-1], pr.segs[i]
			if s.from <= p.from {
				t.Fatalf("round %d: segments out of order: %+v", round, pr.segs)
			}
			// τ is continuous: across a segment's start it grows by at most one ns at the
			// scales on either side (give or take τ's float precision).
			if d := pr.tau(s.from) - pr.tau(s.from-1); d < -1e-4 || d > max(p.m0+p.slope*float64(s.from-p.from), s.m0)+1e-4 {
				t.Fatalf("round %d: τ jumps by %v at segment %d (%+v)", round, d, i, pr.segs)
			}
		}
		for range 200 {
			at := start + r.Int64N(int64(15*time.Second))
			tau := pr.tau(at)
			back := pr.due(tau)
			m := scaleAt(pr.segs, at)
			if back > at+1 {
				t.Fatalf("round %d: τ(%d) = %v reached again at %d, after it (scale %v, segs %+v)", round, at, tau, back, m, pr.segs)
			}
			if m >= 1e-3 && back < at-1 {
				t.Fatalf("round %d: τ(%d) = %v reached at %d at scale %v (segs %+v)", round, at, tau, back, m, pr.segs)
			}
		}
		prev := 0.0
		for at := start; at < start+int64(15*time.Second); at += int64(7 * time.Millisecond) {
			tau := pr.tau(at)
			if tau < prev {
				t.Fatalf("round %d: τ decreases at %d: %v after %v", round, at, tau, prev)
			}
			prev = tau
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestProfileCounts: for random profiles and publishers, dueBefore(t) is exactly the number
// of k whose due time is before t (the due times the loop sends by, with the segment hint),
// it never decreases, and Count bounds it.
func TestProfileCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const start = int64(1e9)
	for round := range 200 {
		pr := randomProfile(r, start, 1+r.IntN(5))
		sp := &PublishSpec{Rate: 5 + r.Float64()*200, Phase: time.Duration(r.Int64N(int64(100 * time.Millisecond)))}
		if r.IntN(3) == 0 {
			sp.Count = 1 + r.IntN(500)
		}
		p := &pubState{spec: sp, period: float64(time.Second) / sp.Rate, phase: int64(sp.Phase)}
		var dues []int64
		p.nextDue = p.dueOf(start, pr)
		for !p.done && p.nextDue < start+int64(12*time.Second) {
			if want := pr.due(float64(int64(sp.Phase) + p.offset(p.k))); want != p.nextDue {
				t.Fatalf("round %d: message %d due at %d with the hint, %d without", round, p.k, p.nextDue, want)
			}
			if n := len(dues); n > 0 && p.nextDue < dues[n-1] {
				t.Fatalf("round %d: message %d due at %d, before message %d at %d", round, p.k, p.nextDue, n-1, dues[n-1])
			}
			dues = append(dues, p.nextDue)
			p.advance(start, pr)
		}
		last := int64(0)
		for at := start - 5; at < start+int64(11*time.Second); at += 1 + r.Int64N(int64(20*time.Millisecond)) {
			n := p.dueBefore(at, start, pr)
			want := int64(0)
			for _, d := range dues {
				if d < at {
					want++
				}
			}
			if n != want {
				t.Fatalf("round %d: dueBefore(%d) = %d, %d due times before it", round, at, n, want)
			}
			if n < last {
				t.Fatalf("round %d: dueBefore decreases: %d after %d", round, n, last)
			}
			last = n
		}
	}
}

// TestProfileOfOnes: a profile whose every change is to scale 1 gives the plan's due times
// and counts to the ns, as the loops' formula without a profile does.
func TestProfileOfOnes(t *testing.T) {
	const start = int64(777)
	pr := buildProfile(start, []rateChange{{at: start + 3e8, scale: 1}, {at: start + 5e8, scale: 1}, {at: start + 9e8, scale: 1}})
	sp := &PublishSpec{Rate: 300, Phase: 1234567}
	a := &pubState{spec: sp, period: float64(time.Second) / sp.Rate, phase: int64(sp.Phase)}
	b := &pubState{spec: sp, period: a.period, phase: a.phase}
	for range 1000 {
		if da, db := a.dueOf(start, nil), b.dueOf(start, pr); da != db {
			t.Fatalf("message %d: due %d without a profile, %d with ones", a.k, da, db)
		}
		a.advance(start, nil)
		b.advance(start, pr)
	}
	for at := start; at < start+int64(4*time.Second); at += 999_983 {
		if na, nb := a.dueBefore(at, start, nil), b.dueBefore(at, start, pr); na != nb {
			t.Fatalf("dueBefore(%d): %d without a profile, %d with ones", at, na, nb)
		}
	}
}

// TestProfileRamp: a ramp from 1 to 3 over 2 s adds 4 s of schedule time, a pause none, and
// the scale in between is linear; a change supersedes the later ones.
func TestProfileRamp(t *testing.T) {
	const s = int64(1e9)
	pr := buildProfile(s, []rateChange{{at: s + 1e9, scale: 3, ramp: 2e9}, {at: s + 4e9, scale: 0}, {at: s + 5e9, scale: 1}})
	for _, c := range []struct {
		at         int64
		tau, scale float64
	}{{s, 0, 1}, {s + 1e9, 1e9, 1}, {s + 2e9, 2.5e9, 2}, {s + 3e9, 5e9, 3}, {s + 4e9, 8e9, 0}, {s + 5e9, 8e9, 1}, {s + 6e9, 9e9, 1}} {
		if got := pr.tau(c.at); abs(got-c.tau) > 1e-3 {
			t.Errorf("τ(start+%v) = %v, want %v", time.Duration(c.at-s), got, c.tau)
		}
		if got := scaleAt(pr.segs, c.at); abs(got-c.scale) > 1e-12 {
			t.Errorf("scale at start+%v = %v, want %v", time.Duration(c.at-s), got, c.scale)
		}
	}
	if got := pr.due(8e9 + 1); got != s+5e9+1 {
		t.Errorf("the first schedule ns after the pause is reached at start+%v, want 5 s + 1 ns", time.Duration(got-s))
	}
	again := buildProfile(s, []rateChange{{at: s + 1e9, scale: 3, ramp: 2e9}, {at: s + 4e9, scale: 0}, {at: s + 2e9, scale: 2}})
	if len(again.segs) != 3 || again.segs[2].m0 != 2 || again.segs[2].from != s+2e9 {
		t.Errorf("a change at 2 s (mid-ramp) leaves %+v", again.segs)
	}
	paused := buildProfile(s, []rateChange{{at: 0, scale: 0}})
	if got := paused.due(1); got != never {
		t.Errorf("a profile paused for good reaches schedule time 1 at %d, want never", got)
	}
}

// TestPublishAllocsProfile: a publish pass under a profile of a step, a pause and a ramp
// allocates nothing, and sends what the profile schedules.
func TestPublishAllocsProfile(t *testing.T) {
	l, s, peer := testSession(t, 5)
	sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e5, PayloadSize: 32, Receivers: 1}
	// Publishing starts 50 ms from now, so that nothing falls due before the passes.
	base := l.e.now() + int64(50*time.Millisecond)
	l.e.pubStart.Store(base)
	l.e.prof.Store(buildProfile(base, []rateChange{{at: base, scale: 0.5}, {at: base + 2e6, scale: 0},
		{at: base + 3e6, scale: 4, ramp: 10e6}, {at: base + 13e6, scale: 2}}))
	l.startPublisher(s, sp, 0, 10, false)
	if s.pub.k != 0 || s.pub.nextDue != base {
		t.Fatalf("message %d next, due at %d; want 0 at the start %d", s.pub.k, s.pub.nextDue, base)
	}
	now := base
	if allocs := passAllocsEvery200us(l, peer, &now); allocs != 0 {
		t.Errorf("%v allocations per publish pass under a rate profile", allocs)
	}
	// τ by 20.2 ms: 1 ms at 0.5, the pause, 20 ms over the ramp from 0 to 4, 14.4 ms at 2:
	// 35.4 ms at 100,000 msg/s, message 0 at τ = 0 included.
	want := s.pub.dueBefore(now+1, base, l.prof)
	if int64(s.pub.seq) != want || want != 3541 {
		t.Errorf("published %d messages by start+%v, the profile schedules %d (want 3,541)", s.pub.seq, time.Duration(now-base), want)
	}
}

// passAllocsEvery200us returns the allocations of a publish pass of l every 200 µs from *now
// on (moved on), what was written read off peer.
func passAllocsEvery200us(l *loop, peer int, now *int64) float64 {
	drain := make([]byte, 1<<20)
	return testing.AllocsPerRun(100, func() {
		*now += int64(200 * time.Microsecond)
		l.publishDue(*now)
		for {
			if _, err := unix.Read(peer, drain); err != nil {
				break
			}
		}
	})
}

// TestScheduleSpansRateTimesDuration: a publisher at r per second schedules exactly r x d
// messages in d seconds, whatever its phase within one period, counted both ways the loops
// count (dueBefore, and stepping through the due times). With the period truncated to whole
// ns (999,000 ns at 1,001/s) the schedule drifted a µs a second ahead: 1,002 in a second.
func TestScheduleSpansRateTimesDuration(t *testing.T) {
	const start = int64(5e9)
	for _, c := range []struct {
		rate float64
		d    time.Duration
		want int64
	}{
		{1001, time.Second, 1001}, {3, time.Second, 3}, {7, 3 * time.Second, 21}, {1000.5, 2 * time.Second, 2001},
		{33333.3, 10 * time.Second, 333333}, {0.3, 10 * time.Second, 3}, {999_999, time.Second, 999_999},
		{1001, time.Hour, 1001 * 3600},
	} {
		period := float64(time.Second) / c.rate
		for _, phase := range []int64{0, 1, int64(period / 3), int64(period) - 1} {
			p := &pubState{spec: &PublishSpec{Rate: c.rate}, period: period, phase: phase}
			end := start + int64(c.d)
			if n := p.dueBefore(end, start, nil); n != c.want {
				t.Errorf("%v/s for %v, phase %d ns: dueBefore says %d due, want %d", c.rate, c.d, phase, n, c.want)
			}
			if c.want > 1e6 {
				continue
			}
			n := int64(0)
			for p.nextDue = p.dueOf(start, nil); p.nextDue < end; p.step(start) {
				n++
			}
			if n != c.want {
				t.Errorf("%v/s for %v, phase %d ns: %d due times before the end, want %d", c.rate, c.d, phase, n, c.want)
			}
		}
	}
}
