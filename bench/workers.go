package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/watch"
)

// The worker protocol, both directions. A worker process (mqblast run --worker) writes JSON
// lines on its stdout (WorkerWriter): one per interval with its snapshot, a ready line once
// its subscriptions are in place (a Connections run's: once its clients have their
// verdicts), then its result or its error. The parent reads them (Gather) and, once every
// worker is ready, writes the start line "go UNIXNANO" to each worker's stdin: the
// wall-clock instant at which they all start publishing, or holding (AwaitStart). A steered
// run's parent then writes a line "steer UNIXNANO RATE SOURCE" for each change of the rate
// (WriteSteer), which every worker makes at that instant (ReadSteers, Runner.Steer).

// WorkerLine is one JSON line a worker process writes on its stdout: an interval snapshot,
// then its final result (or an error).
type WorkerLine struct {
	Ready    bool            `json:"ready,omitempty"` // subscribed: waiting for the start
	Interval *WorkerInterval `json:"interval,omitempty"`
	Result   *result.Result  `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Code     int             `json:"code,omitempty"` // the worker's exit code for Error
}

// WorkerInterval is one interval of a worker.
type WorkerInterval struct {
	Seq      int              `json:"seq"`
	TS       float64          `json:"t_s"`
	Open     int64            `json:"open"`
	Snapshot *result.Snapshot `json:"snapshot"`
	Stage    *int             `json:"stage,omitempty"` // a staged run's stage (result.Interval.Stage)
}

// slotSeq numbers the intervals of a run aligned to its start of publishing (a staged
// run's): interval k after the start is slotSeq+k in every worker, whatever number of
// intervals each had before, so that the workers' intervals of one instant merge together.
const slotSeq = 1 << 20

// WorkerWriter streams a worker's lines. Safe for use from one goroutine.
type WorkerWriter struct {
	enc *json.Encoder
	seq int
	in  *bufio.Reader // the parent's lines (AwaitStart, ReadSteers)
}

// NewWorkerWriter writes lines to w.
func NewWorkerWriter(w io.Writer) *WorkerWriter { return &WorkerWriter{enc: json.NewEncoder(w)} }

// Interval writes one interval line.
func (ww *WorkerWriter) Interval(iv result.Interval, s *result.Snapshot) error {
	ww.seq++
	if iv.Slot > 0 {
		ww.seq = max(ww.seq, slotSeq+iv.Slot)
	}
	return ww.enc.Encode(WorkerLine{Interval: &WorkerInterval{Seq: ww.seq, TS: iv.TS, Open: iv.Established, Snapshot: s,
		Stage: iv.Stage}})
}

// Ready writes the line that says the worker's subscriptions are in place.
func (ww *WorkerWriter) Ready() error { return ww.enc.Encode(WorkerLine{Ready: true}) }

// AwaitStart tells the parent that this worker's subscriptions are in place (Ready) and
// waits for the parent's start line on in: the wall-clock time at which every worker starts
// publishing. It is a worker's Runner.StartGate.
func (ww *WorkerWriter) AwaitStart(in io.Reader) (time.Time, error) {
	if err := ww.Ready(); err != nil {
		return time.Time{}, err
	}
	if ww.in == nil {
		ww.in = bufio.NewReader(in)
	}
	line, err := ww.in.ReadString('\n')
	if err != nil {
		return time.Time{}, fmt.Errorf("no start from the parent process: %w", err)
	}
	ns, ok := strings.CutPrefix(strings.TrimSpace(line), "go ")
	v, perr := strconv.ParseInt(ns, 10, 64)
	if !ok || perr != nil {
		return time.Time{}, fmt.Errorf("bad start line %q from the parent process", line)
	}
	return time.Unix(0, v), nil
}

// WriteSteer writes the line that tells a worker to change each publisher's rate to rate
// at at, a change made by source (a word).
func WriteSteer(w io.Writer, at time.Time, rate float64, source string) error {
	_, err := fmt.Fprintf(w, "steer %d %s %s\n", at.UnixNano(), strconv.FormatFloat(rate, 'g', -1, 64), source)
	return err
}

// ReadSteers reads the parent's steer lines that follow the start line (AwaitStart, which
// must have returned) and calls steer for each, until in ends; a line it cannot read is
// passed to bad. Run it in a goroutine of its own.
func (ww *WorkerWriter) ReadSteers(in io.Reader, steer func(at time.Time, rate float64, source string), bad func(line string)) {
	if ww.in == nil {
		ww.in = bufio.NewReader(in)
	}
	for {
		line, err := ww.in.ReadString('\n')
		if f := strings.Fields(line); len(f) == 4 && f[0] == "steer" {
			ns, err1 := strconv.ParseInt(f[1], 10, 64)
			rate, err2 := strconv.ParseFloat(f[2], 64)
			if err1 == nil && err2 == nil {
				steer(time.Unix(0, ns), rate, f[3])
			} else {
				bad(line)
			}
		} else if strings.TrimSpace(line) != "" {
			bad(line)
		}
		if err != nil {
			return
		}
	}
}

// Final writes the result line, or the error line when err is not nil.
func (ww *WorkerWriter) Final(r *result.Result, err error, code int) error {
	l := WorkerLine{Result: r}
	if err != nil {
		l.Error, l.Code = err.Error(), code
	}
	return ww.enc.Encode(l)
}

// WorkerError is a worker's failure as it reported it.
type WorkerError struct {
	Worker int
	Msg    string
	Code   int
}

func (e *WorkerError) Error() string { return fmt.Sprintf("worker %d: %s", e.Worker, e.Msg) }

// startDelay is at least how long after the last worker is ready they all start publishing
// when Gather is not told when (the start is then the first whole interval after it): time
// for the start line to reach every worker.
const startDelay = 200 * time.Millisecond

// GatherOptions are the workers and what Gather does with their intervals.
type GatherOptions struct {
	// Streams are the workers' stdouts, one each: their WorkerWriter's lines.
	Streams []io.Reader
	// Starts are the workers' stdins, in the order of Streams: each gets the start line
	// once every worker is ready (or has ended), and is closed when Gather returns. Nil: no
	// start line is written.
	Starts []io.WriteCloser
	// StartAt, if set, returns the instant at which the workers start publishing, asked
	// once every worker is ready; nil: startDelay from then.
	StartAt func() time.Time
	// Target is the whole run's clients; Interval the workers' interval.
	Target   int
	Interval time.Duration
	// Progress receives one merged interval line per interval (nil: none).
	Progress io.Writer
	// Watch, if set, samples the host and the broker at each merged interval (the workers
	// do not) and fills the merged result at the end.
	Watch *watch.Watch
	// OnInterval, if set, receives each merged interval and its snapshot (live /metrics),
	// the caller's to keep.
	OnInterval func(result.Interval, *result.Snapshot)
	// Started, if set, is told the instant the workers start at, once the start line is
	// written to each (a steered run's parent times its changes from it).
	Started func(at time.Time)
}

// Gather reads the workers' line streams, prints one merged interval line per interval,
// and returns their results merged into one, as if one process had done the run (with
// what the workers' joins leave for parts outside them: result.MergeParts). It
// returns when every stream has ended. Intervals are merged by sequence number from their
// snapshots, so their percentiles are exact.
func Gather(o GatherOptions) (*result.Result, error) {
	if o.Watch != nil {
		o.Watch.Start()
	}
	var release func()
	if o.Starts != nil {
		defer func() {
			for _, in := range o.Starts {
				_ = in.Close()
			}
		}()
		release = func() {
			at := time.Now().Add(startDelay)
			if o.StartAt != nil {
				at = o.StartAt()
			} else if o.Interval > 0 {
				// On a whole interval of the wall clock, as the workers' engines tick
				// their keepalives: a held worker then wakes once an interval for both.
				at = at.Add(o.Interval - 1).Truncate(o.Interval)
			}
			for _, in := range o.Starts {
				_, _ = fmt.Fprintf(in, "go %d\n", at.UnixNano())
			}
			if o.Started != nil {
				o.Started(at)
			}
		}
	}
	src := readWorkers(o.Streams, o.Interval, release)
	log := &intervalLog{target: o.Target, progress: o.Progress, watch: o.Watch, onInterval: o.OnInterval}
	_ = runIntervals(src, log, until{}) // it ends with the streams
	return gathered(src.results, src.errs, log.list, o.Watch)
}

// workerLine is what Gather's readers deliver of worker's stream: a line, a bad line's
// error, or the stream's end (eof, with the reader's error).
type workerLine struct {
	worker int
	line   WorkerLine
	err    error
	eof    bool
}

// workerInterval is an interval line of worker w.
type workerInterval struct {
	w  int
	iv *WorkerInterval
}

// workerSource is Gather's interval source: the workers' interval lines, an interval merged
// once every worker still running has sent it. It keeps their results and errors.
type workerSource struct {
	lines    chan workerLine
	interval time.Duration
	release  func()                   // called once every worker is ready; then nil
	pending  map[int][]workerInterval // seq -> intervals received
	open     []int64                  // each worker's sessions open at its last interval
	results  []*result.Result
	errs     []error
	done     []bool // the worker's stream has ended
	ready    []bool // the worker is ready to start, or has ended
	last     []int  // the last interval the worker sent
	next     int    // the next interval to merge
	maxSeq   int
}

// readWorkers starts reading the streams, one goroutine each; the source ends with them.
func readWorkers(streams []io.Reader, interval time.Duration, release func()) *workerSource {
	n := len(streams)
	s := &workerSource{lines: make(chan workerLine), interval: interval, release: release,
		pending: map[int][]workerInterval{}, open: make([]int64, n), results: make([]*result.Result, n),
		done: make([]bool, n), ready: make([]bool, n), last: make([]int, n), next: 1}
	var wg sync.WaitGroup
	for i, r := range streams {
		wg.Go(func() { s.read(i, r) })
	}
	go func() {
		wg.Wait()
		close(s.lines)
	}()
	return s
}

// read delivers worker i's lines.
func (s *workerSource) read(i int, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l WorkerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			s.lines <- workerLine{worker: i, err: fmt.Errorf("worker %d: bad line %.80q: %w", i, sc.Bytes(), err)}
			continue
		}
		s.lines <- workerLine{worker: i, line: l}
	}
	s.lines <- workerLine{worker: i, eof: true, err: sc.Err()}
}

func (s *workerSource) events() <-chan workerLine { return s.lines }

func (s *workerSource) take(it workerLine, log *intervalLog) {
	if it.err != nil {
		s.errs = append(s.errs, it.err)
	}
	if it.eof {
		s.done[it.worker] = true
	}
	l := it.line
	if l.Ready || it.eof {
		s.ready[it.worker] = true
	}
	if s.release != nil && !slices.Contains(s.ready, false) {
		release := s.release
		s.release = nil
		release()
	}
	switch {
	case l.Interval != nil:
		seq := l.Interval.Seq
		s.last[it.worker] = max(s.last[it.worker], seq)
		s.maxSeq = max(s.maxSeq, seq)
		if seq >= s.next { // an interval already merged cannot be printed again
			s.pending[seq] = append(s.pending[seq], workerInterval{it.worker, l.Interval})
		}
	case l.Error != "":
		s.errs = append(s.errs, &WorkerError{Worker: it.worker, Msg: l.Error, Code: l.Code})
		if l.Result != nil {
			s.results[it.worker] = l.Result
		}
	case l.Result != nil:
		s.results[it.worker] = l.Result
	}
	for s.next <= s.maxSeq && s.sent(s.next) {
		s.merge(s.next, log)
		s.next++
	}
}

// sent reports whether every worker still running has sent interval seq.
func (s *workerSource) sent(seq int) bool {
	for w, done := range s.done {
		if !done && s.last[w] < seq {
			return false
		}
	}
	return true
}

// merge adds interval seq to log: the workers' snapshots added, at the latest worker's
// time, with the sessions open in every worker.
func (s *workerSource) merge(seq int, log *intervalLog) {
	ivs := s.pending[seq]
	delete(s.pending, seq)
	if len(ivs) == 0 {
		return
	}
	sn := result.NewSnapshot()
	ts := 0.0
	var m intervalMark
	for _, x := range ivs {
		sn.Add(x.iv.Snapshot)
		ts = max(ts, x.iv.TS)
		if m.stage == nil {
			m.stage = x.iv.Stage
		}
		s.open[x.w] = x.iv.Open // a worker without this interval counts with its last one
	}
	var open int64
	for _, o := range s.open {
		open += o
	}
	log.add(ts, open, sn, s.interval, m)
}

// gathered merges the workers' results (nil where a worker sent none) and gives the merged
// result the merged intervals.
func gathered(results []*result.Result, errs []error, merged []result.Interval, w *watch.Watch) (*result.Result, error) {
	var got []*result.Result
	for i, r := range results {
		if r == nil {
			errs = append(errs, fmt.Errorf("worker %d ended without a result", i))
			continue
		}
		got = append(got, r)
	}
	if len(got) == 0 {
		return nil, errors.Join(errs...)
	}
	for _, r := range got { // the merged intervals come from the snapshots: result.Merge need not add them
		r.Intervals = nil
	}
	res := result.MergeParts(got)
	res.Intervals = merged
	res.SummarizeStages()
	if w != nil {
		w.Finish(res)
	}
	res.Judge() // the workers share a host: their added CPU and wait for one are its
	return res, errors.Join(errs...)
}
