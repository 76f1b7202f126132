package reactor

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// PublishSpec describes what one client publishes.
type PublishSpec struct {
	Topic       []byte
	QoS         byte
	Retain      bool
	Rate        float64       // messages per second
	Phase       time.Duration // offset of message 0 from the start of publishing
	Count       int           // stop after this many (0: until StopPublishing)
	PayloadSize int           // >= HeaderSize
	Number      uint32        // the publisher number carried in the header
	Receivers   int           // copies the broker should deliver of each message
	Props       *codec.Properties
	MaxInflight int // QoS 1/2 messages awaiting their acknowledgement (default 1024)
	// RandN, when > 0, makes the topic Topic + a random number from 1 to RandN drawn per
	// message + TopicSuffix (emqtt-bench's %rand_N); topic aliases are then off.
	RandN       int
	TopicSuffix []byte
	// NoTopicAlias turns off the 5.0 topic alias, which otherwise replaces the topic by two
	// bytes after the first message of a connection when the broker allows aliases.
	NoTopicAlias bool
	// ResponseTopic, when set, makes each message a 5.0 request: it carries this Response
	// Topic and, as Correlation Data, its measurement header, by which the response is
	// measured (Message) whatever payload the responder sends back.
	ResponseTopic []byte
	// Arrival is how the due times fall: ArrivalConstant (0: every 1/Rate), ArrivalPoisson
	// (exponential gaps of mean 1/Rate, drawn from a generator seeded by Number, so that a
	// publisher draws the same due times in every run and shard) or ArrivalBurst (BurstSize
	// messages due at once every BurstSize/Rate). The mean rate is Rate in each.
	Arrival   byte
	BurstSize int // messages per burst (ArrivalBurst; >= 1)
	// Topics, when it holds more than one, are the topics the publisher cycles over: its
	// message with sequence number n goes to Topics[n mod len(Topics)] (Topic is ignored;
	// topic aliases are then off). TopicReceivers, when given (as long as Topics), are the
	// copies the broker should deliver of a message by its topic (Receivers is then not
	// read): the topics may reach different receivers.
	Topics         [][]byte
	TopicReceivers []int
	// Template, when set, renders the text that follows the measurement bytes, per
	// message, instead of the engine's literal (Config.Payload); ClientID and ClientIndex
	// are what its {{client_id}} and {{client_index}} render (a spec whose template holds
	// them is the publisher's own, not shared).
	Template    *payloadtpl.Template
	ClientID    []byte
	ClientIndex int
	// Measure is where a templated message carries its measurement: MeasureHeader (the
	// measurement bytes before the rendering), MeasureMark (the rendering alone, its
	// {{mark}} the measurement), MeasureProperty (the rendering alone, the measurement
	// bytes its 5.0 Correlation Data; the spec has none of its own) or MeasureNone (the
	// rendering alone, unmeasured).
	Measure byte
	// Sizes, when set, draws each message's payload size (PayloadSize is then the largest).
	Sizes *SizeDraw
	// Templates, when set, are payloads (a payload file's) of which each message renders
	// one, as Template: in turn by sequence number, or at random (RandomOrder).
	Templates   []*payloadtpl.Template
	RandomOrder bool
}

// SizeDraw draws each message's payload size: from Sizes by their cumulative weights Cum
// (Cum[i] the sum of the weights of Sizes[0..i], the last above 0), or uniformly from Lo to
// Hi, both included, when Sizes is nil. Every size is at least HeaderSize. Read-only once
// given to a PublishSpec.
type SizeDraw struct {
	Sizes  []int
	Cum    []uint32
	Lo, Hi int
}

// draw returns a size drawn from d.
func (d *SizeDraw) draw() int {
	if d.Sizes == nil {
		return d.Lo + rand.IntN(d.Hi-d.Lo+1)
	}
	r := rand.Uint32N(d.Cum[len(d.Cum)-1])
	for i, c := range d.Cum {
		if r < c {
			return d.Sizes[i]
		}
	}
	return d.Sizes[len(d.Sizes)-1]
}

// Measurement carriers of a templated payload (PublishSpec.Measure).
const (
	MeasureHeader byte = iota
	MeasureMark
	MeasureNone
	MeasureProperty
	// MeasureUserProperty: the rendering alone, the text mark in a 5.0 User Property
	// (markProperty), for a spec that sends a Correlation Data of its own.
	MeasureUserProperty
)

// markProperty is the name of the User Property that carries the text mark.
const markProperty = "mqblast-mark"

// userMark is a spec's 5.0 User Properties with the mark's pair last (loop.userMarks): val
// is the pair's value, which each message overwrites with its mark.
type userMark struct {
	user codec.UserProps
	val  []byte
}

// Arrivals of PublishSpec.Arrival.
const (
	ArrivalConstant byte = iota
	ArrivalPoisson
	ArrivalBurst
)

// pubState is a publisher's schedule and flow state. It lives in its loop (loop.pubs) from
// its first dial on, so that it survives reconnects: the schedule goes on, nothing is
// re-timed, and a persistent session's messages in flight are re-sent.
//
// Message k of the schedule is due at start + Phase + k/Rate, or under a rate profile
// (loop.prof) when its schedule time reaches Phase + k/Rate. Sequence numbers count the
// messages encoded (0, 1, 2, ...), so the numbers a stream carries are exactly those its
// publisher sent; a scheduled message that is never encoded (its publisher disconnected,
// its socket not draining, too large for the broker) advances k but takes no number, and is
// reported as unsent with its cause.
type pubState struct {
	// spec is what the publisher shares with its group: its loop's one copy of the specs
	// that differ only in the per-client fields below (loop.sharedSpec), or its own when
	// it carries a Response Topic, a topic suffix, topics to cycle over or its client id or
	// index for a payload template. Its Topic, Number, Phase and Receivers are not read:
	// topic, number, phase and receivers are.
	spec      *PublishSpec
	s         *session // nil while disconnected
	topic     []byte   // PublishSpec.Topic (the loop's topic store, or the own spec's)
	period    float64  // ns between messages (1e9 / rate): offset(k) is message k's, rounded once
	k         int64    // schedule index of the next due message
	nextDue   int64    // engine clock of message k
	phase     int64    // PublishSpec.Phase, ns
	holdFrom  int64    // engine clock a hold began (0: not held)
	heldUntil int64    // engine clock the last hold ended: lateness before it is the broker's

	// fl are the QoS 1/2 messages without their final acknowledgement, in packet-id order
	// from flHead; flN of them are still open.
	fl     []inflight
	flHead int
	flN    int
	// queue are the messages encoded into the socket's queue (connIO.out) and not yet
	// handed whole to the kernel, from qHead.
	queue []queued
	qHead int

	client    int32  // the client it publishes for, also while disconnected
	seg       int32  // the rate profile's segment of message k (loop.prof; 0 without one)
	seq       uint32 // next sequence number
	heapIdx   int32
	number    uint32 // PublishSpec.Number
	receivers int32  // PublishSpec.Receivers
	window    int32  // QoS 1/2 messages it may have in flight
	pid       uint16
	done      bool
	qos       byte // the QoS it publishes at: the plan's, or the broker's Maximum QoS below it
	noRetain  bool // 5.0: the broker has no retained messages: the retain flag stays off
	alias     bool // 5.0: the broker takes topic alias 1 (Topic Alias Maximum >= 1)
	aliasSet  bool // alias 1 names the topic on this connection: send it empty
	hold      Hold // what holds it since holdFrom
	arrival   byte // PublishSpec.Arrival
	// more is what only some publishers keep (nil for the others): a Poisson schedule's
	// cursor, and the copies written of one whose topics reach different receivers.
	more *pubMore
}

// cursor is a point of a Poisson schedule: message k's offset is off.
type cursor struct{ k, off int64 }

// pubMore is a publisher's state that most publishers do not need, kept apart so that
// theirs stays within its allocation size class.
type pubMore struct {
	// cursor is a Poisson schedule's: its offsets are sums of drawn gaps, walked to from
	// the last one asked for.
	cursor
	// copies are the expected copies of the messages it wrote, of a publisher with
	// TopicReceivers (PublisherEnd.Expected); the others' are written times Receivers.
	copies int64
}

// inflight is a QoS 1/2 message awaiting its acknowledgement.
type inflight struct {
	due   int64 // engine clock
	seq   uint32
	pid   uint16
	state uint8
}

// States of an in-flight message.
const (
	flQueued   uint8 = iota // encoded, not yet written whole
	flSent                  // written: PUBACK (QoS 1) or PUBREC (QoS 2) awaited
	flReleased              // PUBREC came, PUBREL sent: PUBCOMP awaited
	flDone                  // acknowledged: a hole until flHead passes it
)

// queued is a message in a socket's queue: its end as a position in the connection's
// output (connIO.pos counts what the kernel took).
type queued struct {
	end   int64
	due   int64 // engine clock
	lag   int64 // the client's own lateness in building it
	pid   uint16
	first bool   // a first send (Published when written); a re-send was counted before
	seq   uint32 // its sequence number (in the struct's padding: 32 bytes either way)
}

// queueLimit bounds the bytes that wait in one connection's queue: past it, the messages
// falling due are not encoded but counted unsent (back-pressure: the broker does not read),
// so that memory stays bounded and "published" means written (1 MiB: 40-70 ms of a
// 600,000 msg/s schedule of 16-byte messages).
const queueLimit = 1 << 20

// dueBefore returns how many of p's messages are due before engine time t, publishing
// having started at start, under rate profile pr (nil: none; message_count included).
func (p *pubState) dueBefore(t, start int64, pr *profile) int64 {
	if pr != nil {
		return p.dueCount(pr, t)
	}
	base := start + p.phase
	if start == 0 || t <= base {
		return 0
	}
	n := int64(float64(t-base)/p.period) + 1 // a first guess: the due times decide
	if p.arrival == ArrivalPoisson {
		c := &p.more.cursor
		n = max(c.k+int64(float64(t-base-c.off)/p.period), 0) // from where the offsets are known
	}
	for n > 0 && base+p.offset(n-1) >= t {
		n--
	}
	for base+p.offset(n) < t {
		n++
	}
	if c := int64(p.spec.Count); c > 0 && n > c {
		n = c
	}
	return n
}

// dueOf returns when p's message k is due, publishing having started at start, under rate
// profile pr (nil: none).
func (p *pubState) dueOf(start int64, pr *profile) int64 {
	if pr == nil {
		return start + p.phase + p.offset(p.k)
	}
	return p.dueAt(pr, p.k)
}

// advance moves p's schedule on by one message, under rate profile pr (nil: none).
func (p *pubState) advance(start int64, pr *profile) {
	if p.step(start); pr != nil || p.spec.Arrival != ArrivalConstant {
		p.redue(start, pr)
	}
}

// redue sets p's next due time from its k under rate profile pr (nil: none) and its
// arrival: what step leaves to its caller under a profile, or for bursts and Poisson
// arrivals.
func (p *pubState) redue(start int64, pr *profile) {
	if pr != nil {
		p.nextDue = p.dueAt(pr, p.k)
		return
	}
	p.nextDue = start + p.phase + p.offset(p.k)
}

// step moves p's schedule on by one message at the plan's rate, constant arrivals. publishDue
// calls it, then redue only under a profile or for other arrivals: advance's call of dueAt
// puts advance over the inlining budget (cost 107 of 80), and the plan's schedule keeps the
// per-message path it had.
func (p *pubState) step(start int64) {
	p.k++
	p.nextDue = start + p.phase + p.offsetConst(p.k)
	if c := p.spec.Count; c > 0 && p.k >= int64(c) {
		p.done = true
	}
}

// offset returns message k's offset in p's schedule in ns: k periods rounded to the nearest
// ns, each from k (no sum of rounded periods), so that n messages span n periods exactly and
// a run of d seconds at r per second schedules r x d of them, never one more. Bursts and
// Poisson arrivals take offsetDrawn.
func (p *pubState) offset(k int64) int64 {
	if p.spec.Arrival != ArrivalConstant {
		return p.offsetDrawn(k)
	}
	return p.offsetConst(k)
}

// offsetConst is offset for constant arrivals.
func (p *pubState) offsetConst(k int64) int64 { return int64(float64(k)*p.period + 0.5) }

// offsetDrawn is offset for bursts (message k is due with the first of its burst: k - k mod
// BurstSize periods) and Poisson arrivals: the sum of the gaps of messages 0 to k-1, each
// drawn from k alone (gap), walked to from the last offset asked for, in whole ns so that
// walking back and forth gives the same offsets. The schedule asks for the next message's
// and for a due count near it, so a walk is mostly one step.
func (p *pubState) offsetDrawn(k int64) int64 {
	if p.spec.Arrival == ArrivalBurst {
		n := int64(max(p.spec.BurstSize, 1))
		return int64(float64(k-k%n)*p.period + 0.5)
	}
	c := &p.more.cursor
	for c.k < k {
		c.off += p.gap(c.k)
		c.k++
	}
	for c.k > k {
		c.k--
		c.off -= p.gap(c.k)
	}
	return c.off
}

// gap returns the gap in ns between p's Poisson messages k and k+1: an exponential draw of
// mean period from a counter-based generator (splitmix64 of the seed and k), rounded to
// the ns.
func (p *pubState) gap(k int64) int64 {
	z := arrivalSeed(p.number) + uint64(k+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	u := float64(z>>11+1) * (1.0 / (1 << 53)) // (0, 1]
	return int64(-math.Log(u)*p.period + 0.5)
}

// arrivalSeed returns the seed of the Poisson draws of publisher number n: the same in
// every run and shard.
func arrivalSeed(n uint32) uint64 { return uint64(n)*0xd1b54a32d192ed03 + 0x2545f4914f6cdd1d }

// skipTo moves p's schedule to message k (k greater than p.k): the messages passed are
// unsent.
func (p *pubState) skipTo(k, start int64, pr *profile) int {
	n := int(k - p.k)
	p.k = k - 1
	p.advance(start, pr)
	return n
}

// Due and SetIndex make a publisher a dueheap.Item: a loop's publishers by next due time.
func (p *pubState) Due() int64       { return p.nextDue }
func (p *pubState) SetIndex(i int32) { p.heapIdx = i }

// maxBatch bounds the bytes one publisher writes in one tick before it yields to the others.
const maxBatch = 64 << 10

// publishDue sends every message that is due by now, each stamped with its due time, in
// one write per publisher. A publisher whose in-flight window is full waits for acks: it
// sends late, never skips or re-times (the wait is the broker's, reported as a hold). One
// whose socket holds more than queueLimit skips what falls due meanwhile (unsent:
// back-pressure).
func (l *loop) publishDue(now int64) {
	e := l.e
	stop := e.stopAt()
	start := e.pubStart.Load()
	pr := l.prof
	for len(l.heap) > 0 {
		p := l.heap[0]
		if p.nextDue > now || (stop != 0 && p.nextDue >= stop) {
			return
		}
		l.heap.Pop()
		s := p.s
		if s == nil || s.state != stConnected {
			continue // startPublisher re-queues it; what falls due meanwhile is unsent
		}
		if s.unsent() > queueLimit {
			l.holdPub(p, HoldBackPressure, now)
			k := p.dueBefore(now+1, start, pr)
			if stop != 0 {
				k = min(k, p.dueBefore(stop, start, pr))
			}
			if k > p.k {
				e.cfg.Observer.Unsent(l.idx, int(s.client), UnsentBackPressure, p.skipTo(k, start, pr))
			}
			if !p.done {
				l.heap.Push(p)
			}
			continue
		}
		buf := l.out[:0]
		marks := l.marks[:0]
		for p.nextDue <= now && (stop == 0 || p.nextDue < stop) && len(buf) < maxBatch {
			if p.qos > 0 && p.flN >= int(p.window) {
				l.holdPub(p, HoldFlowControl, now)
				break
			}
			pk := l.message(p, p.seq, e.realEpoch+p.nextDue, 0, false, now)
			if s.maxOut > 0 && codec.SizePublish(pk, codec.Version(s.version)) > int(s.maxOut) {
				e.cfg.Observer.Unsent(l.idx, int(s.client), UnsentTooLarge, 1) // [MQTT-3.1.2-24]
				if p.step(start); pr != nil || p.spec.Arrival != ArrivalConstant {
					p.redue(start, pr)
				}
				if p.done {
					break
				}
				continue
			}
			if p.qos > 0 {
				pk.ID = p.nextPid()
				p.fl = append(p.fl, inflight{due: p.nextDue, seq: p.seq, pid: pk.ID, state: flQueued})
				p.flN++
			}
			if p.alias {
				p.aliasSet = true
			}
			buf = codec.AppendPublish(buf, pk, codec.Version(s.version))
			marks = append(marks, queued{end: int64(len(buf)), due: p.nextDue,
				lag: now - max(p.nextDue, p.heldUntil), pid: pk.ID, first: true, seq: p.seq})
			p.seq++
			if p.step(start); pr != nil || p.spec.Arrival != ArrivalConstant {
				p.redue(start, pr)
			}
			if p.done {
				break
			}
		}
		l.marks = marks[:0]
		if len(buf) > 0 {
			l.sendPublish(s, p, buf, marks)
		}
		if p.s != s || p.done {
			continue
		}
		if p.qos > 0 && p.flN >= int(p.window) {
			l.holdPub(p, HoldFlowControl, max(p.nextDue, now)) // re-queued on its next ack
			continue
		}
		l.heap.Push(p)
	}
}

// nextPid returns the next packet identifier (1..65535).
func (p *pubState) nextPid() uint16 {
	p.pid++
	if p.pid == 0 {
		p.pid = 1
	}
	return p.pid
}

// message fills the loop's scratch PUBLISH with publisher p's message seq, due at due
// (CLOCK_REALTIME ns): the measurement header, the topic (or its alias) and properties.
func (l *loop) message(p *pubState, seq uint32, due int64, pid uint16, dup bool, now int64) *codec.Publish {
	e := l.e
	sp := p.spec
	size := sp.PayloadSize
	if sp.Sizes != nil {
		size = sp.Sizes.draw()
	}
	pl := l.payload[:size]
	binary.BigEndian.PutUint64(pl[0:8], uint64(due)<<16|uint64(e.cfg.RunTag))
	binary.BigEndian.PutUint32(pl[8:12], headerMagic<<24|p.number&numberMask)
	binary.BigEndian.PutUint32(pl[12:16], seq)
	if size >= sentAtSize || sp.Template != nil || sp.Templates != nil { // a mark or property carries all 24
		binary.BigEndian.PutUint64(l.payload[16:24], uint64(e.realEpoch+now))
	}
	if t := sp.Template; t != nil {
		pl = l.render(t, sp, seq, e.realEpoch+now)
	} else if n := len(sp.Templates); n > 0 {
		k := int(seq % uint32(n))
		if sp.RandomOrder {
			k = rand.IntN(n)
		}
		pl = l.render(sp.Templates[k], sp, seq, e.realEpoch+now)
	}
	pk := &l.pub
	v := codec.Version(p.s.version)
	props := v == codec.V5 && (l.propsOf != sp || l.propsAlias != p.alias)
	fillPublish(pk, sp, p.topic, v, p.alias, props)
	if props {
		l.propsOf, l.propsAlias = sp, p.alias
		if sp.ResponseTopic != nil { // the header written above, per message
			setRequest(pk, sp, l.payload[:HeaderSize])
		} else if sp.Measure == MeasureProperty { // the measurement bytes, per message
			pk.Props.Set(codec.PropCorrelationData)
			pk.Props.CorrelationData = l.payload[:MeasuredSize]
		}
		if sp.Measure == MeasureUserProperty {
			um := l.userMark(sp)
			pk.Props.User, l.markVal = um.user, um.val
		}
	}
	if v == codec.V5 && sp.Measure == MeasureUserProperty { // this message's mark, in place
		appendMark(l.markVal[:0], l.payload[:MeasuredSize])
	}
	pk.Payload, pk.ID, pk.Dup, pk.QoS = pl, pid, dup, codec.QoS(p.qos)
	if p.noRetain {
		pk.Retain = false
	}
	if n := len(sp.Topics); n > 1 {
		pk.Topic = sp.Topics[seq%uint32(n)]
	}
	if sp.RandN > 0 {
		l.topic = append(l.topic[:0], p.topic...)
		l.topic = strconv.AppendInt(l.topic, int64(rand.IntN(sp.RandN)+1), 10)
		l.topic = append(l.topic, sp.TopicSuffix...)
		pk.Topic = l.topic
	}
	if p.alias && p.aliasSet { // 5.0 topic alias: the topic goes once per connection, then 2 bytes
		pk.Topic = nil
	}
	return pk
}

// userMark returns the loop's User Properties of spec sp with the mark's pair, built on
// first use (the value a placeholder the messages overwrite).
func (l *loop) userMark(sp *PublishSpec) *userMark {
	if um := l.userMarks[sp]; um != nil {
		return um
	}
	um := &userMark{}
	if sp.Props != nil {
		um.user = sp.Props.User
	}
	um.user.Add(markProperty, strings.Repeat("0", markLen)) // a copy of sp's: the loop's own
	for _, v := range um.user.All() {
		um.val = v // the last pair's
	}
	if l.userMarks == nil {
		l.userMarks = map[*PublishSpec]*userMark{}
	}
	l.userMarks[sp] = um
	return um
}

// tplRoom makes the loop's template scratch hold t's longest rendering for sp, and the room
// past it that rendering takes.
func (l *loop) tplRoom(t *payloadtpl.Template, sp *PublishSpec) {
	if n := MeasuredSize + t.Room(len(sp.ClientID)); cap(l.tpl) < n {
		l.tpl = make([]byte, 0, n)
	}
}

// render renders template t of spec sp after the measurement bytes the loop's scratch
// payload holds for message seq, written at now (CLOCK_REALTIME ns), into the loop's
// template scratch, and returns it. Its {{mark}} is the text form of those bytes.
func (l *loop) render(t *payloadtpl.Template, sp *PublishSpec, seq uint32, now int64) []byte {
	h := l.payload[:MeasuredSize]
	v := &l.vars
	v.ClientID, v.ClientIndex, v.Seq, v.Now, v.Mark = sp.ClientID, sp.ClientIndex, seq, now, nil
	if t.HasMark() {
		putMark(&l.mark, (*[MeasuredSize]byte)(h))
		v.Mark = l.mark[:]
	}
	if sp.Measure == MeasureHeader { // in one block, not by a call: tplRoom made room
		l.tpl = l.tpl[:MeasuredSize]
		*(*[MeasuredSize]byte)(l.tpl) = [MeasuredSize]byte(h)
	} else {
		l.tpl = l.tpl[:0]
	}
	l.tpl = t.Append(l.tpl, v)
	return l.tpl
}

// fillPublish sets pk to sp's PUBLISH to topic on a connection of version v, without
// payload, packet id or DUP: QoS, retain, topic and, when props is set on a 5.0 connection, the
// properties (sp's, and topic alias 1 when alias). Without props pk.Props stays as it is:
// a 3.1.1 PUBLISH has none (the codec does not read them), and the loop's scratch PUBLISH
// keeps the properties of the spec it was last filled for (loop.propsOf). Setting the
// whole 408-byte struct per message was 137 of the ~620 instructions the client spent
// per published message (callgrind, BenchmarkClientPublish).
func fillPublish(pk *codec.Publish, sp *PublishSpec, topic []byte, v codec.Version, alias, props bool) {
	pk.Dup, pk.QoS, pk.Retain, pk.Topic, pk.ID, pk.Payload = false, codec.QoS(sp.QoS), sp.Retain, topic, 0, nil
	if v != codec.V5 || !props {
		return
	}
	pk.Props = codec.Properties{}
	if sp.Props != nil {
		pk.Props = *sp.Props
	}
	if alias {
		pk.Props.Set(codec.PropTopicAlias)
		pk.Props.TopicAlias = 1
	}
}

// setRequest makes pk, filled for sp (a request: sp.ResponseTopic set), carry the Response
// Topic and, as Correlation Data, corr: the message's measurement header.
func setRequest(pk *codec.Publish, sp *PublishSpec, corr []byte) {
	pk.Props.Set(codec.PropResponseTopic)
	pk.Props.ResponseTopic = sp.ResponseTopic
	pk.Props.Set(codec.PropCorrelationData)
	pk.Props.CorrelationData = corr
}

// usesAlias reports whether sp's messages use topic alias 1 on a connection whose broker
// takes aliasMax aliases (5.0 Topic Alias Maximum; 0 when not given).
func usesAlias(sp *PublishSpec, aliasMax int) bool {
	return aliasMax >= 1 && !sp.NoTopicAlias && sp.RandN == 0 && len(sp.Topics) < 2
}

// sendPublish writes b, publisher p's messages encoded into l.out and delimited by marks,
// on s. The messages the kernel took whole are published now; the others wait in p.queue
// until flush has written them.
func (l *loop) sendPublish(s *session, p *pubState, b []byte, marks []queued) {
	base := int64(0) // the position of b[0] in the connection's output
	if s.io != nil {
		base = s.io.pos + int64(len(s.io.out))
	}
	l.out = b[:0]
	n := l.send(s, b)
	if n < 0 { // the connection is gone: detach counted the QoS 1/2 ones
		lost := 0
		for i := range marks {
			if marks[i].first && marks[i].pid == 0 {
				lost++
			}
		}
		if lost > 0 {
			l.e.cfg.Observer.Unsent(l.idx, int(s.client), UnsentDisconnected, lost)
		}
		return
	}
	at := l.e.now()
	for i := range marks {
		m := &marks[i]
		if m.end <= int64(n) {
			l.wrote(s, p, m, at)
			continue
		}
		if s.flags&sfTransport != 0 { // the whole write waits: its end on the wire
			m.end = s.io.pos + int64(len(s.io.out))
		} else {
			m.end += base
		}
		p.queue = append(p.queue, *m)
	}
}

// wrote reports message m of p as handed to the kernel at engine time at.
func (l *loop) wrote(s *session, p *pubState, m *queued, at int64) {
	e := l.e
	if m.pid != 0 {
		for i := len(p.fl) - 1; i >= p.flHead; i-- {
			if f := &p.fl[i]; f.pid == m.pid && f.state == flQueued {
				f.state = flSent
				break
			}
		}
	}
	if m.first {
		qos := byte(0) // one with a packet id awaits its acknowledgement
		if m.pid != 0 {
			qos = max(p.qos, 1)
		}
		r := int(p.receivers)
		if rs := p.spec.TopicReceivers; rs != nil { // its topic's
			r = rs[m.seq%uint32(len(rs))]
			p.more.copies += int64(r)
		}
		e.cfg.Observer.Published(l.idx, int(s.client), r, qos, e.realEpoch+m.due, e.realEpoch+at, time.Duration(m.lag))
	}
}

// expected returns the expected copies of the messages p wrote, when it has TopicReceivers
// (0 for the others).
func (p *pubState) expected() int64 {
	if p.spec.TopicReceivers == nil {
		return 0
	}
	return p.more.copies
}

// receiversOf returns the copies the broker should deliver of p's message seq: its
// topic's, when p cycles over topics that reach different receivers.
func (p *pubState) receiversOf(seq uint32) int {
	if rs := p.spec.TopicReceivers; rs != nil {
		return rs[seq%uint32(len(rs))]
	}
	return int(p.receivers)
}

// written handles the kernel taking the connection's queued output up to position pos.
func (l *loop) written(s *session, pos int64) {
	p := s.pub
	if p == nil || p.s != s {
		return
	}
	if p.qHead < len(p.queue) {
		at := l.e.now()
		for p.qHead < len(p.queue) && p.queue[p.qHead].end <= pos {
			l.wrote(s, p, &p.queue[p.qHead], at)
			p.qHead++
		}
		if p.qHead == len(p.queue) {
			p.queue, p.qHead = p.queue[:0], 0
		}
	}
	if p.holdFrom != 0 && p.hold == HoldBackPressure && s.unsent() <= queueLimit {
		l.unholdPub(p, l.e.now())
	}
}

// holdPub records that p cannot send (the broker's doing) from now, unless already held.
func (l *loop) holdPub(p *pubState, h Hold, now int64) {
	if p.holdFrom == 0 {
		p.hold, p.holdFrom = h, max(now, 1)
	}
}

// unholdPub ends p's hold at now and reports it.
func (l *loop) unholdPub(p *pubState, now int64) {
	if p.holdFrom == 0 {
		return
	}
	if now <= p.holdFrom { // released before anything fell due: no hold
		p.holdFrom = 0
		return
	}
	l.e.cfg.Observer.Held(l.idx, int(p.client), p.hold, time.Duration(max(now-p.holdFrom, 0)))
	p.holdFrom, p.heldUntil = 0, now
}

// publisher returns client's publisher state, created on its first dial.
func (l *loop) publisher(client int32, sp *PublishSpec) *pubState {
	p := l.pubs[client]
	if p == nil {
		p = &pubState{spec: sp, client: client, heapIdx: -1, period: float64(time.Second) / sp.Rate,
			topic: sp.Topic, phase: int64(sp.Phase), number: sp.Number, receivers: int32(sp.Receivers),
			arrival: sp.Arrival}
		if sp.Arrival == ArrivalPoisson || sp.TopicReceivers != nil {
			p.more = &pubMore{}
		}
		if sp.ResponseTopic == nil && sp.TopicSuffix == nil && len(sp.Topics) < 2 && sp.ClientID == nil && sp.ClientIndex == 0 {
			p.spec, p.topic = l.sharedSpec(sp), l.keepTopic(sp.Topic)
		}
		for _, t := range sp.Templates {
			l.tplRoom(t, sp)
		}
		if t := sp.Template; t != nil {
			l.tplRoom(t, sp)
		}
		if l.pubs == nil {
			l.pubs = map[int32]*pubState{}
		}
		l.pubs[client] = p
		if start := l.e.pubStart.Load(); start != 0 {
			l.holdPub(p, HoldDisconnected, start) // publishing began before its first connect
		}
	}
	return p
}

// specKey is what a group's publishers share of their PublishSpec: all but Topic, Number,
// Phase and Receivers (a spec with a Response Topic, a topic suffix or topics to cycle over is not shared).
type specKey struct {
	retain, noAlias               bool
	qosLevel                      byte
	rate                          float64
	count, payload, inflight, rnd int
	props                         *codec.Properties
	arrival                       byte
	burst                         int
	template                      *payloadtpl.Template
	measure                       byte
	sizes                         *SizeDraw
	templates                     *payloadtpl.Template // the first of Templates: one list per group
	random                        bool
}

// sharedSpec returns the loop's one copy of the specs that differ from sp only in Topic,
// Number, Phase and Receivers (those zero in it): of 10,000 publishers of one group a loop
// keeps one spec, not one each (160 bytes a publisher, and a heap object the collector
// tracks).
func (l *loop) sharedSpec(sp *PublishSpec) *PublishSpec {
	k := specKey{retain: sp.Retain, noAlias: sp.NoTopicAlias, qosLevel: sp.QoS, rate: sp.Rate, count: sp.Count,
		payload: sp.PayloadSize, inflight: sp.MaxInflight, rnd: sp.RandN, props: sp.Props,
		arrival: sp.Arrival, burst: sp.BurstSize, template: sp.Template, measure: sp.Measure, sizes: sp.Sizes, random: sp.RandomOrder}
	if len(sp.Templates) > 0 {
		k.templates = sp.Templates[0]
	}
	if c := l.specs[k]; c != nil {
		return c
	}
	c := *sp
	c.Topic, c.Number, c.Phase, c.Receivers, c.TopicReceivers = nil, 0, 0, 0, nil
	if l.specs == nil {
		l.specs = map[specKey]*PublishSpec{}
	}
	l.specs[k] = &c
	return &c
}

// keepTopic copies a publisher's topic into the loop's topic store: one allocation for
// many publishers' topics rather than one each.
func (l *loop) keepTopic(t []byte) []byte {
	if len(t) > cap(l.topics)-len(l.topics) {
		l.topics = make([]byte, 0, max(len(t), min(2*cap(l.topics), 4096), 256))
	}
	n := len(l.topics)
	l.topics = append(l.topics, t...)
	return l.topics[n:len(l.topics):len(l.topics)]
}

// startPublisher attaches s to its publisher state and queues it. receiveMax and aliasMax
// are the 5.0 broker's Receive Maximum and Topic Alias Maximum (0: not given); present is
// the CONNACK's session present flag: only then are the messages in flight re-sent
// [MQTT-4.4.0-1], otherwise their state is dropped and accounted for. What fell due while
// it had no connection is unsent.
func (l *loop) startPublisher(s *session, sp *PublishSpec, receiveMax, aliasMax int, present bool) {
	e := l.e
	p := l.publisher(s.client, sp)
	p.s = s
	s.pub = p
	p.alias, p.aliasSet = usesAlias(sp, aliasMax), false
	p.window = int32(min(sp.MaxInflight, 65535))
	if p.window <= 0 {
		p.window = 1024
	}
	if receiveMax > 0 {
		p.window = int32(min(int(p.window), receiveMax))
	}
	if !present || s.flags&sfPersistent == 0 {
		l.dropInflight(p)
	} else {
		l.resend(s, p)
	}
	now := e.now()
	start := e.pubStart.Load()
	if start == 0 || p.done {
		return
	}
	l.syncProfile()
	pr := l.prof
	if p.holdFrom != 0 && p.hold == HoldDisconnected { // what fell due meanwhile is unsent
		t := now
		if stop := e.stopAt(); stop != 0 {
			t = min(t, stop)
		}
		if k := p.dueBefore(t, start, pr); k > p.k {
			e.cfg.Observer.Unsent(l.idx, int(s.client), UnsentDisconnected, p.skipTo(k, start, pr))
		}
		l.unholdPub(p, now)
	}
	p.nextDue = p.dueOf(start, pr)
	switch {
	case p.heapIdx >= 0: // still queued from its last connection
		l.heap.Fix(int(p.heapIdx))
	case !p.done:
		l.heap.Push(p)
	}
}

// resend writes again, on a new connection whose session the broker kept, every message
// of p still in flight: PUBLISH with DUP set and its packet id, or PUBREL for one whose
// PUBREC came [MQTT-4.4.0-1]. One never written goes out as a first send.
func (l *loop) resend(s *session, p *pubState) {
	if p.flN == 0 {
		return
	}
	now := l.e.now()
	v := codec.Version(s.version)
	buf := l.out[:0]
	marks := l.marks[:0]
	for i := p.flHead; i < len(p.fl); i++ {
		f := &p.fl[i]
		switch f.state {
		case flQueued, flSent:
			pk := l.message(p, f.seq, l.e.realEpoch+f.due, f.pid, f.state == flSent, now)
			if p.alias {
				p.aliasSet = true
			}
			buf = codec.AppendPublish(buf, pk, v)
			marks = append(marks, queued{end: int64(len(buf)), due: f.due, lag: now - f.due, pid: f.pid, first: f.state == flQueued, seq: f.seq})
		case flReleased:
			buf = codec.AppendPubrel(buf, &codec.Ack{ID: f.pid}, v)
		}
	}
	l.marks = marks[:0]
	l.sendPublish(s, p, buf, marks)
}

// dropInflight forgets p's messages in flight (a clean session, or the broker kept no
// session): the ones never written are unsent, the written ones in-flight-dropped.
func (l *loop) dropInflight(p *pubState) {
	if p.flN == 0 {
		p.fl, p.flHead = p.fl[:0], 0
		return
	}
	queuedN, released := 0, 0
	sent := l.seqs[:0]
	for i := p.flHead; i < len(p.fl); i++ {
		switch f := &p.fl[i]; f.state {
		case flQueued:
			queuedN++
		case flSent:
			sent = append(sent, f.seq)
		case flReleased: // PUBREC'd: the broker took it, and it is its to deliver
			released++
		}
	}
	l.seqs = sent[:0]
	p.fl, p.flHead, p.flN = p.fl[:0], 0, 0
	client := int(p.client)
	if queuedN > 0 {
		l.e.cfg.Observer.Unsent(l.idx, client, UnsentDisconnected, queuedN)
	}
	if len(sent) > 0 || released > 0 {
		l.e.cfg.Observer.InFlightDropped(l.idx, client, &PublisherEnd{Number: p.number, Receivers: int(p.receivers),
			TopicReceivers: p.spec.TopicReceivers, InFlight: sent, QoS: p.qos, Released: released})
	}
}

// detach parts s, whose connection is closing, from its publisher: queued QoS 0 messages
// were never written (unsent); a clean session's messages in flight die with it; a
// persistent session's wait for the next connection.
func (l *loop) detach(s *session) {
	p := s.pub
	if p == nil || p.s != s {
		return
	}
	e := l.e
	n := 0
	for i := p.qHead; i < len(p.queue); i++ {
		if m := &p.queue[i]; m.first && m.pid == 0 {
			n++
		}
	}
	p.queue, p.qHead = p.queue[:0], 0
	if e.finished.Load() {
		p.s = nil
		return
	}
	if n > 0 {
		e.cfg.Observer.Unsent(l.idx, int(s.client), UnsentDisconnected, n)
	}
	if s.flags&sfPersistent == 0 {
		l.dropInflight(p)
	}
	now := e.now()
	if p.holdFrom != 0 {
		l.unholdPub(p, now)
	}
	p.s = nil
	if e.pubStart.Load() != 0 && !p.done {
		l.holdPub(p, HoldDisconnected, now)
	}
}

// beginPublishing queues every publisher of the loop; called on the loop when publishing
// starts.
func (l *loop) beginPublishing() {
	start := l.e.pubStart.Load()
	l.syncProfile()
	for _, p := range l.pubs {
		if p.done || p.heapIdx >= 0 {
			continue
		}
		p.nextDue = p.dueOf(start, l.prof)
		if p.s == nil || p.s.state != stConnected {
			l.holdPub(p, HoldDisconnected, start)
			continue
		}
		l.heap.Push(p)
	}
}

// finishPublishing accounts for every scheduled message of the loop's publishers at the
// end of publishing (after the drain): what was never written, by cause, the holds still
// open, and what is in flight on open connections.
func (l *loop) finishPublishing(interrupted bool) {
	e := l.e
	start, stop, now := e.pubStart.Load(), e.stopAt(), e.now()
	if stop == 0 {
		stop = now
	}
	l.syncProfile()
	pr := l.prof
	obs := e.cfg.Observer
	seqs := l.seqs[:0]
	for client, p := range l.pubs {
		c := int(client)
		s := p.s
		connected := s != nil && s.state == stConnected
		if rest := p.dueBefore(stop, start, pr) - p.k; rest > 0 {
			cause := UnsentBehind
			switch {
			case !connected:
				cause = UnsentDisconnected
			case p.qos > 0 && p.flN >= int(p.window):
				cause = UnsentFlowControl
			case s.unsent() > queueLimit:
				cause = UnsentBackPressure
			case interrupted:
				cause = UnsentInterrupted
			}
			obs.Unsent(l.idx, c, cause, int(rest))
			p.k += rest
		}
		notRead := 0
		for i := p.qHead; i < len(p.queue); i++ {
			if p.queue[i].first {
				notRead++
			}
		}
		p.queue, p.qHead = p.queue[:0], 0
		seqs = seqs[:0]
		unwritten := 0 // a persistent session's, kept for a re-send that never came
		released := 0  // PUBREC'd, PUBCOMP awaited
		for i := p.flHead; i < len(p.fl); i++ {
			switch f := &p.fl[i]; {
			case f.state == flSent:
				seqs = append(seqs, f.seq)
			case f.state == flReleased:
				released++
			case f.state == flQueued && !connected:
				unwritten++
			}
		}
		if notRead > 0 {
			obs.Unsent(l.idx, c, UnsentNotRead, notRead)
		}
		if unwritten > 0 {
			obs.Unsent(l.idx, c, UnsentDisconnected, unwritten)
		}
		if !connected && len(seqs) > 0 { // written, unacknowledged, and the connection gone
			obs.InFlightDropped(l.idx, c, &PublisherEnd{Number: p.number, Receivers: int(p.receivers),
				TopicReceivers: p.spec.TopicReceivers, InFlight: seqs, QoS: p.qos})
			seqs = seqs[:0]
		}
		if p.holdFrom != 0 {
			l.unholdPub(p, now)
		}
		p.done = true
		// What is still in flight is reported so, once: an acknowledgement that comes after
		// (the connections close after this) finds nothing in flight and counts nothing.
		p.fl, p.flHead, p.flN = p.fl[:0], 0, 0
		obs.PublisherEnd(l.idx, c, &PublisherEnd{Number: p.number, Receivers: int(p.receivers),
			TopicReceivers: p.spec.TopicReceivers, Expected: p.expected(),
			Scheduled: p.dueBefore(stop, start, pr), InFlight: seqs, QoS: p.qos, Released: released})
	}
	l.heap = l.heap[:0]
	l.seqs = seqs[:0]
}

// acked ends the QoS 1 or 2 exchange of packet id pid on s: PUBACK, PUBCOMP, or a PUBACK
// or PUBREC whose reason (0x80 and up) refuses the message. An id that is not in flight is
// ignored.
func (l *loop) acked(s *session, pid uint16, reason codec.ReasonCode) {
	p := s.pub
	if p == nil || p.s != s {
		if rs := l.resp[s.client]; rs != nil && rs.out > 0 { // a response's
			rs.out--
		}
		return
	}
	i := p.find(pid)
	if i < 0 {
		return
	}
	seq := p.fl[i].seq
	p.fl[i].state = flDone
	p.flN--
	for p.flHead < len(p.fl) && p.fl[p.flHead].state == flDone {
		p.flHead++
	}
	if p.flHead == len(p.fl) {
		p.fl, p.flHead = p.fl[:0], 0
	} else if p.flHead >= 256 && p.flHead*2 >= len(p.fl) {
		n := copy(p.fl, p.fl[p.flHead:])
		p.fl, p.flHead = p.fl[:n], 0
	}
	e := l.e
	if reason >= 0x80 {
		e.cfg.Observer.PublishRefused(l.idx, int(s.client), p.receiversOf(seq), byte(reason))
	} else {
		e.cfg.Observer.Acked(l.idx, int(s.client))
	}
	if p.holdFrom != 0 && p.hold == HoldFlowControl && p.flN < int(p.window) {
		l.unholdPub(p, e.now())
	}
	if p.heapIdx < 0 && !p.done && e.pubStart.Load() != 0 && p.flN < int(p.window) {
		l.heap.Push(p)
	}
}

// released marks the QoS 2 message pid of s as PUBREC'd (PUBREL owed): false if it is not
// in flight.
func (l *loop) released(s *session, pid uint16) bool {
	p := s.pub
	if p == nil || p.s != s {
		return false
	}
	i := p.find(pid)
	if i < 0 {
		return false
	}
	p.fl[i].state = flReleased
	return true
}

// find returns the index in p.fl of the open message with packet id pid, -1 if none.
// Acknowledgements come in order, so the search usually ends at the first.
func (p *pubState) find(pid uint16) int {
	for i := p.flHead; i < len(p.fl); i++ {
		if f := &p.fl[i]; f.pid == pid && f.state != flDone && f.state != flQueued {
			return i
		}
	}
	return -1
}
