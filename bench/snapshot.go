package bench

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/reactor"
)

// Snapshot is what one process measured over some span: counters and histograms that add
// exactly across loops, processes and hosts. Worker processes stream one per interval to
// their parent as a JSON line.
type Snapshot struct {
	Connected      int64             `json:"connected"`
	Reconnected    int64             `json:"reconnected"`
	Refused        map[string]int64  `json:"refused,omitempty"` // by reason
	Failed         map[string]int64  `json:"failed,omitempty"`  // by cause
	Dropped        map[string]int64  `json:"dropped,omitempty"` // by cause
	Pings          int64             `json:"pings"`
	Examples       map[string]string `json:"examples,omitempty"`
	ConnectLatency *Hist             `json:"connect_latency"`
	PingRTT        *Hist             `json:"ping_rtt"`

	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// SubscribeRefused counts refused filters by SUBACK reason.
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
	Published        int64            `json:"published"`
	Expected         int64            `json:"expected"` // copies the broker should deliver of what was published
	Acked            int64            `json:"acked"`
	Received         int64            `json:"received"`
	Unmeasured       int64            `json:"unmeasured"` // received without a measurement header
	Duplicated       int64            `json:"duplicated"`
	OutOfOrder       int64            `json:"out_of_order"`
	// The measure window's figures (messages due inside it; DESIGN.md §3).
	PublishedMeasured int64 `json:"published_measured"`
	ReceivedMeasured  int64 `json:"received_measured"`
	Latency           *Hist `json:"latency"`     // receive - due (corrected)
	LatencyRaw        *Hist `json:"latency_raw"` // receive - write, for payloads of 24 bytes and more
	ScheduleLag       *Hist `json:"schedule_lag"`
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{
		Refused: map[string]int64{}, Failed: map[string]int64{}, Dropped: map[string]int64{},
		Examples: map[string]string{}, ConnectLatency: NewHist(), PingRTT: NewHist(),
		Latency: NewHist(), LatencyRaw: NewHist(), ScheduleLag: NewHist(), SubscribeRefused: map[string]int64{},
	}
}

// Add adds o into s.
func (s *Snapshot) Add(o *Snapshot) {
	s.Connected += o.Connected
	s.Reconnected += o.Reconnected
	s.Pings += o.Pings
	addMap(s.Refused, o.Refused)
	addMap(s.Failed, o.Failed)
	addMap(s.Dropped, o.Dropped)
	for k, v := range o.Examples {
		if _, ok := s.Examples[k]; !ok {
			s.Examples[k] = v
		}
	}
	s.ConnectLatency.Merge(o.ConnectLatency)
	s.PingRTT.Merge(o.PingRTT)
	s.Subscribed += o.Subscribed
	s.SubscribeFailed += o.SubscribeFailed
	addMap(s.SubscribeRefused, o.SubscribeRefused)
	s.Published += o.Published
	s.Expected += o.Expected
	s.Acked += o.Acked
	s.Received += o.Received
	s.Unmeasured += o.Unmeasured
	s.Duplicated += o.Duplicated
	s.OutOfOrder += o.OutOfOrder
	s.PublishedMeasured += o.PublishedMeasured
	s.ReceivedMeasured += o.ReceivedMeasured
	s.Latency.Merge(o.Latency)
	s.LatencyRaw.Merge(o.LatencyRaw)
	s.ScheduleLag.Merge(o.ScheduleLag)
}

// reset empties s, keeping its maps and histograms.
func (s *Snapshot) reset() {
	hs := [...]*Hist{s.ConnectLatency, s.PingRTT, s.Latency, s.LatencyRaw, s.ScheduleLag}
	ms := [...]map[string]int64{s.Refused, s.Failed, s.Dropped, s.SubscribeRefused}
	ex := s.Examples
	*s = Snapshot{Refused: ms[0], Failed: ms[1], Dropped: ms[2], SubscribeRefused: ms[3], Examples: ex,
		ConnectLatency: hs[0], PingRTT: hs[1], Latency: hs[2], LatencyRaw: hs[3], ScheduleLag: hs[4]}
	for _, h := range hs {
		h.Reset()
	}
	for _, m := range ms {
		clear(m)
	}
	clear(ex)
}

func addMap(dst, src map[string]int64) {
	for k, v := range src {
		dst[k] += v
	}
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// FailedTotal returns the clients that never connected: refused plus failed.
func (s *Snapshot) FailedTotal() int64 { return sum(s.Refused) + sum(s.Failed) }

// DroppedTotal returns the established connections lost.
func (s *Snapshot) DroppedTotal() int64 { return sum(s.Dropped) }

// Recorder implements reactor.Observer with one unsynchronised recorder per event loop:
// counters, histograms and the sequence tracker of every (subscriber, publisher) stream.
// Take reads and resets a loop's interval figures; call it on that loop (Engine.OnLoops).
type Recorder struct {
	loops []*loopRec
	// The measure window in CLOCK_REALTIME ns: messages due in [from, to) count toward
	// latency and throughput. Zero: no window yet.
	from, to atomic.Int64
}

type loopRec struct {
	snap    *Snapshot
	streams map[uint64]uint32 // subscriber<<32 | publisher -> next expected sequence
}

// NewRecorder returns a recorder for n loops.
func NewRecorder(n int) *Recorder {
	r := &Recorder{loops: make([]*loopRec, n)}
	for i := range r.loops {
		r.loops[i] = &loopRec{snap: NewSnapshot(), streams: map[uint64]uint32{}}
	}
	return r
}

// SetWindow sets the measure window, in CLOCK_REALTIME ns. Safe for concurrent use.
func (r *Recorder) SetWindow(from, to int64) {
	r.to.Store(to)
	r.from.Store(from)
}

func (r *Recorder) inWindow(due int64) bool {
	from := r.from.Load()
	return from != 0 && due >= from && due < r.to.Load()
}

var _ reactor.Observer = (*Recorder)(nil)

// Connected implements reactor.Observer.
func (r *Recorder) Connected(loop, _ int, latency time.Duration) {
	s := r.loops[loop].snap
	s.Connected++
	s.ConnectLatency.Record(latency.Microseconds())
}

// Reconnected implements reactor.Observer.
func (r *Recorder) Reconnected(loop, _, _ int, _ time.Duration) { r.loops[loop].snap.Reconnected++ }

// Refused implements reactor.Observer.
func (r *Recorder) Refused(loop, _ int, version, code byte) {
	s := r.loops[loop].snap
	name := ReasonName(version, code)
	s.Refused[name]++
	if _, ok := s.Examples["refused:"+name]; !ok {
		s.Examples["refused:"+name] = fmt.Sprintf("CONNACK reason code 0x%02x (%s)", code, name)
	}
}

// Failed implements reactor.Observer.
func (r *Recorder) Failed(loop, _ int, cause reactor.Cause, example string) {
	s := r.loops[loop].snap
	s.Failed[cause.String()]++
	if _, ok := s.Examples["failed:"+cause.String()]; !ok {
		s.Examples["failed:"+cause.String()] = example
	}
}

// Dropped implements reactor.Observer.
func (r *Recorder) Dropped(loop, _ int, cause reactor.Cause, example string) {
	s := r.loops[loop].snap
	s.Dropped[cause.String()]++
	if _, ok := s.Examples["dropped:"+cause.String()]; !ok {
		s.Examples["dropped:"+cause.String()] = example
	}
}

// Ping implements reactor.Observer.
func (r *Recorder) Ping(loop, _ int, rtt time.Duration) {
	s := r.loops[loop].snap
	s.Pings++
	s.PingRTT.Record(rtt.Microseconds())
}

// Subscribed implements reactor.Observer.
func (r *Recorder) Subscribed(loop, _, failed int, code byte) {
	s := r.loops[loop].snap
	s.Subscribed++
	if failed > 0 {
		s.SubscribeFailed += int64(failed)
		s.SubscribeRefused[ReasonName(5, code)] += int64(failed) // 3.1.1's 0x80 is 5.0's unspecified error
		if _, ok := s.Examples["subscribe_failed"]; !ok {
			s.Examples["subscribe_failed"] = fmt.Sprintf("SUBACK reason code 0x%02x", code)
		}
	}
}

// Published implements reactor.Observer.
func (r *Recorder) Published(loop, _, receivers int, due int64, lag time.Duration) {
	s := r.loops[loop].snap
	s.Published++
	if r.inWindow(due) {
		s.PublishedMeasured++
	}
	s.Expected += int64(receivers)
	s.ScheduleLag.Record(lag.Microseconds())
}

// Acked implements reactor.Observer.
func (r *Recorder) Acked(loop, _ int) { r.loops[loop].snap.Acked++ }

// Received implements reactor.Observer: latency from the due time (and from the write
// time when the payload carries it), and the stream's sequence check. A sequence below the
// next expected one is a duplicate when the DUP flag says so, out of order otherwise.
func (r *Recorder) Received(loop, client int, m reactor.Message) {
	lr := r.loops[loop]
	s := lr.snap
	s.Received++
	if m.Unmeasured {
		s.Unmeasured++
		return
	}
	key := uint64(uint32(client))<<32 | uint64(m.Publisher)
	next, seen := lr.streams[key]
	switch {
	case !seen || m.Seq >= next:
		lr.streams[key] = m.Seq + 1
	case m.Dup || m.Seq == next-1:
		s.Duplicated++
		return
	default:
		s.OutOfOrder++
	}
	if r.inWindow(m.Due) {
		s.ReceivedMeasured++
		s.Latency.Record((m.Now - m.Due) / 1000)
		if m.Sent != 0 {
			s.LatencyRaw.Record((m.Now - m.Sent) / 1000)
		}
	}
}

// Take adds loop's figures since the last Take into dst and resets them. Call it on that
// loop.
func (r *Recorder) Take(loop int, dst *Snapshot) {
	s := r.loops[loop].snap
	dst.Add(s)
	s.reset()
}
