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
	"time"
)

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

// Gather reads the line streams of n workers (one reader each), prints one merged interval
// line per interval to progress, and returns their results merged into one, as if one
// process had done the run. It returns when every stream has ended. Intervals are merged by
// sequence number from their snapshots, so their percentiles are exact. release, if not
// nil, is called once when every worker is ready (or has ended): it lets them start
// publishing together. watch, if not nil, samples the host and the broker at each merged
// interval (the workers do not) and fills the merged result at the end. onInterval, if not
// nil, receives each merged interval and its snapshot (live /metrics), the caller's to keep.
func Gather(streams []io.Reader, target int, interval time.Duration, progress io.Writer, release func(), watch *Watch,
	onInterval func(Interval, *Snapshot)) (*Result, error) {
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
	results := make([]*Result, n)
	var errs []error
	var merged []Interval
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
		s := NewSnapshot()
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
		m := NewInterval(ts, total, s, interval)
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
