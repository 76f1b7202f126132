package bench

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
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
	// TLS and WebSocket set-up (reactor.HandshakeObserver): TLS handshakes, their time and
	// the CPU they took (µs, summed), those resumed from a ticket; WebSocket upgrades.
	TLSHandshakes int64 `json:"tls_handshakes,omitempty"`
	TLSResumed    int64 `json:"tls_resumed,omitempty"`
	TLSCPUUS      int64 `json:"tls_cpu_us,omitempty"`
	TLSHandshake  *Hist `json:"tls_handshake"`
	WSUpgrade     *Hist `json:"ws_upgrade"`

	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// SubscribeRefused counts refused filters by SUBACK reason.
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
	// Scheduled counts the messages due before the stop, reported at the end of publishing
	// (published + unsent).
	Scheduled int64 `json:"scheduled"`
	Published int64 `json:"published"` // written to the socket, not merely queued
	// FirstPublish is when the first PUBLISH was written, CLOCK_REALTIME ns (0: none yet).
	// It is a minimum, not a count: Add keeps the earlier.
	FirstPublish int64            `json:"first_publish,omitempty"`
	Unsent       map[string]int64 `json:"unsent,omitempty"` // scheduled, never written, by cause
	Expected     int64            `json:"expected"`         // copies the broker should deliver of what was published
	Acked        int64            `json:"acked"`
	// InFlightDropped are written QoS 1/2 messages whose connection ended unacknowledged
	// and whose session did not survive, InFlightLost the copies of them that did not
	// arrive; InFlightAtEnd the copies of messages still unacknowledged on open
	// connections at the end that did not arrive (both computed by Recorder.Finish).
	InFlightDropped int64 `json:"in_flight_dropped"`
	InFlightLost    int64 `json:"in_flight_lost"`
	InFlightAtEnd   int64 `json:"in_flight_at_end"`
	// Received counts the distinct copies that arrived on expected streams; duplicates,
	// copies for no expected stream and foreign payloads are counted apart.
	Received   int64            `json:"received"`
	Unmeasured int64            `json:"unmeasured"` // received without mqblast's measurement header
	Unexpected map[string]int64 `json:"unexpected,omitempty"`
	Duplicated int64            `json:"duplicated"`
	OutOfOrder int64            `json:"out_of_order"`
	// Holds: publisher holds (the broker's flow control, its not reading, no connection)
	// that ended, by kind, their total in µs, and the publishers held at least once.
	Holds          map[string]int64 `json:"holds,omitempty"`
	HeldUS         map[string]int64 `json:"held_us,omitempty"`
	HeldPublishers int64            `json:"held_publishers"`
	// The measure window's figures: messages written (published) and arrived (received)
	// inside it (DESIGN.md §3); latency covers the messages due inside it.
	PublishedMeasured int64 `json:"published_measured"`
	ReceivedMeasured  int64 `json:"received_measured"`
	Latency           *Hist `json:"latency"`     // receive - due (corrected)
	LatencyRaw        *Hist `json:"latency_raw"` // receive - write, for payloads of 24 bytes and more
	ScheduleLag       *Hist `json:"schedule_lag"`
	// CPUNS and RSSBytes are the client processes' CPU time over an interval and their
	// resident set at its end, summed over processes; only interval snapshots carry them.
	CPUNS    int64 `json:"cpu_ns,omitempty"`
	RSSBytes int64 `json:"rss_bytes,omitempty"`
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{
		Refused: map[string]int64{}, Failed: map[string]int64{}, Dropped: map[string]int64{},
		Examples: map[string]string{}, ConnectLatency: NewHist(), PingRTT: NewHist(),
		TLSHandshake: NewHist(), WSUpgrade: NewHist(), Latency: NewHist(), LatencyRaw: NewHist(), ScheduleLag: NewHist(), SubscribeRefused: map[string]int64{},
		Unsent: map[string]int64{}, Unexpected: map[string]int64{}, Holds: map[string]int64{}, HeldUS: map[string]int64{},
	}
}

// Add adds o into s.
func (s *Snapshot) Add(o *Snapshot) {
	s.FirstPublish = earliest(s.FirstPublish, o.FirstPublish)
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
	s.TLSHandshakes += o.TLSHandshakes
	s.TLSResumed += o.TLSResumed
	s.TLSCPUUS += o.TLSCPUUS
	if o.TLSHandshake != nil {
		s.TLSHandshake.Merge(o.TLSHandshake)
	}
	if o.WSUpgrade != nil {
		s.WSUpgrade.Merge(o.WSUpgrade)
	}
	s.Subscribed += o.Subscribed
	s.SubscribeFailed += o.SubscribeFailed
	addMap(s.SubscribeRefused, o.SubscribeRefused)
	s.Scheduled += o.Scheduled
	s.Published += o.Published
	addMap(s.Unsent, o.Unsent)
	s.Expected += o.Expected
	s.Acked += o.Acked
	s.InFlightDropped += o.InFlightDropped
	s.InFlightLost += o.InFlightLost
	s.InFlightAtEnd += o.InFlightAtEnd
	s.Received += o.Received
	s.Unmeasured += o.Unmeasured
	addMap(s.Unexpected, o.Unexpected)
	addMap(s.Holds, o.Holds)
	addMap(s.HeldUS, o.HeldUS)
	s.HeldPublishers += o.HeldPublishers
	s.Duplicated += o.Duplicated
	s.OutOfOrder += o.OutOfOrder
	s.PublishedMeasured += o.PublishedMeasured
	s.ReceivedMeasured += o.ReceivedMeasured
	s.Latency.Merge(o.Latency)
	s.LatencyRaw.Merge(o.LatencyRaw)
	s.ScheduleLag.Merge(o.ScheduleLag)
	s.CPUNS += o.CPUNS
	s.RSSBytes += o.RSSBytes
}

// reset empties s, keeping its maps and histograms.
func (s *Snapshot) reset() {
	hs := [...]*Hist{s.ConnectLatency, s.PingRTT, s.Latency, s.LatencyRaw, s.ScheduleLag, s.TLSHandshake, s.WSUpgrade}
	ms := [...]map[string]int64{s.Refused, s.Failed, s.Dropped, s.SubscribeRefused, s.Unsent, s.Unexpected, s.Holds, s.HeldUS}
	ex := s.Examples
	*s = Snapshot{Refused: ms[0], Failed: ms[1], Dropped: ms[2], SubscribeRefused: ms[3], Examples: ex,
		Unsent: ms[4], Unexpected: ms[5], Holds: ms[6], HeldUS: ms[7],
		ConnectLatency: hs[0], PingRTT: hs[1], Latency: hs[2], LatencyRaw: hs[3], ScheduleLag: hs[4],
		TLSHandshake: hs[5], WSUpgrade: hs[6]}
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

// UnsentTotal returns the scheduled messages never written.
func (s *Snapshot) UnsentTotal() int64 { return sum(s.Unsent) }

// UnexpectedTotal returns the measured copies that arrived for no expected stream.
func (s *Snapshot) UnexpectedTotal() int64 { return sum(s.Unexpected) }

// Recorder implements reactor.Observer with one unsynchronised recorder per event loop:
// counters, histograms and the received set of every (subscriber, publisher) stream.
// Take reads and resets a loop's interval figures; call it on that loop (Engine.OnLoops).
type Recorder struct {
	loops []*loopRec
	// The measure window in CLOCK_REALTIME ns: messages due in [from, to) count toward
	// latency, messages written and arrived in it toward throughput. Zero: no window yet.
	from, to atomic.Int64
	start    atomic.Int64 // when publishing started (CLOCK_REALTIME ns; 0: not yet)
	// Stream, if set, classifies the stream of a receiving client and a publisher number
	// (scenario.Plan.Stream); nil accepts every stream as the client's own (the plan does
	// not know its publishers, as in a Subscribe run).
	Stream func(client int, publisher uint32) (kind scenario.StreamKind, share int)
}

type loopRec struct {
	snap    *Snapshot
	first   int64              // the loop's earliest PUBLISH write (CLOCK_REALTIME ns); MaxInt64: none
	streams map[uint64]*stream // subscriber<<32 | publisher (or a share group's key)
	held    map[int]bool       // publishers held at least once
	ends    []publisherEnd
	// last is streams[lastKey], the stream of the last message (nil: none yet).
	last    *stream
	lastKey uint64
}

// publisherEnd is a publisher's reactor.PublisherEnd, kept for Finish.
type publisherEnd struct {
	number    uint32
	receivers int
	dropped   bool // in flight when a session ended, not at the end
	inFlight  []uint32
}

// shareKey marks the stream key of a share group (share index and publisher).
const shareKey = 1 << 63

// stream is one expected stream's received sequence numbers, as sorted disjoint ranges.
type stream struct {
	kind scenario.StreamKind
	pub  uint32
	set  seqSet
	to   *stream // a share group's stream: the members' copies count there
	// A share group member's highest sequence number so far (seen: any): order is
	// checked per member, since MQTT orders the messages a client receives (5.0 §4.6)
	// and promises no order across a share group's members (§4.8.2).
	top  uint32
	seen bool
}

// NewRecorder returns a recorder for n loops.
func NewRecorder(n int) *Recorder {
	r := &Recorder{loops: make([]*loopRec, n)}
	for i := range r.loops {
		r.loops[i] = &loopRec{snap: NewSnapshot(), first: math.MaxInt64, streams: map[uint64]*stream{}, held: map[int]bool{}}
	}
	return r
}

// SetWindow sets the measure window, in CLOCK_REALTIME ns. Safe for concurrent use.
func (r *Recorder) SetWindow(from, to int64) {
	r.to.Store(to)
	r.from.Store(from)
}

// SetStart records when publishing starts (CLOCK_REALTIME ns): a message of mqblast's
// due before it is stale (an earlier run's, retained or kept in a session). Safe for
// concurrent use.
func (r *Recorder) SetStart(at int64) { r.start.Store(at) }

func (r *Recorder) inWindow(t int64) bool {
	from := r.from.Load()
	return from != 0 && t >= from && t < r.to.Load()
}

var _ reactor.Observer = (*Recorder)(nil)

// Connected implements reactor.Observer.
func (r *Recorder) Connected(loop, _ int, latency time.Duration) {
	s := r.loops[loop].snap
	s.Connected++
	s.ConnectLatency.Record(latency.Microseconds())
}

var _ reactor.HandshakeObserver = (*Recorder)(nil)

// Handshake implements reactor.HandshakeObserver.
func (r *Recorder) Handshake(loop, _ int, h reactor.Handshake) {
	s := r.loops[loop].snap
	if h.TLS > 0 {
		s.TLSHandshakes++
		s.TLSHandshake.Record(h.TLS.Microseconds())
		s.TLSCPUUS += h.TLSCPU.Microseconds()
		if h.Resumed {
			s.TLSResumed++
		}
	}
	if h.WebSocket > 0 {
		s.WSUpgrade.Record(h.WebSocket.Microseconds())
	}
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
func (r *Recorder) Published(loop, _, receivers int, _, at int64, lag time.Duration) {
	lr := r.loops[loop]
	s := lr.snap
	s.Published++
	if at < lr.first {
		lr.first = at
	}
	if r.inWindow(at) {
		s.PublishedMeasured++
	}
	s.Expected += int64(receivers)
	s.ScheduleLag.Record(lag.Microseconds())
}

// Unsent implements reactor.Observer.
func (r *Recorder) Unsent(loop, _ int, cause reactor.Unsent, n int) {
	r.loops[loop].snap.Unsent[cause.String()] += int64(n)
}

// Held implements reactor.Observer.
func (r *Recorder) Held(loop, client int, hold reactor.Hold, d time.Duration) {
	lr := r.loops[loop]
	s := lr.snap
	s.Holds[hold.String()]++
	s.HeldUS[hold.String()] += d.Microseconds()
	if !lr.held[client] {
		lr.held[client] = true
		s.HeldPublishers++
	}
}

// InFlightDropped implements reactor.Observer.
func (r *Recorder) InFlightDropped(loop, _ int, end *reactor.PublisherEnd) {
	lr := r.loops[loop]
	lr.snap.InFlightDropped += int64(len(end.InFlight))
	lr.ends = append(lr.ends, publisherEnd{number: end.Number, receivers: end.Receivers, dropped: true,
		inFlight: append([]uint32(nil), end.InFlight...)})
}

// PublisherEnd implements reactor.Observer.
func (r *Recorder) PublisherEnd(loop, _ int, end *reactor.PublisherEnd) {
	lr := r.loops[loop]
	lr.snap.Scheduled += end.Scheduled
	if len(end.InFlight) > 0 {
		lr.ends = append(lr.ends, publisherEnd{number: end.Number, receivers: end.Receivers,
			inFlight: append([]uint32(nil), end.InFlight...)})
	}
}

// Acked implements reactor.Observer.
func (r *Recorder) Acked(loop, _ int) { r.loops[loop].snap.Acked++ }

// Plausibility of a header's due time against the receiver's clock: a payload whose due
// time is further off is not one of mqblast's (unmeasured). Hosts of a sharded run may
// disagree by a clock error; a run is not longer than a day.
const (
	futureSlack = time.Minute
	pastSlack   = 24 * time.Hour
	// staleSlack is how long before publishing started a message may be due and still
	// count as this run's (separate processes start publishing at one instant, up to the
	// hosts' clock error apart).
	staleSlack = time.Second
)

// Received implements reactor.Observer: the stream's received set (a copy already in it is
// a duplicate, one below the highest is out of order), then latency from the due time (and
// from the write time when the payload carries it). Called per message: the stream is
// classified once, on its first message.
func (r *Recorder) Received(loop, client int, m reactor.Message) {
	lr := r.loops[loop]
	s := lr.snap
	if m.Unmeasured || m.Due > m.Now+int64(futureSlack) || m.Due < m.Now-int64(pastSlack) {
		s.Unmeasured++
		return
	}
	if start := r.start.Load(); r.Stream != nil && (start == 0 || m.Due < start-int64(staleSlack)) {
		s.Unexpected["stale"]++
		return
	}
	key := uint64(uint32(client))<<32 | uint64(m.Publisher)
	st := lr.last
	if st == nil || lr.lastKey != key { // the messages of one read are mostly one stream's
		if st = lr.streams[key]; st == nil {
			st = lr.newStream(r, client, m.Publisher, key)
		}
		lr.last, lr.lastKey = st, key
	}
	if st.kind != scenario.StreamExpected {
		s.Unexpected[st.kind.String()]++
		return
	}
	var dup, late bool
	if g := st.to; g != nil {
		dup, _ = g.set.add(m.Seq)
		if !dup {
			late = st.seen && m.Seq < st.top
			st.top, st.seen = max(st.top, m.Seq), true
		}
	} else {
		dup, late = st.set.add(m.Seq)
	}
	if dup {
		s.Duplicated++
		return
	}
	s.Received++
	if late {
		s.OutOfOrder++
	}
	if r.inWindow(m.Now) {
		s.ReceivedMeasured++
	}
	if r.inWindow(m.Due) {
		s.Latency.Record((m.Now - m.Due) / 1000)
		if m.Sent != 0 {
			s.LatencyRaw.Record((m.Now - m.Sent) / 1000)
		}
	}
}

// newStream classifies and keeps the stream of client and publisher.
func (lr *loopRec) newStream(r *Recorder, client int, pub uint32, key uint64) *stream {
	st := &stream{kind: scenario.StreamExpected, pub: pub}
	share := -1
	if r.Stream != nil {
		st.kind, share = r.Stream(client, pub)
	}
	if st.kind == scenario.StreamExpected && share >= 0 {
		gk := shareKey | uint64(uint32(share))<<32 | uint64(pub)
		g := lr.streams[gk]
		if g == nil {
			g = &stream{kind: scenario.StreamExpected, pub: pub}
			lr.streams[gk] = g
		}
		st.to = g
	}
	lr.streams[key] = st
	return st
}

// Finish completes the figures that need every stream at once, after the run (the loops
// no longer deliver): the copies a share group received in more than one loop are
// duplicates; of the messages still in flight at the end (QoS 1/2, written, never
// acknowledged), the copies that did not arrive are in_flight_at_end rather than lost, and
// of those dropped with a session, in_flight_lost. It
// returns those corrections as a snapshot to add to the run's total.
func (r *Recorder) Finish() *Snapshot {
	out := NewSnapshot()
	// Share groups received in several loops: the union is what the group received.
	groups := map[uint64][]*seqSet{}
	for _, lr := range r.loops {
		for k, st := range lr.streams {
			if k&shareKey != 0 {
				groups[k] = append(groups[k], &st.set)
			}
		}
	}
	union := map[uint64]*seqSet{}
	for k, sets := range groups {
		if len(sets) == 1 {
			union[k] = sets[0]
			continue
		}
		u := &seqSet{}
		var n int64
		for _, x := range sets {
			n += x.n
			u.union(x)
		}
		union[k] = u
		out.Duplicated += n - u.n
		out.Received -= n - u.n
	}
	// The received sets of each publisher with messages in flight at the end.
	var ends []publisherEnd
	for _, lr := range r.loops {
		ends = append(ends, lr.ends...)
	}
	if len(ends) == 0 {
		return out
	}
	byPub := map[uint32][]*seqSet{}
	want := map[uint32]bool{}
	for _, e := range ends {
		want[e.number] = true
	}
	for _, lr := range r.loops {
		for k, st := range lr.streams {
			if k&shareKey != 0 || st.kind != scenario.StreamExpected || st.to != nil || !want[st.pub] {
				continue
			}
			byPub[st.pub] = append(byPub[st.pub], &st.set)
		}
	}
	for k, u := range union {
		if pub := uint32(k); want[pub] {
			byPub[pub] = append(byPub[pub], u)
		}
	}
	for _, e := range ends {
		sets := byPub[e.number]
		for _, seq := range e.inFlight {
			got := 0
			for _, x := range sets {
				if x.has(seq) {
					got++
				}
			}
			if e.dropped {
				out.InFlightLost += int64(max(e.receivers-got, 0))
			} else {
				out.InFlightAtEnd += int64(max(e.receivers-got, 0))
			}
		}
	}
	return out
}

// Take adds loop's figures since the last Take into dst and resets them. Call it on that
// loop.
func (r *Recorder) Take(loop int, dst *Snapshot) {
	lr := r.loops[loop]
	dst.Add(lr.snap)
	lr.snap.reset()
	if lr.first != math.MaxInt64 {
		dst.FirstPublish = earliest(dst.FirstPublish, lr.first)
	}
}

// earliest returns the earlier of two CLOCK_REALTIME ns times, 0 meaning none.
func earliest(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}
