package reactor

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// newArrivalPub returns publisher number's state for sp, as the loop makes it.
func newArrivalPub(sp *PublishSpec) *pubState {
	p := &pubState{spec: sp, period: float64(time.Second) / sp.Rate, phase: int64(sp.Phase), number: sp.Number, arrival: sp.Arrival}
	if sp.Arrival == ArrivalPoisson {
		p.more = &pubMore{}
	}
	return p
}

// TestArrivalCounts: for Poisson and burst arrivals, with and without random rate profiles,
// dueBefore(t) is exactly the number of due times before t that the loop steps through
// (advance, as publishDue and skipTo move the schedule), it never decreases, and Count
// bounds it; asked in random order too, as ScheduledBefore and the unsent accounts ask.
func TestArrivalCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const start = int64(1e9)
	for round := range 300 {
		var pr *profile
		if round%2 == 1 {
			pr = randomProfile(r, start, 1+r.IntN(5))
		}
		sp := &PublishSpec{Rate: 5 + r.Float64()*200, Phase: time.Duration(r.Int64N(int64(100 * time.Millisecond))),
			Number: uint32(r.IntN(1000)), Arrival: ArrivalPoisson}
		if round%4 >= 2 {
			sp.Arrival, sp.BurstSize = ArrivalBurst, 1+r.IntN(40)
		}
		if r.IntN(3) == 0 {
			sp.Count = 1 + r.IntN(500)
		}
		p := newArrivalPub(sp)
		var dues []int64
		p.nextDue = p.dueOf(start, pr)
		for !p.done && p.nextDue < start+int64(12*time.Second) {
			if n := len(dues); n > 0 && p.nextDue < dues[n-1] {
				t.Fatalf("round %d: message %d due at %d, before message %d at %d", round, p.k, p.nextDue, n-1, dues[n-1])
			}
			dues = append(dues, p.nextDue)
			p.advance(start, pr)
		}
		countBefore := func(at int64) int64 {
			n := int64(0)
			for _, d := range dues {
				if d < at {
					n++
				}
			}
			return n
		}
		last := int64(0)
		for at := start - 5; at < start+int64(11*time.Second); at += 1 + r.Int64N(int64(20*time.Millisecond)) {
			n := p.dueBefore(at, start, pr)
			if want := countBefore(at); n != want {
				t.Fatalf("round %d (arrival %d): dueBefore(%d) = %d, %d due times before it", round, sp.Arrival, at, n, want)
			}
			if n < last {
				t.Fatalf("round %d: dueBefore decreases: %d after %d", round, n, last)
			}
			last = n
		}
		for range 50 {
			at := start + r.Int64N(int64(11*time.Second))
			if n, want := p.dueBefore(at, start, pr), countBefore(at); n != want {
				t.Fatalf("round %d (arrival %d): dueBefore(%d) asked out of order = %d, %d due times before it", round, sp.Arrival, at, n, want)
			}
		}
		// The schedule goes on where it was, whatever the counts asked.
		k, seg := p.k, p.seg
		p.k, p.seg = 0, 0 // the profile's segment hint only moves forward
		for i := range min(len(dues), 50) {
			if d := p.dueOf(start, pr); d != dues[i] {
				t.Fatalf("round %d: message %d due at %d after the counts, %d before", round, i, d, dues[i])
			}
			p.k++
		}
		p.k, p.seg = k, seg
	}
}

// TestPoissonGaps: Poisson due times have exponential gaps: their coefficient of variation
// is within 0.9 and 1.1 and their mean rate within 2 % of the asked rate; the draws are
// the publisher number's alone (another state of the same number draws the same due times,
// another number others).
func TestPoissonGaps(t *testing.T) {
	const start = int64(3e9)
	for _, rate := range []float64{1, 10, 1000, 200_000} {
		sp := &PublishSpec{Rate: rate, Number: 7, Arrival: ArrivalPoisson}
		p := newArrivalPub(sp)
		const n = 100_000
		p.nextDue = p.dueOf(start, nil)
		prev := p.nextDue
		var sum, sq float64
		for range n {
			p.advance(start, nil)
			g := float64(p.nextDue - prev)
			sum, sq = sum+g, sq+g*g
			prev = p.nextDue
		}
		mean := sum / n
		cv := math.Sqrt(sq/n-mean*mean) / mean
		got := 1e9 / mean
		t.Logf("%v/s: %d gaps, mean rate %.4f/s, CV %.4f", rate, n, got, cv)
		if cv < 0.9 || cv > 1.1 {
			t.Errorf("%v/s: inter-arrival CV %.4f, want 0.9 to 1.1", rate, cv)
		}
		if math.Abs(got-rate)/rate > 0.02 {
			t.Errorf("%v/s: mean rate %.4f/s, want within 2 %%", rate, got)
		}
		again, other := newArrivalPub(sp), newArrivalPub(&PublishSpec{Rate: rate, Number: 8, Arrival: ArrivalPoisson})
		same := 0
		for k := int64(1); k < 1000; k++ {
			if again.offset(k) != p.offset(k) {
				t.Fatalf("%v/s: message %d's offset differs between two states of one publisher", rate, k)
			}
			if other.offset(k) == p.offset(k) {
				same++
			}
		}
		if same > 10 {
			t.Errorf("%v/s: publishers 7 and 8 share %d of 999 offsets", rate, same)
		}
	}
}

// TestBurstGroups: burst arrivals make groups of BurstSize messages due at one instant,
// BurstSize periods apart: the mean rate is the plan's.
func TestBurstGroups(t *testing.T) {
	const start = int64(2e9)
	sp := &PublishSpec{Rate: 100, Arrival: ArrivalBurst, BurstSize: 25, Phase: 3 * time.Millisecond}
	p := newArrivalPub(sp)
	p.nextDue = p.dueOf(start, nil)
	var dues []int64
	for range 1000 {
		dues = append(dues, p.nextDue)
		p.advance(start, nil)
	}
	for i, d := range dues {
		want := start + int64(sp.Phase) + int64(i/25)*int64(250*time.Millisecond)
		if d != want {
			t.Fatalf("message %d due at start+%v, want start+%v", i, time.Duration(d-start), time.Duration(want-start))
		}
	}
	if n := p.dueBefore(start+int64(10*time.Second), start, nil); n != 1000 {
		t.Errorf("%d due in 10 s at 100/s in bursts of 25, want 1000", n)
	}
	if n := p.dueBefore(start+int64(sp.Phase)+1, start, nil); n != 25 {
		t.Errorf("%d due just after the first burst's instant, want 25", n)
	}
}

// TestPublishAllocsArrivals: a publish pass of Poisson or burst arrivals, or of topics to
// cycle over (reaching the same receivers, or each its own), allocates nothing and sends
// what the schedule makes due.
func TestPublishAllocsArrivals(t *testing.T) {
	for _, sp := range []*PublishSpec{
		{Topic: []byte("bench/p"), Rate: 1e5, PayloadSize: 32, Receivers: 1, Arrival: ArrivalPoisson, Number: 3},
		{Topic: []byte("bench/b"), Rate: 1e5, PayloadSize: 32, Receivers: 1, Arrival: ArrivalBurst, BurstSize: 50},
		{Rate: 1e5, PayloadSize: 32, Receivers: 1, Topics: [][]byte{[]byte("bench/c/1"), []byte("bench/c/2"), []byte("bench/c/3")}},
		{Rate: 1e5, PayloadSize: 32, Topics: [][]byte{[]byte("bench/d/1"), []byte("bench/d/2"), []byte("bench/d/3")}, TopicReceivers: []int{3, 2, 0}},
	} {
		l, s, peer := testSession(t, 5)
		base := l.e.now() + int64(50*time.Millisecond)
		l.e.pubStart.Store(base)
		l.startPublisher(s, sp, 0, 10, false)
		now := base
		if allocs := passAllocsEvery200us(l, peer, &now); allocs != 0 {
			t.Errorf("arrival %d: %v allocations per publish pass", sp.Arrival, allocs)
		}
		if want := s.pub.dueBefore(now+1, base, nil); int64(s.pub.seq) != want || want < 1000 {
			t.Errorf("arrival %d: published %d messages by start+%v, the schedule makes %d due", sp.Arrival, s.pub.seq, time.Duration(now-base), want)
		}
		if sp.TopicReceivers != nil { // every message written: each its topic's copies
			n := int64(s.pub.seq)
			if got, want := s.pub.expected(), n/3*5+min(n%3, 1)*3+max(n%3-1, 0)*2; got != want {
				t.Errorf("%d messages written over topics of 3, 2 and 0 receivers: %d copies expected, want %d", n, got, want)
			}
		}
	}
}
