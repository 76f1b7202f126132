package reactor

import (
	"encoding/binary"

	"github.com/mqblast/mqblast/codec"
)

// received handles a PUBLISH delivered to s: its acknowledgement joins the replies that
// traffic writes once for everything it read, then the measurement.
func (l *loop) received(s *session, pk *codec.Publish) {
	v := codec.Version(s.version)
	switch pk.QoS {
	case 1:
		l.reply = codec.AppendPuback(l.reply, &codec.Ack{ID: pk.ID}, v)
	case 2:
		l.reply = codec.AppendPubrec(l.reply, &codec.Ack{ID: pk.ID}, v)
	}
	if pk.Props.Present&(1<<codec.PropResponseTopic) != 0 {
		if rs := l.resp[s.client]; rs != nil {
			l.respond(s, rs, pk)
		}
	}
	pl := pk.Payload
	header := len(pl) >= HeaderSize && pl[8] == headerMagic
	// A payload of the user's (mark or property carrier) may hold the magic byte at the
	// header's place by chance (UTF-8 text: · is C2 B7): its carrier goes first.
	if (!header || l.e.cfg.Marks || pk.Props.Present&(1<<codec.PropCorrelationData) != 0) && l.carried(s, pk, header) {
		return
	}
	if !header {
		l.e.cfg.Observer.Received(l.idx, int(s.client), Message{Unmeasured: true})
		return
	}
	var m Message
	m.fill(pl, l.arrival(), s, pk)
	if len(pl) >= sentAtSize {
		m.Sent = int64(binary.BigEndian.Uint64(pl[16:24]))
	}
	l.e.cfg.Observer.Received(l.idx, int(s.client), m)
}

// carried reports a PUBLISH delivered to s measured by what carries its measurement beside
// or inside the payload, and whether there was one: a Correlation Data with the header
// (the property carrier's, all the measurement bytes; or, when the payload has no header
// (header false), a response's from a responder outside the run, which carries its
// request's header whatever its payload), or, when the run places them, a text mark: in
// the User Property markProperty, or in the payload.
func (l *loop) carried(s *session, pk *codec.Publish, header bool) bool {
	var m Message
	cd := pk.Props.CorrelationData
	if pk.Props.Present&(1<<codec.PropCorrelationData) != 0 && len(cd) >= HeaderSize && cd[8] == headerMagic &&
		(!header || len(cd) >= sentAtSize) {
		m.fill(cd, l.arrival(), s, pk)
		if len(cd) >= sentAtSize { // the property carrier's: the write time too
			m.Sent = int64(binary.BigEndian.Uint64(cd[16:24]))
		}
		l.e.cfg.Observer.Received(l.idx, int(s.client), m)
		return true
	}
	var h [MeasuredSize]byte
	if !l.e.cfg.Marks {
		return false
	}
	found := false
	if pk.Props.User.Len() > 0 {
		for k, v := range pk.Props.User.All() {
			if len(v) == markLen && string(k) == markProperty && findMark(v, &h) {
				found = true
				break
			}
		}
	}
	if !found && !findMark(pk.Payload, &h) {
		return false
	}
	m.fill(h[:], l.arrival(), s, pk)
	m.Sent = int64(binary.BigEndian.Uint64(h[16:24]))
	l.e.cfg.Observer.Received(l.idx, int(s.client), m)
	return true
}

// fill sets m to what measurement header h (HeaderSize bytes or more, the magic checked)
// and pk say of pk, delivered to s at now (CLOCK_REALTIME ns); Sent is the caller's.
func (m *Message) fill(h []byte, now int64, s *session, pk *codec.Publish) {
	w := binary.BigEndian.Uint64(h[0:8])
	m.Due, m.Now, m.Run = dueNear(w>>16, now), now, uint16(w)
	m.Publisher = binary.BigEndian.Uint32(h[8:12]) & numberMask
	m.Seq = binary.BigEndian.Uint32(h[12:16])
	m.Dup, m.QoS, m.Retained = pk.Dup, byte(pk.QoS), pk.Retain && s.flags&sfRAP == 0
}

// respState is a responder's: the responses it has in flight (QoS 1 and 2) and the
// broker's Receive Maximum that bounds them, kept by client (loop.resp).
type respState struct {
	out, max int
	pid      uint16
	qos      byte
}

// respond answers pk, a request delivered to responder s: a PUBLISH to its Response Topic
// at the responder's QoS with its Correlation Data and payload, written with the
// acknowledgements of the read. A request that finds the window full, or whose response
// is over the broker's Maximum Packet Size, is not answered (ResponseUnsent).
func (l *loop) respond(s *session, rs *respState, pk *codec.Publish) {
	v := codec.Version(s.version)
	r := &l.resp1
	r.Props.Present = 0
	r.Topic, r.Payload, r.QoS, r.Retain, r.Dup, r.ID = pk.Props.ResponseTopic, pk.Payload, codec.QoS(rs.qos), false, false, 0
	if pk.Props.Present&(1<<codec.PropCorrelationData) != 0 {
		r.Props.Set(codec.PropCorrelationData)
		r.Props.CorrelationData = pk.Props.CorrelationData
	}
	full := rs.qos > 0 && rs.out >= rs.max
	if full || (s.maxOut > 0 && codec.SizePublish(r, v) > int(s.maxOut)) {
		var pub uint32
		_, pub, _, ok := ReadHeader(pk.Payload)
		if !ok && r.Props.Present != 0 {
			_, pub, _, ok = ReadHeader(r.Props.CorrelationData)
		}
		l.e.cfg.Observer.ResponseUnsent(l.idx, int(s.client), pub, ok)
		return
	}
	if rs.qos > 0 {
		rs.pid++
		if rs.pid < 2 { // 1 is the SUBSCRIBE's
			rs.pid = 2
		}
		r.ID = rs.pid
		rs.out++
	}
	l.reply = codec.AppendPublish(l.reply, r, v)
}

// Message is what a receiver learnt from one delivered PUBLISH. Times are CLOCK_REALTIME ns.
type Message struct {
	Due       int64 // when the publisher was scheduled to send it
	Sent      int64 // when it was written (0: the payload is too short to say)
	Now       int64 // when it was received
	Publisher uint32
	Seq       uint32
	Run       uint16 // the publishing run's tag (Config.RunTag)
	Dup       bool   // the DUP flag was set
	// Retained: the RETAIN flag was set on a subscription without Retain As Published: the
	// broker sent it from its retained store because of a (re)subscription [MQTT-3.3.1-8],
	// not as a publication to a standing one [MQTT-3.3.1-9].
	Retained   bool
	QoS        byte // the QoS it was delivered at
	Unmeasured bool // the payload has no measurement header: not one of mqblast's
}
