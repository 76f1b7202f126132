package bench

import (
	"context"
	"io"
	"math"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/watch"
)

// A run's intervals come from one of two sources: the in-process engine's recorders, read at
// every tick (Runner.Run), or the snapshots that worker processes stream (Gather). One loop,
// runIntervals, serves both: it waits on the source and hands each interval's snapshot to an
// intervalLog, which makes the record.

// intervalSource yields a run's intervals. Its events are what completes intervals (a tick, a
// worker's line); take handles one and adds every interval it completes to log. A source whose
// event channel closes has ended.
type intervalSource[E any] interface {
	events() <-chan E
	take(e E, log *intervalLog)
}

// until says when runIntervals returns; a zero field does not end it.
type until struct {
	ctx  context.Context // when it ends: ErrInterrupted
	at   time.Time       // when it is reached: nil
	ok   func() bool     // when it returns true (checked every 50 ms): nil
	done <-chan error    // when it delivers: what it delivered
}

// runIntervals adds src's intervals to log until u says to stop, or until src ends (nil).
func runIntervals[E any](src intervalSource[E], log *intervalLog, u until) error {
	var ctxDone <-chan struct{}
	if u.ctx != nil {
		ctxDone = u.ctx.Done()
	}
	var end <-chan time.Time
	if !u.at.IsZero() {
		t := time.NewTimer(time.Until(u.at))
		defer t.Stop()
		end = t.C
	}
	var poll <-chan time.Time
	if u.ok != nil {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	events := src.events()
	for {
		select {
		case <-ctxDone:
			return ErrInterrupted
		case <-end:
			return nil
		case <-poll:
			if u.ok() {
				return nil
			}
		case err := <-u.done:
			return err
		case e, ok := <-events:
			if !ok {
				return nil
			}
			src.take(e, log)
		}
	}
}

// intervalLog is what a run does with each interval, wherever it came from: sample the host
// and the broker (watch.Watch), keep the record, print the progress line, pass it to the caller.
type intervalLog struct {
	target      int // the run's clients
	progress    io.Writer
	watch       *watch.Watch
	onInterval  func(result.Interval, *result.Snapshot)
	line        progressLine
	list        []result.Interval
	discard     bool    // keep none in list (Runner.StreamOnly)
	receivePerS float64 // the last interval's: the copies that arrived in it, per second
}

// add records the interval whose snapshot is s, taken over d and ending ts seconds into the
// run with open sessions established. s is handed to onInterval, the caller's to keep
// unless the log discards its intervals (the source then empties and reuses s once add
// returns).
func (l *intervalLog) add(ts float64, open int64, s *result.Snapshot, d time.Duration, m intervalMark) {
	iv := result.NewInterval(ts, open, s, d)
	iv.Stage, iv.Slot = m.stage, m.slot
	if l.watch != nil {
		l.watch.Interval(&iv, l.progress)
	}
	if !l.discard {
		l.list = append(l.list, iv)
	}
	l.line.print(l.progress, iv, l.target)
	l.receivePerS = iv.ReceivePerS
	if l.onInterval != nil {
		l.onInterval(iv, s)
	}
}

// recorderSource is the in-process run's interval source: at every tick, what the engine's
// loops recorded since the last interval.
type recorderSource struct {
	eng     *reactor.Engine
	rec     *Recorder
	tick    *time.Timer        // the end of the current interval
	snaps   []*result.Snapshot // one per loop, taken on the loop
	total   *result.Snapshot   // the run so far
	carry   *result.Snapshot   // collected since the last interval: the next one reports it
	start   time.Time          // intervals are timed from it
	prevCPU time.Duration
	prevAt  time.Time
	clock   *stageClock // a staged run's, once it publishes: marks the intervals
	// slotFrom, once aligned, is the instant the intervals are numbered from (Slot).
	slotFrom time.Time
	// grid is the instant the intervals end at whole intervals from: start, then align's.
	grid  time.Time
	every time.Duration
}

func newRecorderSource(eng *reactor.Engine, rec *Recorder, loops int, every time.Duration) *recorderSource {
	s := &recorderSource{eng: eng, rec: rec, total: result.NewSnapshot(), carry: result.NewSnapshot(), start: time.Now()}
	s.snaps = make([]*result.Snapshot, loops)
	for i := range s.snaps {
		s.snaps[i] = result.NewSnapshot()
	}
	s.prevCPU, s.prevAt, s.every, s.grid = tuning.SelfCPU(), s.start, every, s.start
	s.tick = time.NewTimer(every)
	return s
}

func (s *recorderSource) events() <-chan time.Time { return s.tick.C }

func (s *recorderSource) take(_ time.Time, log *intervalLog) {
	s.interval(log)
	next := s.untilNext(time.Now())
	if next < s.every/10 { // this tick came that late: the next interval runs on a whole one more
		next += s.every
	}
	s.tick.Reset(next)
}

// untilNext is the time from now to the next end of an interval on the grid: a tick taken
// late shortens the next interval rather than moving every end after it (a process
// starved for a moment would otherwise end its intervals apart from its fellow workers' for
// the rest of the run).
func (s *recorderSource) untilNext(now time.Time) time.Duration {
	if now.Before(s.grid) {
		return s.grid.Sub(now)
	}
	return s.every - now.Sub(s.grid)%s.every
}

// collect moves every loop's figures into total and into carry; the drain collects more
// often than intervals run.
func (s *recorderSource) collect() {
	s.eng.OnLoops(func(i int) { s.rec.Take(i, s.snaps[i]) })
	for _, x := range s.snaps {
		s.total.Add(x)
		s.carry.Add(x)
		x.Reset()
	}
}

// settle brings the histograms to what a held run keeps, for the resident set read at the
// end of the connect phase: the loops' figures are collected twice, so that the loops' and
// the collection's copies, busy until then, are empty since their last Reset and give their
// counts back (Hist.Reset); the interval's carry and the run's total keep their values
// packed until a collection adds to them (the total's counts come back, decoded, with the
// first value a histogram of it takes). A held run then holds no counts: a worker dialling
// its part at 2,500 a second held four copies of its connect latencies' 184 KB (28 B per
// connection at 19,600 a worker), the total's the last, with a mixed worker's group's 25 KB
// beside it.
func (s *recorderSource) settle() {
	s.collect()
	s.collect()
	s.carry.Pack()
	s.total.Pack()
}

// interval ends the current interval and adds it to log, with this process's CPU time and
// resident set.
func (s *recorderSource) interval(log *intervalLog) {
	s.collect()
	c := s.carry
	cpu, now := tuning.SelfCPU(), time.Now()
	c.CPUNS, c.RSSBytes, s.prevCPU = int64(cpu-s.prevCPU), tuning.SelfRSS(), cpu
	d := now.Sub(s.prevAt)
	var m intervalMark
	if s.clock != nil {
		m, c.Offered = s.clock.mark(s.prevAt, now)
	}
	if d := now.Sub(s.slotFrom); !s.slotFrom.IsZero() && d > 0 {
		m.slot = max(int(math.Round(float64(d)/float64(s.every))), 1)
	}
	s.prevAt = now
	log.add(now.Sub(s.start).Seconds(), s.eng.Open(), c, d, m)
	if log.discard {
		// Its figures went to OnInterval, which keeps none: the next interval collects into
		// it (a new snapshot a second, and its groups' in a mixed run, were most of the small
		// garbage of a worker that dials).
		c.Reset()
	} else {
		s.carry = result.NewSnapshot()
	}
}

// align makes the intervals end at whole intervals from at (the start of publishing or of
// holding) and numbers them from it (result.Interval.Slot): the current one ends now, unless
// it began less than a tenth of an interval ago (it then runs on to the first aligned end).
// Worker processes given the same start thus end their intervals together: their parent
// merges intervals of one instant and wakes once for all their lines, not once for each.
func (s *recorderSource) align(log *intervalLog, at time.Time) {
	now := time.Now()
	if now.Sub(s.prevAt) >= s.every/10 {
		s.interval(log)
	}
	s.slotFrom, s.grid = at, at
	s.tick.Reset(s.untilNext(time.Now())) // not now: the interval may have taken a while
}
