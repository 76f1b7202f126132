package reactor

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// HeaderSize is the size of the measurement header at the start of every measured payload
// (DESIGN.md §3): the due time (int64 ns, CLOCK_REALTIME), the publisher number (uint32)
// and the sequence number (uint32), big-endian. A payload of 24 bytes or more also carries
// the actual write time (int64 ns) after it, so that receivers can report raw latency.
const HeaderSize = 16

// sentAtSize is the payload size from which the write time follows the header.
const sentAtSize = HeaderSize + 8

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
}

// pubState is a publisher's schedule and flow state. It lives in its loop (loop.pubs) so
// that it survives reconnects: the sequence goes on, nothing is re-timed.
type pubState struct {
	spec     *PublishSpec
	s        *session // nil while disconnected
	interval int64    // ns between messages
	seq      uint32   // next sequence number
	nextDue  int64    // engine clock of message seq
	heapIdx  int32
	inflight int
	window   int
	pid      uint16
	done     bool
	alias    bool // 5.0: the broker takes topic alias 1 (Topic Alias Maximum >= 1)
	aliasSet bool // alias 1 names the topic on this connection: send it empty
}

// pubHeap orders a loop's publishers by next due time.
type pubHeap []*pubState

func (h *pubHeap) push(p *pubState) {
	p.heapIdx = int32(len(*h))
	*h = append(*h, p)
	h.up(int(p.heapIdx))
}

func (h *pubHeap) pop() *pubState {
	old := *h
	n := len(old) - 1
	old.swap(0, n)
	p := old[n]
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	p.heapIdx = -1
	return p
}

func (h pubHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}

func (h pubHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if h[i].nextDue <= h[j].nextDue {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h pubHeap) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h[r].nextDue < h[l].nextDue {
			j = r
		}
		if h[i].nextDue <= h[j].nextDue {
			return
		}
		h.swap(i, j)
		i = j
	}
}

// backlogLimit is the unsent bytes of one connection past which the client counts a write
// backlog: the socket does not take what the schedule produces.
const backlogLimit = 4 << 20

// maxBatch bounds the bytes one publisher writes in one tick before it yields to the others.
const maxBatch = 64 << 10

// publishDue sends every message that is due by now, each stamped with its due time, in
// one write per publisher. A publisher whose in-flight window is full waits for acks: it
// sends late, never skips or re-times.
func (l *loop) publishDue(now int64) {
	e := l.e
	stop := e.pubStop.Load()
	for len(l.heap) > 0 {
		p := l.heap[0]
		if p.nextDue > now || (stop != 0 && p.nextDue >= stop) {
			return
		}
		l.heap.pop()
		s := p.s
		if s == nil || s.state != stConnected {
			continue // re-queued when it connects again
		}
		buf := l.out[:0]
		for p.nextDue <= now && (stop == 0 || p.nextDue < stop) && len(buf) < maxBatch {
			if p.spec.QoS > 0 && p.inflight >= p.window {
				break
			}
			buf = l.appendMessage(buf, p, now)
			e.cfg.Observer.Published(l.idx, int(s.client), p.spec.Receivers, e.realEpoch+p.nextDue, time.Duration(now-p.nextDue))
			p.seq++
			p.nextDue = e.pubStart.Load() + int64(p.spec.Phase) + int64(p.seq)*p.interval
			if p.spec.Count > 0 && int(p.seq) >= p.spec.Count {
				p.done = true
				break
			}
		}
		if len(buf) > 0 {
			l.write(s, buf)
			if s.unsent() > backlogLimit {
				e.backlogs.Add(1)
			}
		}
		if !p.done && (p.spec.QoS == 0 || p.inflight < p.window) {
			l.heap.push(p) // a full window re-queues on its next ack
		}
	}
}

// appendMessage appends publisher p's next PUBLISH.
func (l *loop) appendMessage(dst []byte, p *pubState, now int64) []byte {
	e := l.e
	sp := p.spec
	pl := l.payload[:sp.PayloadSize]
	binary.BigEndian.PutUint64(pl[0:8], uint64(e.realEpoch+p.nextDue))
	binary.BigEndian.PutUint32(pl[8:12], sp.Number)
	binary.BigEndian.PutUint32(pl[12:16], p.seq)
	if sp.PayloadSize >= sentAtSize {
		binary.BigEndian.PutUint64(pl[16:24], uint64(e.realEpoch+now))
	}
	pk := &l.pub
	*pk = codec.Publish{QoS: codec.QoS(sp.QoS), Retain: sp.Retain, Topic: sp.Topic, Payload: pl}
	if sp.RandN > 0 {
		l.topic = append(l.topic[:0], sp.Topic...)
		l.topic = strconv.AppendInt(l.topic, int64(rand.IntN(sp.RandN)+1), 10)
		l.topic = append(l.topic, sp.TopicSuffix...)
		pk.Topic = l.topic
	}
	if sp.Props != nil && codec.Version(p.s.version) == codec.V5 {
		pk.Props = *sp.Props
	}
	if p.alias { // 5.0 topic alias: the topic goes once per connection, then 2 bytes
		pk.Props.Set(codec.PropTopicAlias)
		pk.Props.TopicAlias = 1
		if p.aliasSet {
			pk.Topic = nil
		}
		p.aliasSet = true
	}
	if sp.QoS > 0 {
		p.pid++
		if p.pid == 0 {
			p.pid = 1
		}
		pk.ID = p.pid
		p.inflight++
	}
	return codec.AppendPublish(dst, pk, codec.Version(p.s.version))
}

// startPublisher attaches s to its publisher state (created on first connect) and queues it.
// receiveMax and aliasMax are the 5.0 broker's Receive Maximum and Topic Alias Maximum
// (0: not given).
func (l *loop) startPublisher(s *session, sp *PublishSpec, receiveMax, aliasMax int) {
	e := l.e
	p := l.pubs[s.client]
	if p == nil {
		p = &pubState{spec: sp, heapIdx: -1, interval: int64(float64(time.Second) / sp.Rate)}
		if l.pubs == nil {
			l.pubs = map[int32]*pubState{}
		}
		l.pubs[s.client] = p
	}
	p.s = s
	s.pub = p
	p.inflight = 0 // a new connection starts a new window (clean session: nothing resent)
	p.alias, p.aliasSet = aliasMax >= 1 && !sp.NoTopicAlias && sp.RandN == 0, false
	p.window = sp.MaxInflight
	if p.window <= 0 {
		p.window = 1024
	}
	if receiveMax > 0 {
		p.window = min(p.window, receiveMax)
	}
	if e.pubStart.Load() != 0 && !p.done && p.heapIdx < 0 {
		p.nextDue = e.pubStart.Load() + int64(sp.Phase) + int64(p.seq)*p.interval
		l.heap.push(p)
	}
}

// beginPublishing queues every publisher of the loop; called on the loop when publishing
// starts.
func (l *loop) beginPublishing() {
	for _, p := range l.pubs {
		if !p.done && p.heapIdx < 0 {
			p.nextDue = l.e.pubStart.Load() + int64(p.spec.Phase) + int64(p.seq)*p.interval
			l.heap.push(p)
		}
	}
}

// acked releases one in-flight slot of s's publisher.
func (l *loop) acked(s *session) {
	p := s.pub
	if p == nil {
		return
	}
	l.e.cfg.Observer.Acked(l.idx, int(s.client))
	if p.inflight > 0 {
		p.inflight--
	}
	if p.heapIdx < 0 && !p.done && p.s == s && l.e.pubStart.Load() != 0 {
		l.heap.push(p)
	}
}

// received handles a PUBLISH delivered to s: its acknowledgement joins the replies that
// OnTraffic writes once for everything it read, then the measurement.
func (l *loop) received(s *session, pk *codec.Publish) {
	v := codec.Version(s.version)
	switch pk.QoS {
	case 1:
		l.reply = codec.AppendPuback(l.reply, &codec.Ack{ID: pk.ID}, v)
	case 2:
		l.reply = codec.AppendPubrec(l.reply, &codec.Ack{ID: pk.ID}, v)
	}
	pl := pk.Payload
	if len(pl) < HeaderSize {
		l.e.cfg.Observer.Received(l.idx, int(s.client), Message{Unmeasured: true})
		return
	}
	m := Message{
		Due:       int64(binary.BigEndian.Uint64(pl[0:8])),
		Publisher: binary.BigEndian.Uint32(pl[8:12]),
		Seq:       binary.BigEndian.Uint32(pl[12:16]),
		Now:       l.arrival(),
		Dup:       pk.Dup,
	}
	if len(pl) >= sentAtSize {
		m.Sent = int64(binary.BigEndian.Uint64(pl[16:24]))
	}
	l.e.cfg.Observer.Received(l.idx, int(s.client), m)
}

// Message is what a receiver learnt from one delivered PUBLISH. Times are CLOCK_REALTIME ns.
type Message struct {
	Due        int64 // when the publisher was scheduled to send it
	Sent       int64 // when it was written (0: the payload is too short to say)
	Now        int64 // when it was received
	Publisher  uint32
	Seq        uint32
	Dup        bool // the DUP flag was set
	Unmeasured bool // the payload has no measurement header
}
