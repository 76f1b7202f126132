package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mqblast/mqblast/result"
)

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
}

// WorkerWriter streams a worker's lines. Safe for use from one goroutine.
type WorkerWriter struct {
	enc *json.Encoder
	seq int
}

// NewWorkerWriter writes lines to w.
func NewWorkerWriter(w io.Writer) *WorkerWriter { return &WorkerWriter{enc: json.NewEncoder(w)} }

// Interval writes one interval line.
func (ww *WorkerWriter) Interval(iv result.Interval, s *result.Snapshot) error {
	ww.seq++
	return ww.enc.Encode(WorkerLine{Interval: &WorkerInterval{Seq: ww.seq, TS: iv.TS, Open: iv.Established, Snapshot: s}})
}

// Ready writes the line that says the worker's subscriptions are in place.
func (ww *WorkerWriter) Ready() error { return ww.enc.Encode(WorkerLine{Ready: true}) }

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

// Gather reads the line streams of n workers (one reader each), prints one merged interval
// line per interval to progress, and returns their results merged into one, as if one
// process had done the run. It returns when every stream has ended. Intervals are merged by
// sequence number from their snapshots, so their percentiles are exact. release, if not
// nil, is called once when every worker is ready (or has ended): it lets them start
// publishing together. watch, if not nil, samples the host and the broker at each merged
// interval (the workers do not) and fills the merged result at the end. onInterval, if not
// nil, receives each merged interval and its snapshot (live /metrics), the caller's to keep.
func Gather(streams []io.Reader, target int, interval time.Duration, progress io.Writer, release func(), watch *Watch,
	onInterval func(result.Interval, *result.Snapshot)) (*result.Result, error) {
	if watch != nil {
		watch.Start()
	}
	type item struct {
		worker int
		line   WorkerLine
		err    error
		eof    bool
	}
	ch := make(chan item)
	for i, r := range streams {
		go func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			for sc.Scan() {
				var l WorkerLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					ch <- item{worker: i, err: fmt.Errorf("worker %d: bad line %.80q: %w", i, sc.Bytes(), err)}
					continue
				}
				ch <- item{worker: i, line: l}
			}
			ch <- item{worker: i, eof: true, err: sc.Err()}
		}()
	}
	n := len(streams)
	type workerIV struct {
		w  int
		iv *WorkerInterval
	}
	pending := map[int][]workerIV{} // seq -> intervals received
	open := make([]int64, n)
	results := make([]*result.Result, n)
	var errs []error
	var merged []result.Interval
	var progressL progressLine
	done := make([]bool, n)      // the worker's stream has ended
	last := make([]int, n)       // the last interval the worker sent
	sent := func(seq int) bool { // every worker still running has sent seq
		for w := range n {
			if !done[w] && last[w] < seq {
				return false
			}
		}
		return true
	}
	flush := func(seq int) {
		ivs := pending[seq]
		delete(pending, seq)
		if len(ivs) == 0 {
			return
		}
		s := result.NewSnapshot()
		ts := 0.0
		for _, x := range ivs {
			s.Add(x.iv.Snapshot)
			ts = max(ts, x.iv.TS)
			open[x.w] = x.iv.Open // a worker without this interval counts with its last one
		}
		var total int64
		for _, o := range open {
			total += o
		}
		m := result.NewInterval(ts, total, s, interval)
		if watch != nil {
			watch.Interval(&m, progress)
		}
		merged = append(merged, m)
		progressL.print(progress, m, target)
		if onInterval != nil {
			onInterval(m, s)
		}
	}
	next, maxSeq, ended := 1, 0, 0
	ready := make([]bool, n)
	released := release == nil
	for ended < n {
		it := <-ch
		if it.err != nil {
			errs = append(errs, it.err)
		}
		if it.eof {
			ended++
			done[it.worker] = true
		}
		l := it.line
		if l.Ready || it.eof {
			ready[it.worker] = true
		}
		if !released && !slices.Contains(ready, false) {
			released = true
			release()
		}
		switch {
		case l.Interval != nil:
			seq := l.Interval.Seq
			last[it.worker] = max(last[it.worker], seq)
			maxSeq = max(maxSeq, seq)
			if seq >= next { // an interval already flushed cannot be printed again
				pending[seq] = append(pending[seq], workerIV{it.worker, l.Interval})
			}
		case l.Error != "":
			errs = append(errs, &WorkerError{Worker: it.worker, Msg: l.Error, Code: l.Code})
			if l.Result != nil {
				results[it.worker] = l.Result
			}
		case l.Result != nil:
			results[it.worker] = l.Result
		}
		for next <= maxSeq && sent(next) {
			flush(next)
			next++
		}
	}
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
	for _, r := range got { // the merged intervals come from the snapshots: Merge need not add them
		r.Intervals = nil
	}
	res := result.Merge(got)
	res.Intervals = merged
	if watch != nil {
		watch.Finish(res)
	}
	return res, errors.Join(errs...)
}
