package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The worker protocol, both directions. A worker process (mqblast run --worker) writes JSON
// lines on its stdout (WorkerWriter): one per interval with its snapshot, a ready line once
// its subscriptions are in place, then its result or its error. The parent reads them
// (Gather) and, once every worker is ready, writes the start line "go UNIXNANO" to each
// worker's stdin: the wall-clock instant at which they all start publishing (AwaitStart).

// WorkerLine is one JSON line a worker process writes on its stdout: an interval snapshot,
// then its final result (or an error).
type WorkerLine struct {
	Ready    bool            `json:"ready,omitempty"` // subscribed: waiting for the start
	Interval *WorkerInterval `json:"interval,omitempty"`
	Result   *Result         `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	Code     int             `json:"code,omitempty"` // the worker's exit code for Error
}

// WorkerInterval is one interval of a worker.
type WorkerInterval struct {
	Seq      int       `json:"seq"`
	TS       float64   `json:"t_s"`
	Open     int64     `json:"open"`
	Snapshot *Snapshot `json:"snapshot"`
}

// WorkerWriter streams a worker's lines. Safe for use from one goroutine.
type WorkerWriter struct {
	enc *json.Encoder
	seq int
}

// NewWorkerWriter writes lines to w.
func NewWorkerWriter(w io.Writer) *WorkerWriter { return &WorkerWriter{enc: json.NewEncoder(w)} }

// Interval writes one interval line.
func (ww *WorkerWriter) Interval(iv Interval, s *Snapshot) error {
	ww.seq++
	return ww.enc.Encode(WorkerLine{Interval: &WorkerInterval{Seq: ww.seq, TS: iv.TS, Open: iv.Established, Snapshot: s}})
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
	line, err := bufio.NewReader(in).ReadString('\n')
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

// Final writes the result line, or the error line when err is not nil.
func (ww *WorkerWriter) Final(r *Result, err error, code int) error {
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

// startDelay is how long after the last worker is ready they all start publishing when
// Gather is not told when: time for the start line to reach every worker.
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
	Watch *Watch
	// OnInterval, if set, receives each merged interval and its snapshot (live /metrics),
	// the caller's to keep.
	OnInterval func(Interval, *Snapshot)
}

// Gather reads the workers' line streams, prints one merged interval line per interval,
// and returns their results merged into one, as if one process had done the run. It
// returns when every stream has ended. Intervals are merged by sequence number from their
// snapshots, so their percentiles are exact.
func Gather(o GatherOptions) (*Result, error) {
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
			}
			for _, in := range o.Starts {
				_, _ = fmt.Fprintf(in, "go %d\n", at.UnixNano())
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
	results  []*Result
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
		pending: map[int][]workerInterval{}, open: make([]int64, n), results: make([]*Result, n),
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
	sn := NewSnapshot()
	ts := 0.0
	for _, x := range ivs {
		sn.Add(x.iv.Snapshot)
		ts = max(ts, x.iv.TS)
		s.open[x.w] = x.iv.Open // a worker without this interval counts with its last one
	}
	var open int64
	for _, o := range s.open {
		open += o
	}
	log.add(ts, open, sn, s.interval)
}

// gathered merges the workers' results (nil where a worker sent none) and gives the merged
// result the merged intervals.
func gathered(results []*Result, errs []error, merged []Interval, watch *Watch) (*Result, error) {
	var got []*Result
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
	res := Merge(got)
	res.Intervals = merged
	if watch != nil {
		watch.Finish(res)
	}
	return res, errors.Join(errs...)
}

// Merge adds the results of shards of one run into one result: counters and histograms are
// added and percentiles computed from the merged histograms, never averaged. Intervals are
// added index by index (their percentiles then come from the first shard: use Gather's
// snapshots for exact interval percentiles).
func Merge(rs []*Result) *Result {
	out := *rs[0]
	out.Connections = Connections{}
	out.Client = ClientInfo{}
	out.Errors = nil // fill rebuilds them; rs[0]'s must stay as they are
	out.Host.Procs = 0
	// A shard's threshold verdicts do not hold for the whole: evaluate the merged result.
	out.Thresholds = nil
	out.Shard = nil // the merged shards make up the whole run (CheckShards)
	out.Kernel, out.Host.Limited, out.Host.LimitedEvidence = nil, false, nil
	out.Start, out.Host.Clock = nil, nil
	total := NewSnapshot()
	var connectPhase float64
	var throughput Throughput
	for _, r := range rs {
		c := &r.Connections
		out.Connections.Target += c.Target
		total.Connected += c.Established
		addMap(total.Refused, c.Refused)
		addMap(total.Failed, c.FailedBy)
		addMap(total.Dropped, c.DroppedBy)
		total.Pings += c.Pings
		total.Reconnected += c.Reconnected
		for _, e := range r.Errors {
			if _, ok := total.Examples[e.Kind]; !ok {
				total.Examples[e.Kind] = e.Example
			}
			if !derivedError(e.Kind) { // the shard's own: fill does not rebuild those
				i := slices.IndexFunc(out.Errors, func(x ErrorCount) bool { return x.Kind == e.Kind })
				if i < 0 {
					out.Errors = append(out.Errors, e)
				} else {
					out.Errors[i].Count += e.Count
				}
			}
		}
		if r.Histograms.ConnectLatency != nil {
			total.ConnectLatency.Merge(r.Histograms.ConnectLatency)
		}
		if r.Histograms.PingRTT != nil {
			total.PingRTT.Merge(r.Histograms.PingRTT)
		}
		if r.Histograms.TLSHandshake != nil {
			total.TLSHandshake.Merge(r.Histograms.TLSHandshake)
		}
		if r.Histograms.WSUpgrade != nil {
			total.WSUpgrade.Merge(r.Histograms.WSUpgrade)
		}
		total.TLSHandshakes += r.Connections.TLSHandshakes
		total.TLSResumed += r.Connections.TLSResumed
		total.TLSCPUUS += int64(r.Connections.TLSHandshakeCPUUSPerOp*float64(r.Connections.TLSHandshakes) + 0.5)
		total.Latency.Merge(r.Histograms.Latency)
		total.LatencyRaw.Merge(r.Histograms.LatencyRaw)
		total.ScheduleLag.Merge(r.Histograms.ScheduleLag)
		if !r.FirstPublishAt.IsZero() {
			total.FirstPublish = earliest(total.FirstPublish, r.FirstPublishAt.UnixNano())
		}
		out.Start = laterStart(out.Start, r.Start)
		out.Host.Clock = worseClock(out.Host.Clock, r.Host.Clock)
		m := &r.Messages
		total.Scheduled += m.Scheduled
		total.Published += m.Published
		addMap(total.Unsent, m.Unsent)
		total.Acked += m.Acked
		total.Expected += m.Expected
		total.Received += m.Received
		total.InFlightAtEnd += m.InFlightAtEnd
		total.InFlightDropped += m.InFlightDropped
		total.InFlightLost += m.InFlightLost
		addMap(total.Unexpected, m.Unexpected)
		b := &r.BrokerStalled
		total.HeldPublishers += b.Publishers
		addMap(total.Holds, b.Holds)
		for k, v := range b.HeldS {
			total.HeldUS[k] += int64(math.Round(v * 1e6))
		}
		total.Duplicated += m.Duplicated
		total.OutOfOrder += m.OutOfOrder
		total.Unmeasured += m.Unmeasured
		total.Subscribed += m.Subscribed
		total.SubscribeFailed += m.SubscribeFailed
		addMap(total.SubscribeRefused, m.SubscribeRefused)
		throughput.PublishPerS += r.Throughput.PublishPerS
		throughput.ReceivePerS += r.Throughput.ReceivePerS
		throughput.WindowS = max(throughput.WindowS, r.Throughput.WindowS)
		connectPhase = max(connectPhase, c.ConnectPhaseS)
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.EndedAt.After(out.EndedAt) {
			out.EndedAt = r.EndedAt
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		if k := r.Kernel; k != nil { // shards on several hosts: their counters add
			if out.Kernel == nil {
				out.Kernel = &Kernel{Client: map[string]int64{}, SameNamespace: k.SameNamespace}
			}
			addMap(out.Kernel.Client, k.Client)
			if len(k.Broker) > 0 {
				if out.Kernel.Broker == nil {
					out.Kernel.Broker = map[string]int64{}
				}
				addMap(out.Kernel.Broker, k.Broker)
			}
			out.Kernel.Findings = append(out.Kernel.Findings, k.Findings...)
		}
		out.Host.Limited = out.Host.Limited || r.Host.Limited
		out.Host.LimitedEvidence = append(out.Host.LimitedEvidence, r.Host.LimitedEvidence...)
		out.Host.Procs += max(r.Host.Procs, 1)
		cl := &r.Client
		out.Client.CPUS += cl.CPUS
		out.Client.CPUMeasureS += cl.CPUMeasureS
		out.Client.RunDelayS += cl.RunDelayS
		out.Client.MaxRSSBytes += cl.MaxRSSBytes
		out.Client.RSSPerConnectionBytes += cl.RSSPerConnectionBytes * float64(c.Established)
		out.Client.CPUPerConnectUS += cl.CPUPerConnectUS * float64(c.Target)
		out.Client.Saturated = out.Client.Saturated || cl.Saturated
		out.Client.SaturationEvidence = append(out.Client.SaturationEvidence, cl.SaturationEvidence...)
	}
	saturated, evidence := out.Client.Saturated, out.Client.SaturationEvidence
	out.fill(total)
	out.Client.Saturated, out.Client.SaturationEvidence = saturated, evidence
	out.Throughput = throughput
	out.Connections.ConnectPhaseS = connectPhase
	if connectPhase > 0 {
		out.Connections.ConnectRatePerS = float64(total.Connected) / connectPhase
	}
	if total.Connected > 0 {
		out.Client.RSSPerConnectionBytes /= float64(total.Connected)
	}
	if out.Connections.Target > 0 {
		out.Client.CPUPerConnectUS /= float64(out.Connections.Target)
	}
	out.Intervals = mergeIntervals(rs)
	return &out
}

// mergeIntervals adds the shards' intervals index by index: counts, rates, the client
// processes' CPU and RSS, kernel counters, and the interval histograms, whose percentiles
// are then exact (an interval without histograms keeps the first shard's percentiles). The
// time and the broker's figures are the first shard's. The inputs are not changed.
func mergeIntervals(rs []*Result) []Interval {
	var out []Interval
	for _, r := range rs {
		for i, iv := range r.Intervals {
			if i >= len(out) {
				iv.Kernel = maps.Clone(iv.Kernel)
				if h := iv.Histograms; h != nil {
					iv.Histograms = &IntervalHistograms{Latency: cloneHist(h.Latency), LatencyRaw: cloneHist(h.LatencyRaw),
						ConnectLatency: cloneHist(h.ConnectLatency), ScheduleLag: cloneHist(h.ScheduleLag)}
				}
				out = append(out, iv)
				continue
			}
			m := &out[i]
			m.Established += iv.Established
			m.Connected += iv.Connected
			m.Failed += iv.Failed
			m.Dropped += iv.Dropped
			m.ConnectPerS += iv.ConnectPerS
			m.Published += iv.Published
			m.Unsent += iv.Unsent
			m.Expected += iv.Expected
			m.Received += iv.Received
			m.Duplicated += iv.Duplicated
			m.Unexpected += iv.Unexpected
			m.Unmeasured += iv.Unmeasured
			m.PublishPerS += iv.PublishPerS
			m.ReceivePerS += iv.ReceivePerS
			m.ClientCPUPercent += iv.ClientCPUPercent
			m.ClientRSSBytes += iv.ClientRSSBytes
			if len(iv.Kernel) > 0 {
				if m.Kernel == nil {
					m.Kernel = map[string]int64{}
				}
				addMap(m.Kernel, iv.Kernel)
			}
			switch h := iv.Histograms; {
			case h == nil:
			case m.Histograms == nil:
				m.Histograms = &IntervalHistograms{Latency: cloneHist(h.Latency), LatencyRaw: cloneHist(h.LatencyRaw),
					ConnectLatency: cloneHist(h.ConnectLatency), ScheduleLag: cloneHist(h.ScheduleLag)}
			default:
				mh := m.Histograms
				mh.Latency, mh.LatencyRaw, mh.ConnectLatency = mergeHist(mh.Latency, h.Latency),
					mergeHist(mh.LatencyRaw, h.LatencyRaw), mergeHist(mh.ConnectLatency, h.ConnectLatency)
				mh.ScheduleLag = mergeHist(mh.ScheduleLag, h.ScheduleLag)
			}
		}
	}
	for i := range out {
		if h := out[i].Histograms; h != nil && len(rs) > 1 {
			out[i].LatencyUS, out[i].LatencyRawUS = h.Latency.Summary(), h.LatencyRaw.Summary()
			out[i].ConnectLatencyUS, out[i].ScheduleLagUS = h.ConnectLatency.Summary(), h.ScheduleLag.Summary()
			packed(h)
		}
	}
	return out
}

// cloneHist returns a copy of h (nil for an empty one, as the document reads it).
func cloneHist(h *Hist) *Hist {
	if h.Count() == 0 {
		return nil
	}
	c := NewHist()
	c.Merge(h)
	return c
}

// mergeHist returns dst with o added (dst is one of mergeIntervals' own copies, or nil).
func mergeHist(dst, o *Hist) *Hist {
	if o.Count() == 0 {
		return dst
	}
	if dst == nil {
		return cloneHist(o)
	}
	dst.Merge(o)
	return dst
}

// laterStart merges the start records of two shards: the latest to be ready, the most late.
func laterStart(a, b *StartInfo) *StartInfo {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	c := *a
	if b.ReadyAt.After(c.ReadyAt) {
		c.ReadyAt = b.ReadyAt
	}
	c.LateMS = max(c.LateMS, b.LateMS)
	return &c
}

// worseClock merges the clock estimates of two shards' hosts: the larger errors, and
// synchronised only if both are.
func worseClock(a, b *Clock) *Clock {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	return &Clock{MaxErrorUS: max(a.MaxErrorUS, b.MaxErrorUS), EstErrorUS: max(a.EstErrorUS, b.EstErrorUS),
		Synchronized: a.Synchronized && b.Synchronized}
}
