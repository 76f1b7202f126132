package bench

import (
	"fmt"
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
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{
		Refused: map[string]int64{}, Failed: map[string]int64{}, Dropped: map[string]int64{},
		Examples: map[string]string{}, ConnectLatency: NewHist(), PingRTT: NewHist(),
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

// Recorder implements reactor.Observer with one unsynchronised recorder per event loop.
// Take reads and resets the interval counters; call it from each loop (Engine.OnLoops).
type Recorder struct {
	loops []*Snapshot
}

// NewRecorder returns a recorder for n loops.
func NewRecorder(n int) *Recorder {
	r := &Recorder{loops: make([]*Snapshot, n)}
	for i := range r.loops {
		r.loops[i] = NewSnapshot()
	}
	return r
}

var _ reactor.Observer = (*Recorder)(nil)

// Connected implements reactor.Observer.
func (r *Recorder) Connected(loop, _ int, latency time.Duration) {
	s := r.loops[loop]
	s.Connected++
	s.ConnectLatency.Record(latency.Microseconds())
}

// Reconnected implements reactor.Observer.
func (r *Recorder) Reconnected(loop, _, _ int, _ time.Duration) { r.loops[loop].Reconnected++ }

// Refused implements reactor.Observer.
func (r *Recorder) Refused(loop, _ int, version, code byte) {
	s := r.loops[loop]
	name := ReasonName(version, code)
	s.Refused[name]++
	if _, ok := s.Examples["refused:"+name]; !ok {
		s.Examples["refused:"+name] = fmt.Sprintf("CONNACK reason code 0x%02x (%s)", code, name)
	}
}

// Failed implements reactor.Observer.
func (r *Recorder) Failed(loop, _ int, cause reactor.Cause, example string) {
	s := r.loops[loop]
	s.Failed[cause.String()]++
	if _, ok := s.Examples["failed:"+cause.String()]; !ok {
		s.Examples["failed:"+cause.String()] = example
	}
}

// Dropped implements reactor.Observer.
func (r *Recorder) Dropped(loop, _ int, cause reactor.Cause, example string) {
	s := r.loops[loop]
	s.Dropped[cause.String()]++
	if _, ok := s.Examples["dropped:"+cause.String()]; !ok {
		s.Examples["dropped:"+cause.String()] = example
	}
}

// Ping implements reactor.Observer.
func (r *Recorder) Ping(loop, _ int, rtt time.Duration) {
	s := r.loops[loop]
	s.Pings++
	s.PingRTT.Record(rtt.Microseconds())
}

// Take moves loop's counts into dst and resets them. Call it on that loop.
func (r *Recorder) Take(loop int, dst *Snapshot) {
	s := r.loops[loop]
	dst.Add(s)
	r.loops[loop] = NewSnapshot()
}
