package bench

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// Recorder implements reactor.Observer with one unsynchronised recorder per event loop:
// counters, histograms and the received set of every (subscriber, publisher) stream.
// Take reads and resets a loop's interval figures; call it on that loop (Engine.OnLoops).
type Recorder struct {
	loops []*loopRec
	// The measure window in CLOCK_REALTIME ns: messages due in [from, to) count toward
	// latency, messages written and arrived in it toward throughput. Zero: no window yet.
	from, to atomic.Int64
	start    atomic.Int64 // when publishing started (CLOCK_REALTIME ns; 0: not yet)
	// planOutside: the plan says this part receives copies of other parts' publishers
	// (Placement.Receives); asked once (planAsked), by the drain.
	planOutside, planAsked bool
	// Stream, if set, classifies the stream of a receiving client and a publisher number
	// (scenario.Plan.Stream); nil accepts every stream as the client's own (the plan does
	// not know its publishers, as in a Subscribe run).
	Stream func(client int, publisher uint32) (kind scenario.StreamKind, share int)
	// StreamCycle, if set, says which messages of a publisher that cycles over topics an
	// expected stream takes (scenario.Plan.StreamCycle): those whose sequence number
	// modulo n is one of positions; nil positions, or a nil StreamCycle: every message.
	// The stream's set numbers them its own way (result.Cycle), so that a subscriber of
	// one topic of three holds one range, and a copy of a message it does not take is
	// unexpected, not_expected.
	StreamCycle func(client int, publisher uint32) (positions []int, n int)
	// StreamAlso, if set, gives the other streams on which a client takes some of such a
	// publisher's messages (scenario.Plan.StreamAlso): through a share group with some
	// topics and through its own filters with others, each a stream of its own.
	StreamAlso func(client int, publisher uint32) []scenario.StreamPart
	// RunTag is this run's tag (reactor.Config.RunTag): a measured copy that carries
	// another is another run's, unexpected other_run, unless AnyRun accepts the copies of
	// every run (a Subscribe run that was not told its publishers' run identity).
	RunTag uint16
	AnyRun bool
	// RetainedLate, when above 0, is how long after publishing began every publisher of
	// the run has published a retained message on each subscriber's topics: a SUBACK then
	// counts as a late subscription (result.Snapshot.LateSubscribed), which the broker
	// answers with the retained messages. 0: the plan does not say so.
	RetainedLate time.Duration
	// Describe, if set, gives a client's id (Runner.Describe): a refusal's example names
	// the first client refused for its reason.
	Describe func(client int) (id, topic string)
	// Placement, if set, says that this process runs a part of the run (a worker, a
	// shard): Finish then leaves what crosses parts for the merge (result.Join).
	Placement *Placement
	// gClient and gPub give the group of each client (by plan index) and of each
	// publisher number of a mixed run (SetGroups); groups is 0 without: one group, no
	// per-group figures.
	gClient, gPub scenario.GroupRuns
	groups        int
	// gShare gives the receiving group of each share index (scenario.Plan.ShareGroups).
	gShare []uint8
	// gRequest marks the request groups (by group): of their messages' copies only the
	// responses, which come back to the group, count in its latency; a request's copy
	// counts in the latency of the group that received it (a respond group's).
	gRequest []bool
	// finMissing and finShared are what Finish found per publisher number for Silent: the
	// expected copies of its messages in flight (at the end or when a session ended) that
	// did not arrive, and the copies its share groups received.
	finMissing, finShared map[uint32]int64
}

// SetGroups makes the recorder keep per-group figures (result.Snapshot.Groups) for n
// groups: client and publisher give each client's and each publisher number's group, and
// share each share index's receiving group (nil: none). Call it before the run.
func (r *Recorder) SetGroups(n int, client, publisher scenario.GroupRuns, share []uint8) {
	r.gClient, r.gPub, r.gShare, r.groups = client, publisher, share, n
	for _, lr := range r.loops {
		lr.snap.Groups = make([]*result.Snapshot, n)
		for i := range lr.snap.Groups {
			lr.snap.Groups[i] = result.NewGroupSnapshot()
		}
		lr.gShareExtra = make([]int64, n)
	}
}

// byClient returns the group snapshot of client in s, nil without groups.
func (r *Recorder) byClient(s *result.Snapshot, client int) *result.Snapshot {
	if g := r.gClient.Of(client); g >= 0 {
		return s.Groups[g]
	}
	return nil
}

// byPublisher returns the group snapshot of publisher number pub in s, nil without
// groups.
func (r *Recorder) byPublisher(s *result.Snapshot, pub uint32) *result.Snapshot {
	if g := r.pubGroup(pub); g >= 0 {
		return s.Groups[g]
	}
	return nil
}

// pubGroup returns the group of publisher number pub, -1 without groups.
func (r *Recorder) pubGroup(pub uint32) int {
	return r.gPub.Of(int(pub))
}

// Placement is where a part of a run stands in the whole: which publishers it runs, and
// which have expected receivers in other parts (scenario.Plan's Publishes and
// ReceivedOutside).
type Placement struct {
	Publishes func(publisher uint32) bool
	Outside   func(publisher uint32) bool
	// Receives, if set, says whether a client of this part may receive copies of another
	// part's publisher (scenario.Plan's ReceivesOutside); asked once, when first needed.
	Receives func() bool
}

type loopRec struct {
	snap    *result.Snapshot
	first   int64              // the loop's earliest PUBLISH write (CLOCK_REALTIME ns); MaxInt64: none
	streams map[uint64]*stream // subscriber<<32 | publisher (or a share group's key)
	held    map[int]bool       // publishers held at least once
	behaved map[behaved]bool   // the clients of each per-client behaviour, counted once each
	ends    []publisherEnd
	// last is streams[lastKey], the stream of the last message (nil: none yet).
	last    *stream
	lastKey uint64
	// back is when each client that reconnected last did (CLOCK_REALTIME ns; nil until the
	// loop's first reconnect): a copy due before it that arrives after it was kept for the
	// client while it was away, and a QoS 1 copy that arrives again once its subscriber has
	// reconnected is a re-delivery, with or without the DUP flag.
	back map[int]int64
	// shareExtra counts copies a share group's member received that another member of
	// its group (in this loop) had received: one copy to several members. Finish tells a
	// broker that does not share (most copies so) from a few re-deliveries. gShareExtra
	// counts them by the publisher's group (SetGroups; nil: one group).
	shareExtra  int64
	gShareExtra []int64
	// silent is the loop's account of its publishers for Recorder.Silent.
	silent silentLoop
	// cycles are the numberings of the loop's streams of publishers that cycle over
	// topics (stream.cyc indexes it; 0 is none), cycleIdx each one's index by its key.
	cycles   []*result.Cycle
	cycleIdx map[string]uint32
	// alts are the other streams of a client and a publisher whose messages reach it on
	// several (Recorder.StreamAlso), by the stream its key finds: a copy that stream does
	// not take goes to the first of them that does.
	alts map[*stream][]*stream
}

// alt returns the stream among st's others (loopRec.alts) that takes the publisher's
// message seq, and its number there; ok is false when none does.
func (lr *loopRec) alt(st *stream, seq uint32) (*stream, uint32, bool) {
	for _, a := range lr.alts[st] {
		if n, ok := lr.cycles[a.cyc].Index(seq); ok {
			return a, n, true
		}
	}
	return st, seq, false
}

// cycleOf returns the index in lr.cycles of the numbering of a stream that takes the
// messages at positions of a cycle of n topics, kept once per loop.
func (lr *loopRec) cycleOf(positions []int, n int) uint32 {
	c := result.NewCycle(n, positions)
	k := c.Key()
	if i, ok := lr.cycleIdx[k]; ok {
		return i
	}
	if lr.cycleIdx == nil {
		lr.cycles, lr.cycleIdx = []*result.Cycle{nil}, map[string]uint32{}
	}
	i := uint32(len(lr.cycles))
	lr.cycles = append(lr.cycles, c)
	lr.cycleIdx[k] = i
	return i
}

// cycle returns the numbering of st (nil: its sequence numbers).
func (lr *loopRec) cycle(st *stream) *result.Cycle {
	if st.cyc == 0 {
		return nil
	}
	return lr.cycles[st.cyc]
}

// silentLoop is a loop's account of its publishers, for Recorder.Silent: what each
// should have had delivered, and whether its connection stayed up. Kept off the per-message
// path (Unsent, PublishRefused, ResponseUnsent and the connection events are per batch or
// rare).
type silentLoop struct {
	unsent     map[int]int64    // scheduled messages never written, by client
	refused    map[int]int64    // expected copies of refused messages, by client
	unwell     map[int]bool     // clients whose connection dropped, or that reconnected
	unanswered map[uint32]int64 // expected responses a responder did not send, by publisher
	pubs       []silentPub      // each publisher at its end
}

// silentPub is a publisher at its end: its client, its number and the expected copies of
// the messages it wrote (written times receivers).
type silentPub struct {
	client int
	number uint32
	copies int64
}

// unwell marks client's connection as one that did not stay up.
func (sl *silentLoop) markUnwell(client int) {
	if sl.unwell == nil {
		sl.unwell = map[int]bool{}
	}
	sl.unwell[client] = true
}

// publisherEnd is a publisher's reactor.PublisherEnd, kept for Finish.
type publisherEnd struct {
	number    uint32
	receivers int
	topicRcv  []int // reactor.PublisherEnd.TopicReceivers
	dropped   bool  // in flight when a session ended, not at the end
	inFlight  []uint32
}

// receiversOf returns the copies expected of the publisher's message seq.
func (e *publisherEnd) receiversOf(seq uint32) int64 {
	if len(e.topicRcv) > 0 {
		return int64(e.topicRcv[seq%uint32(len(e.topicRcv))])
	}
	return int64(e.receivers)
}

// shareKey marks the stream key of a share group (share index and publisher).
const shareKey = 1 << 63

// stream is one expected stream's received sequence numbers, as sorted disjoint ranges.
type stream struct {
	kind scenario.StreamKind
	seen bool
	pub  uint32
	set  seqSet
	to   *stream // a share group's stream: the members' copies count there
	// A share group member's highest sequence number so far (seen: any): order is
	// checked per member, since MQTT orders the messages a client receives (5.0 §4.6)
	// and promises no order across a share group's members (§4.8.2).
	top uint32
	// cyc indexes loopRec.cycles: the stream's numbering of its publisher's messages
	// (0: their sequence numbers), by which set and top hold them.
	cyc uint32
}

// NewRecorder returns a recorder for n loops.
func NewRecorder(n int) *Recorder {
	r := &Recorder{loops: make([]*loopRec, n)}
	for i := range r.loops {
		r.loops[i] = &loopRec{snap: result.NewSnapshot(), first: math.MaxInt64, streams: map[uint64]*stream{}, held: map[int]bool{},
			behaved: map[behaved]bool{}}
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
func (r *Recorder) Connected(loop, client int, latency time.Duration) {
	s := r.loops[loop].snap
	s.Connected++
	s.ConnectLatency.Record(latency.Microseconds())
	if g := r.byClient(s, client); g != nil {
		g.Connected++
		g.ConnectLatency.Record(latency.Microseconds())
	}
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
		if h.RecordLayer != "" {
			if s.RecordLayer == nil {
				s.RecordLayer = map[string]int64{}
			}
			s.RecordLayer[h.RecordLayer]++
		}
		if h.Minted {
			s.CertsMinted++
			s.CertMint.Record(h.ClientCert.Microseconds())
			s.CertMintCPUUS += h.ClientCertCPU.Microseconds()
		}
	}
	if h.WebSocket > 0 {
		s.WSUpgrade.Record(h.WebSocket.Microseconds())
	}
}

// Reconnected implements reactor.Observer.
func (r *Recorder) Reconnected(loop, client, _ int, latency time.Duration) {
	lr := r.loops[loop]
	if lr.back == nil {
		lr.back = map[int]int64{}
	}
	lr.back[client] = time.Now().UnixNano()
	lr.silent.markUnwell(client)
	s := lr.snap
	s.Reconnected++
	s.ReconnectLatency.Record(latency.Microseconds())
	if g := r.byClient(s, client); g != nil {
		g.Reconnected++
		g.ReconnectLatency.Record(latency.Microseconds())
	}
}

// Refused implements reactor.Observer: a first connect's refusal is a client that never
// connected, a reconnect attempt's a failed reconnect (result.Snapshot.ReconnectFailed).
func (r *Recorder) Refused(loop, client, attempt int, version, code byte) {
	s := r.loops[loop].snap
	name := ReasonName(version, code)
	if attempt > 0 {
		r.reconnectFailed(s, client, "refused:"+name, fmt.Sprintf("CONNACK reason code 0x%02x (%s)", code, name))
		return
	}
	s.Refused[name]++
	if g := r.byClient(s, client); g != nil {
		g.Refused[name]++
	}
	if _, ok := s.Examples["refused:"+name]; !ok {
		ex := fmt.Sprintf("CONNACK reason code 0x%02x (%s)", code, name)
		if r.Describe != nil { // the first client refused for this reason, by its id
			id, _ := r.Describe(client)
			ex = "client " + termtext.Line(id) + ": " + ex
		}
		s.Examples["refused:"+name] = ex
	}
}

// Failed implements reactor.Observer: as Refused, a first connect's failure is a client,
// a reconnect attempt's a failed reconnect.
func (r *Recorder) Failed(loop, client, attempt int, cause reactor.Cause, example string) {
	s := r.loops[loop].snap
	if attempt > 0 {
		r.reconnectFailed(s, client, cause.String(), example)
		return
	}
	s.Failed[cause.String()]++
	if g := r.byClient(s, client); g != nil {
		g.Failed[cause.String()]++
	}
	if _, ok := s.Examples["failed:"+cause.String()]; !ok {
		s.Examples["failed:"+cause.String()] = termtext.Line(example)
	}
}

// reconnectFailed counts a failed reconnect attempt of client in s by cause, with its
// example.
func (r *Recorder) reconnectFailed(s *result.Snapshot, client int, cause, example string) {
	s.ReconnectFailed[cause]++
	if g := r.byClient(s, client); g != nil {
		g.ReconnectFailed[cause]++
	}
	if k := "reconnect_failed:" + cause; s.Examples[k] == "" {
		s.Examples[k] = termtext.Line(example)
	}
}

// Dropped implements reactor.Observer.
func (r *Recorder) Dropped(loop, client int, cause reactor.Cause, example string) {
	r.loops[loop].silent.markUnwell(client)
	s := r.loops[loop].snap
	s.Dropped[cause.String()]++
	if g := r.byClient(s, client); g != nil {
		g.Dropped[cause.String()]++
	}
	if _, ok := s.Examples["dropped:"+cause.String()]; !ok {
		s.Examples["dropped:"+cause.String()] = termtext.Line(example)
	}
}

// Ping implements reactor.Observer.
func (r *Recorder) Ping(loop, _ int, rtt time.Duration) {
	s := r.loops[loop].snap
	s.Pings++
	s.PingRTT.Record(rtt.Microseconds())
}

// Subscribed implements reactor.Observer.
func (r *Recorder) Subscribed(loop, client, failed int, code byte) {
	s := r.loops[loop].snap
	s.Subscribed++
	if d := r.RetainedLate; d > 0 && failed == 0 {
		if st := r.start.Load(); st != 0 && time.Now().UnixNano() >= st+int64(d) {
			s.LateSubscribed++
		}
	}
	if g := r.byClient(s, client); g != nil {
		g.Subscribed++
		g.SubscribeFailed += int64(failed)
	}
	if failed > 0 {
		name := ReasonName(5, code) // 3.1.1's 0x80 is 5.0's unspecified error
		s.SubscribeFailed += int64(failed)
		s.SubscribeRefused[name] += int64(failed)
		s.Behaviour[result.SubscribeRefusedBehaviour(name)] += int64(failed)
		if k := "behaviour:" + result.SubscribeRefusedBehaviour(name); s.Examples[k] == "" {
			s.Examples[k] = fmt.Sprintf("SUBACK reason code 0x%02x", code)
		}
		if _, ok := s.Examples["subscribe_failed"]; !ok {
			s.Examples["subscribe_failed"] = fmt.Sprintf("SUBACK reason code 0x%02x", code)
		}
	}
}

// Published implements reactor.Observer.
func (r *Recorder) Published(loop, client, receivers int, qos byte, _, at int64, lag time.Duration) {
	lr := r.loops[loop]
	s := lr.snap
	s.Published++
	if qos > 0 {
		s.PublishedQoS12++
	}
	in := r.inWindow(at)
	if at < lr.first {
		lr.first = at
	}
	if in {
		s.PublishedMeasured++
	}
	s.Expected += int64(receivers)
	s.ScheduleLag.Record(lag.Microseconds())
	if g := r.byClient(s, client); g != nil {
		g.Published++
		if qos > 0 {
			g.PublishedQoS12++
		}
		if in {
			g.PublishedMeasured++
		}
		g.Expected += int64(receivers)
	}
}

// Unsent implements reactor.Observer.
func (r *Recorder) Unsent(loop, client int, cause reactor.Unsent, n int) {
	sl := &r.loops[loop].silent
	if sl.unsent == nil {
		sl.unsent = map[int]int64{}
	}
	sl.unsent[client] += int64(n)
	s := r.loops[loop].snap
	s.Unsent[cause.String()] += int64(n)
	if g := r.byClient(s, client); g != nil {
		g.Unsent[cause.String()] += int64(n)
	}
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
func (r *Recorder) InFlightDropped(loop, client int, end *reactor.PublisherEnd) {
	lr := r.loops[loop]
	lr.snap.InFlightDropped += int64(len(end.InFlight))
	g := r.byClient(lr.snap, client)
	if g != nil {
		g.InFlightDropped += int64(len(end.InFlight))
	}
	unacknowledged(lr.snap, g, end)
	if len(end.InFlight) > 0 {
		lr.ends = append(lr.ends, publisherEnd{number: end.Number, receivers: end.Receivers, topicRcv: end.TopicReceivers, dropped: true,
			inFlight: append([]uint32(nil), end.InFlight...)})
	}
}

// unacknowledged counts end's messages whose exchange did not end, by the step that did
// not come (result.Unacked*), in s and in g, the client's group (nil: none).
func unacknowledged(s, g *result.Snapshot, end *reactor.PublisherEnd) {
	step := result.UnackedNoPuback
	if end.QoS == 2 {
		step = result.UnackedNoPubrec
	}
	for _, x := range []*result.Snapshot{s, g} {
		if x == nil {
			continue
		}
		if n := len(end.InFlight); n > 0 {
			x.Unacked[step] += int64(n)
		}
		if end.Released > 0 {
			x.Unacked[result.UnackedNoPubcomp] += int64(end.Released)
		}
	}
}

// PublisherEnd implements reactor.Observer.
func (r *Recorder) PublisherEnd(loop, client int, end *reactor.PublisherEnd) {
	lr := r.loops[loop]
	lr.snap.Scheduled += end.Scheduled
	g := r.byClient(lr.snap, client)
	if g != nil {
		g.Scheduled += end.Scheduled
	}
	unacknowledged(lr.snap, g, end)
	if len(end.InFlight) > 0 {
		lr.ends = append(lr.ends, publisherEnd{number: end.Number, receivers: end.Receivers, topicRcv: end.TopicReceivers,
			inFlight: append([]uint32(nil), end.InFlight...)})
	}
	sl := &lr.silent
	switch {
	case len(end.TopicReceivers) > 0: // its messages' copies by their topics, as written
		if end.Expected > 0 {
			sl.pubs = append(sl.pubs, silentPub{client: client, number: end.Number, copies: end.Expected})
		}
	case end.Receivers > 0:
		sl.pubs = append(sl.pubs, silentPub{client: client, number: end.Number,
			copies: (end.Scheduled - sl.unsent[client]) * int64(end.Receivers)})
	}
}

// Acked implements reactor.Observer.
func (r *Recorder) Acked(loop, client int) {
	s := r.loops[loop].snap
	s.Acked++
	if g := r.byClient(s, client); g != nil {
		g.Acked++
	}
}

// PublishRefused implements reactor.Observer: the message is refused, not acknowledged,
// and its copies are not expected to arrive.
func (r *Recorder) PublishRefused(loop, client, receivers int, code byte) {
	sl := &r.loops[loop].silent
	if sl.refused == nil {
		sl.refused = map[int]int64{}
	}
	sl.refused[client] += int64(receivers)
	s := r.loops[loop].snap
	name := ReasonName(5, code)
	s.PublishRefused[name]++
	s.RefusedCopies += int64(receivers)
	if g := r.byClient(s, client); g != nil {
		g.PublishRefused[name]++
		g.RefusedCopies += int64(receivers)
	}
	if k := "behaviour:publish_refused:" + name; s.Examples[k] == "" {
		s.Examples[k] = fmt.Sprintf("PUBACK or PUBREC reason code 0x%02x", code)
	}
}

// ResponseUnsent implements reactor.Observer: the request's expected response will not
// come, and is not lost (the run's responder did not send it).
func (r *Recorder) ResponseUnsent(loop, _ int, pub uint32, measured bool) {
	if !measured {
		return // a request from outside the run: nothing of it was expected
	}
	sl := &r.loops[loop].silent
	if sl.unanswered == nil {
		sl.unanswered = map[uint32]int64{}
	}
	sl.unanswered[pub]++
	s := r.loops[loop].snap
	s.ResponsesUnsent++
	if g := r.byPublisher(s, pub); g != nil {
		g.ResponsesUnsent++
	}
}

// BrokerDisconnect implements reactor.Observer: a drop whose cause is the DISCONNECT's
// reason (result.DisconnectCause and its name), its example the code and reason string.
func (r *Recorder) BrokerDisconnect(loop, client int, code byte, reason []byte) {
	r.loops[loop].silent.markUnwell(client)
	s := r.loops[loop].snap
	cause := result.DisconnectCause + DisconnectName(code)
	s.Dropped[cause]++
	if g := r.byClient(s, client); g != nil {
		g.Dropped[cause]++
	}
	if _, ok := s.Examples["dropped:"+cause]; !ok {
		ex := fmt.Sprintf("DISCONNECT reason code 0x%02x", code)
		if len(reason) > 0 {
			ex += `, reason string "` + termtext.Line(string(reason)) + `"`
		}
		s.Examples["dropped:"+cause] = ex
		s.Examples["behaviour:"+cause] = ex
	}
}

// qos2Again counts a QoS 2 copy that subscriber client got twice, the second time after
// it reconnected (result.BehaviourQoS2Again), the first one's words its example.
func (r *Recorder) qos2Again(s *result.Snapshot, client int, m reactor.Message) {
	s.Behaviour[result.BehaviourQoS2Again]++
	if k := "behaviour:" + result.BehaviourQoS2Again; s.Examples[k] == "" {
		dup := "DUP 0"
		if m.Dup {
			dup = "DUP 1"
		}
		s.Examples[k] = fmt.Sprintf("client %d got publisher %d's message %d again after it reconnected (%s)",
			client, m.Publisher, m.Seq, dup)
	}
}

// behaved is a per-client behaviour of one client.
type behaved struct {
	what   string
	client int
}

// Behaved implements reactor.Observer: counts by result.BrokerBehaviour.What. A
// publisher's (Maximum QoS, retain, closed at QoS 2) counts once per client, however often
// it reconnected; filters count each time.
func (r *Recorder) Behaved(loop, client int, b reactor.Behaviour, asked, got byte, n int) {
	lr := r.loops[loop]
	s := lr.snap
	what := b.String()
	perClient := true
	switch b {
	case reactor.BehaviourMaxQoS:
		what = fmt.Sprintf("max_qos_%d_for_qos_%d", got, asked)
	case reactor.BehaviourGrantedQoS:
		what, perClient = fmt.Sprintf("granted_qos_%d_for_qos_%d", got, asked), false
	case reactor.BehaviourNoShared, reactor.BehaviourNoWildcard, reactor.BehaviourPubackQoS2, reactor.BehaviourPubcompNotFound:
		perClient = false
	case reactor.BehaviourAnswered311:
		if k := "behaviour:" + what; s.Examples[k] == "" {
			s.Examples[k] = fmt.Sprintf("0x%02x", got)
			s.Examples["refused:"+ReasonName(4, got)] = fmt.Sprintf("the broker does not support MQTT 5.0 (it answered as 3.1.1: 0x%02x)", got)
		}
	}
	if perClient {
		k := behaved{what, client}
		if lr.behaved[k] {
			return
		}
		lr.behaved[k] = true
	}
	s.Behaviour[what] += int64(n)
}

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

// Received implements reactor.Observer: a copy of another run (its header's run tag is not
// this run's) is unexpected other_run, one due before publishing began stale; otherwise
// the stream's received set (a copy already in it is a duplicate, one below the highest is
// out of order), then latency from the due time (and from the write time when the payload
// carries it). Called per message: the stream is classified once, on its first message.
func (r *Recorder) Received(loop, client int, m reactor.Message) {
	lr := r.loops[loop]
	s := lr.snap
	if m.Unmeasured || m.Due > m.Now+int64(futureSlack) || m.Due < m.Now-int64(pastSlack) {
		s.Unmeasured++
		return
	}
	if m.Run != r.RunTag && !r.AnyRun {
		s.Unexpected["other_run"]++
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
	kind, seq := st.kind, m.Seq
	if st.cyc != 0 { // a publisher that cycles over topics: the stream's own numbering
		n, ok := lr.cycles[st.cyc].Index(seq)
		if !ok && lr.alts != nil {
			st, n, ok = lr.alt(st, seq) // a topic it takes on another stream
		}
		if seq = n; !ok {
			kind = scenario.StreamNotExpected // a topic the client does not take
		}
	}
	if kind != scenario.StreamExpected {
		s.Unexpected[kind.String()]++
		if g := r.byClient(s, client); g != nil {
			g.Unexpected[kind.String()]++
		}
		return
	}
	var dup, late bool
	if g := st.to; g != nil {
		dup, _ = g.set.add(seq)
		own, _ := st.set.add(seq) // the member's own copies, to tell a second member's
		if dup && !own {
			lr.shareExtra++
			if g := r.pubGroup(m.Publisher); g >= 0 {
				lr.gShareExtra[g]++
			}
			return
		}
		if !dup {
			late = st.seen && seq < st.top
			st.top, st.seen = max(st.top, seq), true
		}
	} else {
		dup, late = st.set.add(seq)
	}
	if m.Retained {
		// Sent from the broker's retained store at a (re)subscription: the topic's last
		// message, which the client may have had already; that is neither a duplicate nor
		// a re-delivery, nor something a session kept.
		s.Retained++
		if dup {
			s.RetainedAgain++
			return
		}
	}
	var again bool // a duplicate that is a re-delivery
	if dup && m.QoS == 1 {
		// [MQTT-4.3.2]: at least once. A re-delivery has DUP set [MQTT-3.3.1-1]; aedes 1.x
		// sends a kept session's copies again after a reconnect without it, some of them
		// ones it had sent since.
		if again = m.Dup; !again {
			_, again = lr.back[client]
		}
	}
	if r.groups > 0 {
		r.receivedGroups(s, client, &m, dup, again, late)
	}
	if dup {
		switch _, back := lr.back[client]; {
		case again:
			s.Redelivered++
		case m.QoS == 2 && back:
			// Exactly once broken across a resumed session: a copy the reactor passed on
			// came in a new exchange (a packet id not held, or held and released by its
			// PUBREL), which only the broker starts.
			s.Duplicated++
			r.qos2Again(s, client, m)
		default:
			s.Duplicated++
		}
		return
	}
	s.Received++
	if len(lr.back) > 0 && !m.Retained { // some client reconnected: was this kept for it while away?
		if at, ok := lr.back[client]; ok && m.Due < at {
			s.DeliveredOnReturn++
			if g := r.byClient(s, client); g != nil {
				g.DeliveredOnReturn++
			}
		}
	}
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

// receivedGroups is Received's per-group part, in a mixed run: the copy counts toward
// its publisher's group (received, latency; again: a duplicate that is a re-delivery) and
// toward the receiving client's group (delivered).
func (r *Recorder) receivedGroups(s *result.Snapshot, client int, m *reactor.Message, dup, again, late bool) {
	gp := r.byPublisher(s, m.Publisher)
	if gp == nil {
		return
	}
	if dup {
		if again {
			gp.Redelivered++
		} else {
			gp.Duplicated++
		}
		return
	}
	gp.Received++
	if late {
		gp.OutOfOrder++
	}
	if r.inWindow(m.Now) {
		gp.ReceivedMeasured++
	}
	gc := r.byClient(s, client)
	if r.inWindow(m.Due) {
		gl := gp // the group whose latency this copy is
		if r.gRequest != nil && gc != nil && gc != gp && r.gRequest[r.pubGroup(m.Publisher)] {
			gl = gc
		}
		gl.Latency.Record((m.Now - m.Due) / 1000)
		if m.Sent != 0 {
			gl.LatencyRaw.Record((m.Now - m.Sent) / 1000)
		}
	}
	if gc != nil {
		gc.Delivered++
	}
}

// newStream classifies and keeps the stream of client and publisher.
func (lr *loopRec) newStream(r *Recorder, client int, pub uint32, key uint64) *stream {
	st := &stream{kind: scenario.StreamExpected, pub: pub}
	share := -1
	if r.Stream != nil {
		st.kind, share = r.Stream(client, pub)
	}
	if st.kind == scenario.StreamExpected && r.StreamCycle != nil {
		if pos, n := r.StreamCycle(client, pub); pos != nil {
			st.cyc = lr.cycleOf(pos, n) // a share group's: the same for its every member
		}
	}
	if st.kind == scenario.StreamExpected && share >= 0 {
		st.to = lr.shareStream(share, pub, st.cyc)
	}
	if st.kind == scenario.StreamExpected && st.cyc != 0 && r.StreamAlso != nil {
		for _, part := range r.StreamAlso(client, pub) {
			a := &stream{kind: scenario.StreamExpected, pub: pub, cyc: lr.cycleOf(part.Positions, part.N)}
			if part.Share >= 0 {
				a.to = lr.shareStream(part.Share, pub, a.cyc)
			}
			if lr.alts == nil {
				lr.alts = map[*stream][]*stream{}
			}
			lr.alts[st] = append(lr.alts[st], a)
		}
	}
	lr.streams[key] = st
	return st
}

// shareStream returns the loop's stream of share group share and publisher pub, which
// numbers the publisher's messages by cycle cyc (loopRec.cycles), made on first use.
func (lr *loopRec) shareStream(share int, pub uint32, cyc uint32) *stream {
	gk := shareKey | uint64(uint32(share))<<32 | uint64(pub)
	g := lr.streams[gk]
	if g == nil {
		g = &stream{kind: scenario.StreamExpected, pub: pub, cyc: cyc}
		lr.streams[gk] = g
	}
	return g
}

// ownStreams calls f with each of the loop's own streams (not share groups', nor a share
// group member's), its others (alts) included.
func (lr *loopRec) ownStreams(f func(st *stream)) {
	for k, st := range lr.streams {
		if k&shareKey == 0 && st.kind == scenario.StreamExpected && st.to == nil {
			f(st)
		}
	}
	for _, as := range lr.alts {
		for _, a := range as {
			if a.to == nil {
				f(a)
			}
		}
	}
}

// ReceivesOutside reports whether this part receives copies of messages of another part's
// publishers (Placement), as the plan says. This part then cannot tell from its own
// figures when the copies it expects are in, as its received copies count others' messages
// and its expected ones count copies others receive. Not safe for concurrent use with
// itself (the drain asks it, alone).
func (r *Recorder) ReceivesOutside() bool {
	if !r.planAsked {
		pl := r.Placement
		r.planOutside, r.planAsked = pl != nil && pl.Receives != nil && pl.Receives(), true
	}
	return r.planOutside
}

// Finish completes the figures that need every stream at once, after the run (the loops
// no longer deliver): the copies a share group received in more than one loop are
// duplicates; of the messages still in flight at the end (QoS 1/2, written, never
// acknowledged), the copies that did not arrive are in_flight_at_end rather than lost, and
// of those dropped with a session, in_flight_lost. It returns those corrections as a
// snapshot to add to the run's total, and, for a part of a run (Placement), what of its
// streams the other parts' figures need (nil: nothing crosses parts).
func (r *Recorder) Finish() (*result.Snapshot, *result.Join) {
	out := result.NewSnapshot()
	if r.groups > 0 {
		out.Groups = make([]*result.Snapshot, r.groups)
		for i := range out.Groups {
			out.Groups[i] = result.NewGroupSnapshot()
		}
	}
	// Share groups received in several loops: the union is what the group received.
	groups := map[uint64][]result.Seqs{}
	counts := map[uint64]int64{}
	// The own streams (not share groups) of the publishers with messages in flight at the
	// end, and, in a part of a run, of the publishers other parts run, by how they number
	// the publisher's messages (a publisher that cycles over topics: result.Cycle).
	own := map[uint32]map[string]*ownSets{}
	shareCycle := map[uint64]*result.Cycle{} // a share group's numbering (nil: none)
	pl := r.Placement
	wanted := map[uint32]bool{}
	for _, lr := range r.loops {
		for _, e := range lr.ends {
			wanted[e.number] = true
		}
	}
	want := func(pub uint32) bool {
		w, ok := wanted[pub]
		if !ok {
			w = pl != nil && !pl.Publishes(pub)
			wanted[pub] = w
		}
		return w
	}
	for _, lr := range r.loops {
		for k, st := range lr.streams {
			if k&shareKey != 0 {
				groups[k] = append(groups[k], st.set.r)
				counts[k] += st.set.n
				if c := lr.cycle(st); c != nil {
					shareCycle[k] = c
				}
			}
		}
		lr.ownStreams(func(st *stream) {
			if !want(st.pub) {
				return
			}
			c := lr.cycle(st)
			if own[st.pub] == nil {
				own[st.pub] = map[string]*ownSets{}
			}
			o := own[st.pub][c.Key()]
			if o == nil {
				o = &ownSets{cycle: c}
				own[st.pub][c.Key()] = o
			}
			o.sets = append(o.sets, st.set.r)
		})
	}
	union := map[uint64]result.Seqs{}
	var extra, shared int64 // copies to a second member of their group; the groups' copies
	var gExtra []int64      // extra by the publisher's group (a mixed run)
	if r.groups > 0 {
		gExtra = make([]int64, r.groups)
	}
	for _, lr := range r.loops {
		extra += lr.shareExtra
		for g, n := range lr.gShareExtra {
			gExtra[g] += n
		}
	}
	for k, sets := range groups {
		if len(sets) == 1 {
			union[k] = sets[0]
			shared += sets[0].Len()
			continue
		}
		u := result.UnionSeqs(sets...)
		union[k] = u
		shared += u.Len()
		extra += counts[k] - u.Len()
		out.Received -= counts[k] - u.Len()
		if g := r.pubGroup(uint32(k)); g >= 0 {
			gExtra[g] += counts[k] - u.Len()
			out.Groups[g].Received -= counts[k] - u.Len()
		}
		if share := int(uint32(k>>32) &^ (shareKey >> 32)); share < len(r.gShare) && r.groups > 0 {
			out.Groups[r.gShare[share]].Delivered -= counts[k] - u.Len()
		}
	}
	// A sharing broker gives a copy to a second member now and then (a member's session
	// ended with it in flight): duplicates. One that gave at least every other copy to
	// several members does not share: the extra copies are not expected, and it says so.
	// A group's extra copies (its publishers' messages) count as the run's do.
	if extra > 0 && extra*2 >= shared {
		out.Unexpected["not_expected"] += extra
		out.Behaviour[result.BehaviourEveryMember] += extra
		for g, n := range gExtra {
			if n > 0 {
				out.Groups[g].Unexpected["not_expected"] += n
			}
		}
	} else {
		out.Duplicated += extra
		for g, n := range gExtra {
			out.Groups[g].Duplicated += n
		}
	}
	sharesOf := map[uint32][]uint64{}
	r.finMissing, r.finShared = map[uint32]int64{}, map[uint32]int64{}
	for k := range union {
		sharesOf[uint32(k)] = append(sharesOf[uint32(k)], k)
		r.finShared[uint32(k)] += union[k].Len()
	}
	// Each message in flight at the end: the copies its expected streams hold.
	join := &result.Join{}
	covers := map[uint32][]ownCover{}
	for _, lr := range r.loops {
		for i := range lr.ends {
			e := &lr.ends[i]
			cs, ok := covers[e.number]
			if !ok {
				for _, k := range slices.Sorted(maps.Keys(own[e.number])) {
					o := own[e.number][k]
					cs = append(cs, ownCover{cycle: o.cycle, cover: result.CoverOf(o.sets)})
				}
				covers[e.number] = cs
			}
			var crosses []uint32
			var got []int64
			for _, seq := range e.inFlight {
				var n int64
				for _, c := range cs {
					if x, ok := c.cycle.Index(seq); ok {
						n += c.cover.At(x)
					}
				}
				for _, k := range sharesOf[e.number] {
					if x, ok := shareCycle[k].Index(seq); ok && union[k].Has(x) {
						n++
					}
				}
				missing := max(e.receiversOf(seq)-n, 0)
				r.finMissing[e.number] += missing
				g := r.byPublisher(out, e.number)
				if e.dropped {
					out.InFlightLost += missing
					if g != nil {
						g.InFlightLost += missing
					}
				} else {
					out.InFlightAtEnd += missing
					if g != nil {
						g.InFlightAtEnd += missing
					}
				}
				if missing > 0 && pl != nil {
					crosses, got = append(crosses, seq), append(got, n)
				}
			}
			if len(crosses) > 0 && pl.Outside(e.number) {
				join.Ends = append(join.Ends, joinEnds(e, crosses, got)...)
			}
		}
	}
	if pl == nil {
		return out, nil
	}
	// What other parts' publishers' messages reached here, and the share groups with
	// members elsewhere.
	for _, pub := range slices.Sorted(maps.Keys(own)) {
		if pl.Publishes(pub) {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(own[pub])) {
			if o := own[pub][k]; len(o.sets) > 0 {
				join.Streams = append(join.Streams, result.JoinStreams{Publisher: pub, Cover: result.CoverOf(o.sets), Cycle: o.cycle})
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(union)) {
		if pub := uint32(k); pl.Outside(pub) && len(union[k]) > 0 {
			join.Shares = append(join.Shares, result.JoinShare{Share: int(uint32(k>>32) &^ (shareKey >> 32)),
				Publisher: pub, Seqs: union[k], Cycle: shareCycle[k]})
		}
	}
	return out, join.Seal()
}

// ownSets are the received sets of a publisher's own streams (not share groups') that
// number its messages one way (nil cycle: by their sequence numbers), and ownCover
// their cover.
type ownSets struct {
	cycle *result.Cycle
	sets  []result.Seqs
}

type ownCover struct {
	cycle *result.Cycle
	cover result.Cover
}

// joinEnds returns e's messages crosses (that reached got[i] of their receivers in this
// part) as the join's ends: one, or, of a publisher whose topics reach different
// receivers, one per receiver count, in the order of crosses.
func joinEnds(e *publisherEnd, crosses []uint32, got []int64) []result.JoinEnd {
	if len(e.topicRcv) == 0 {
		return []result.JoinEnd{{Publisher: e.number, Receivers: int64(e.receivers), Dropped: e.dropped, Seqs: crosses, Got: got}}
	}
	var out []result.JoinEnd
	at := map[int64]int{} // receivers -> index in out
	for i, seq := range crosses {
		r := e.receiversOf(seq)
		k, ok := at[r]
		if !ok {
			k = len(out)
			at[r] = k
			out = append(out, result.JoinEnd{Publisher: e.number, Receivers: r, Dropped: e.dropped})
		}
		out[k].Seqs = append(out[k].Seqs, seq)
		out[k].Got = append(out[k].Got, got[i])
	}
	return out
}

// Silent returns the run's silent publishers after Finish (result.SilentPublishers): each
// publisher of this part with at least result.SilentMinCopies expected copies (written
// times receivers, less those refused, not answered or in flight at an end) of which no
// stream received one, its connection never dropped nor reconnected. A publisher with
// receivers in another part (Placement) none of whose copies arrived here is not judged
// here: if it could be silent, it is returned in maybe, for the merge (result.Join.Silent).
// name gives a client's id and topic, for the named ones (nil: none named). nil when no
// publisher expected copies.
func (r *Recorder) Silent(name func(client int) (id, topic string)) (sp *result.SilentPublishers, maybe []result.JoinSilent) {
	got := map[uint32]int64{} // distinct copies received, by publisher
	for pub, n := range r.finShared {
		got[pub] += n
	}
	refused, unwell, unanswered := map[int]int64{}, map[int]bool{}, map[uint32]int64{}
	var pubs []silentPub
	for _, lr := range r.loops {
		lr.ownStreams(func(st *stream) { got[st.pub] += st.set.n })
		sl := &lr.silent
		for c, n := range sl.refused {
			refused[c] += n
		}
		for c := range sl.unwell {
			unwell[c] = true
		}
		for pub, n := range sl.unanswered {
			unanswered[pub] += n
		}
		pubs = append(pubs, sl.pubs...)
	}
	slices.SortFunc(pubs, func(a, b silentPub) int { return cmp.Compare(a.number, b.number) })
	for _, p := range pubs {
		copies := p.copies - refused[p.client] - unanswered[p.number] - r.finMissing[p.number]
		if copies <= 0 {
			continue
		}
		if sp == nil {
			sp = &result.SilentPublishers{}
		}
		eligible := copies >= result.SilentMinCopies && !unwell[p.client]
		switch pl := r.Placement; {
		case got[p.number] > 0 || !eligible:
			sp.Of++
		case pl != nil && pl.Outside != nil && pl.Outside(p.number):
			sp.NotJudged++
			var id, topic string
			if name != nil {
				id, topic = name(p.client)
			}
			maybe = append(maybe, result.JoinSilent{Publisher: p.number, Copies: copies, ClientID: termtext.Line(id), Topic: termtext.Line(topic)})
		default:
			sp.Of++
			if sp.MoreTopics && len(sp.Examples) >= result.SilentNamed || name == nil { // nothing more to name
				sp.Publishers++
				sp.Copies += copies
				break
			}
			id, topic := name(p.client)
			sp.AddSilent(result.SilentExample{ClientID: termtext.Line(id), Topic: termtext.Line(topic), Copies: copies})
		}
	}
	return sp, maybe
}

// Take adds loop's figures since the last Take into dst and resets them. Call it on that
// loop.
func (r *Recorder) Take(loop int, dst *result.Snapshot) {
	lr := r.loops[loop]
	if lr.first != math.MaxInt64 {
		lr.snap.FirstPublish = lr.first // Add keeps the earlier
	}
	dst.Add(lr.snap)
	lr.snap.Reset()
}
