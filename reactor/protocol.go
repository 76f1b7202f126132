package reactor

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// AppendConnect appends s's CONNECT as the engine sends it (the floor client sends the
// same). Connect time only: it converts the strings. A 5.0 CONNECT announces maxIn, the
// client's inbound limit, as its Maximum Packet Size unless s.Props sets one.
func AppendConnect(dst []byte, s *ClientSpec, maxIn uint32) []byte {
	p := codec.Connect{
		ClientID:   []byte(s.ID),
		KeepAlive:  uint16(s.Keepalive / time.Second),
		CleanStart: s.CleanStart,
	}
	if s.Username != "" {
		p.HasUsername, p.Username = true, []byte(s.Username)
	}
	if s.Password != "" {
		p.HasPassword, p.Password = true, []byte(s.Password)
	}
	v := codec.Version(s.Version)
	if v == codec.V5 {
		if s.Props != nil {
			p.Props = *s.Props
		}
		if !p.Props.Has(codec.PropMaximumPacketSize) && maxIn > 0 {
			p.Props.Set(codec.PropMaximumPacketSize) // [MQTT-3.1.2-24] the broker sends no more
			p.Props.MaximumPacketSize = maxIn
		}
	}
	return codec.AppendConnect(dst, &p, v)
}

// Inbound packet limit defaults. The limit bounds what one connection buffers for a packet
// whose header claims a size (up to 256 MiB), not what it keeps: a buffer grows only to a
// packet that actually comes. The headroom takes a topic of up to 64 KiB and the
// properties; the floor keeps the 1 MiB the engine accepted before the limit was
// configurable, for messages other publishers of the broker send.
const (
	inboundHeadroom = 64 << 10
	minInbound      = 1 << 20
)

// defaultInbound returns the inbound limit for Config.MaxInbound 0.
func defaultInbound(maxPayload int) int { return max(maxPayload+inboundHeadroom, minInbound) }

// inboundLimit returns the largest packet client spec accepts: the engine's limit, or the
// smaller Maximum Packet Size its 5.0 CONNECT properties announce.
func (e *Engine) inboundLimit(spec *ClientSpec) uint32 {
	limit := uint32(min(e.maxIn, codec.MaxRemainingLength+5))
	if spec.Version == 5 && spec.Props != nil && spec.Props.Has(codec.PropMaximumPacketSize) {
		limit = min(limit, spec.Props.MaximumPacketSize)
	}
	return limit
}

// handle processes the first packet of in, returning the bytes it used (0: incomplete).
func (l *loop) handle(s *session, in []byte) (int, error) {
	h, body, n, err := codec.Split(in, int(s.maxIn))
	if err != nil || n == 0 {
		if errors.Is(err, codec.ErrPacketTooLarge) {
			return 0, l.overLimit(s, in)
		}
		return 0, err
	}
	v := codec.Version(s.version)
	switch h.Type {
	case codec.TypeConnack:
		if s.state != stConnecting {
			return 0, errUnexpected
		}
		ca := &l.connack
		e := l.e
		if err := codec.DecodeConnack(body, v, ca); err != nil {
			if code, ok := answered311(body, v); ok { // aedes, RabbitMQ 3.10: 3.1.1's "unacceptable protocol version"
				e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourAnswered311, s.version, code, 1)
				l.refused(s, 4, code)
				return n, nil
			}
			return 0, err
		}
		now := e.now()
		if ca.Reason != 0 {
			l.refused(s, s.version, byte(ca.Reason))
			return n, nil
		}
		s.state = stConnected
		l.dropHandshake(s)
		if s.flags&sfDeferred != 0 {
			l.arm(s)
		}
		e.open.Add(1)
		lat := now - s.dialStart
		if d := l.arrival() - (e.realEpoch + s.dialStart); d > 0 && d <= lat {
			lat = d // when the kernel received it, not when the loop read it
		}
		if s.attempt > 0 {
			e.cfg.Observer.Reconnected(l.idx, int(s.client), int(s.attempt), time.Duration(lat))
		} else {
			e.cfg.Observer.Connected(l.idx, int(s.client), time.Duration(lat))
		}
		l.verdict(s)
		if v == codec.V5 {
			if ca.Props.Has(codec.PropServerKeepAlive) {
				s.keepalive = ca.Props.ServerKeepAlive // [MQTT-3.2.2-21]
			}
			if ca.Props.Has(codec.PropMaximumPacketSize) {
				s.maxOut = ca.Props.MaximumPacketSize // [MQTT-3.2.2-15]
			}
		}
		l.watch(s) // for its keepalive, the broker's if it set one
		l.keptSession(s, ca.SessionPresent, now)
		l.rxConnected(s, ca.SessionPresent)
		l.established(s, ca)
	case codec.TypePublish:
		pk := &l.inPub
		if err := codec.DecodePublish(h, body, v, pk); err != nil {
			return 0, err
		}
		if pk.Props.Present&(1<<codec.PropTopicAlias) != 0 {
			if err := l.resolveAlias(s, pk); err != nil {
				return 0, err
			}
		}
		if pk.QoS == 2 && !l.qos2First(s, pk.ID) { // [MQTT-4.3.3-10] 3.1.1: [MQTT-4.3.3-2]
			// The id is not released yet: acknowledged again, not delivered again.
			l.reply = codec.AppendPubrec(l.reply, &codec.Ack{ID: pk.ID}, v)
			break
		}
		l.received(s, pk)
	case codec.TypePuback:
		if err := codec.DecodePuback(body, v, &l.ack); err != nil {
			return 0, err
		}
		if l.ack.Reason < 0x80 {
			if p := s.pub; p != nil && p.s == s && p.qos == 2 && p.find(l.ack.ID) >= 0 {
				l.e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourPubackQoS2, 2, 1, 1)
			}
		}
		l.acked(s, l.ack.ID, l.ack.Reason) // a PUBACK of 0x80 and up refuses the message
	case codec.TypePubcomp:
		if err := codec.DecodePubcomp(body, v, &l.ack); err != nil {
			return 0, err
		}
		// The broker took the message at its PUBREC; a PUBCOMP's 0x92 (packet identifier
		// not found: mochi 2.7 sends it when its own PUBLISH to this client has the same
		// id) still ends the exchange, an acknowledgement.
		if l.ack.Reason != 0 {
			l.e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourPubcompNotFound, 0, byte(l.ack.Reason), 1)
		}
		l.acked(s, l.ack.ID, 0)
	case codec.TypePubrec:
		if err := codec.DecodePubrec(body, v, &l.ack); err != nil {
			return 0, err
		}
		if l.ack.Reason >= 0x80 { // the broker refused the message: the exchange ends here
			l.acked(s, l.ack.ID, l.ack.Reason)
			break
		}
		l.released(s, l.ack.ID)
		l.reply = codec.AppendPubrel(l.reply, &codec.Ack{ID: l.ack.ID}, v)
	case codec.TypePubrel:
		if err := codec.DecodePubrel(body, v, &l.ack); err != nil {
			return 0, err
		}
		comp := codec.Ack{ID: l.ack.ID}
		if !l.qos2Release(s, l.ack.ID) && v == codec.V5 {
			comp.Reason = codec.ReasonPacketIDNotFound // section 3.7.2.1
		}
		l.reply = codec.AppendPubcomp(l.reply, &comp, v) // [MQTT-4.3.3-11] 3.1.1: [MQTT-4.3.3-2]
	case codec.TypeSuback:
		sa := &l.suback
		if err := codec.DecodeSuback(body, v, sa); err != nil && !suback311Failure(err, body, v, sa) {
			return 0, err
		}
		failed, code, granted := 0, byte(0), byte(2)
		for _, r := range sa.Reasons {
			if r >= 0x80 {
				failed++
				code = byte(r)
			} else {
				granted = min(granted, byte(r))
			}
		}
		if granted < 2 {
			l.grantedBelow(s, sa.Reasons)
		}
		s.flags &^= sfSubPending
		if failed < len(sa.Reasons) {
			l.e.subGranted.Add(1)
		}
		l.e.subscribed.Add(1)
		l.e.cfg.Observer.Subscribed(l.idx, int(s.client), failed, code)
	case codec.TypePingresp:
		if s.pingSent != 0 {
			l.e.cfg.Observer.Ping(l.idx, int(s.client), time.Duration(max(l.arrival()-(l.e.realEpoch+s.pingSent), 0)))
			s.pingSent = 0
			l.watch(s) // for its next keepalive: it waited in the wheel for the PINGRESP's timeout
		}
	case codec.TypeDisconnect:
		d := &l.disc
		if err := codec.DecodeDisconnect(body, v, d); err != nil {
			return 0, err
		}
		if s.state != stConnected {
			break // lost reports the close that follows
		}
		// The broker ends the connection and says why [MQTT-3.14.4-1]: its words are the drop.
		e := l.e
		e.open.Add(-1)
		e.cfg.Observer.BrokerDisconnect(l.idx, int(s.client), byte(d.Reason), d.Props.ReasonString)
		l.close(s)
		l.reconnect(s.client)
	}
	return n, nil
}

// refused ends s, whose CONNACK refused it with code (a return code of protocol level
// version).
func (l *loop) refused(s *session, version, code byte) {
	l.e.cfg.Observer.Refused(l.idx, int(s.client), int(s.attempt), version, code)
	l.verdict(s)
	l.close(s)
	l.retry(s)
}

// answered311 reports whether body, the CONNACK of a 5.0 CONNECT that did not decode as
// 5.0, is a 3.1.1 CONNACK refusing the connection, and its return code: a broker that does
// not speak 5.0 answers "unacceptable protocol version" (1) that way.
func answered311(body []byte, v codec.Version) (byte, bool) {
	if v != codec.V5 || len(body) != 2 || body[0] != 0 || body[1] == 0 || body[1] > 5 {
		return 0, false
	}
	return body[1], true
}

// grantedBelow reports the filters of s's SUBSCRIBE that a SUBACK (reasons) granted a
// lower QoS than asked. The plan's filters are read again (Client): once per subscriber,
// off the message path.
func (l *loop) grantedBelow(s *session, reasons []codec.ReasonCode) {
	spec := l.e.cfg.Client(int(s.client))
	var count [3][3]int // [asked][granted]
	for k, f := range spec.Subscriptions {
		if k >= len(reasons) {
			break
		}
		if r := reasons[k]; r < 0x80 && byte(r) < byte(f.QoS) {
			count[min(byte(f.QoS), 2)][r]++
		}
	}
	for asked := range 3 {
		for got := range 3 {
			if n := count[asked][got]; n > 0 {
				l.e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourGrantedQoS, byte(asked), byte(got), n)
			}
		}
	}
}

// keptSession checks, at the CONNACK of s, whether the broker kept the session of a
// client whose earlier connection ended while it had one: Clean Session 0 (5.0: Clean
// Start 0 with a Session Expiry that has not run out since) and Session Present 0 is a
// session the broker did not keep (BehaviourSessionNotKept). The Session Expiry is the
// client's (a broker may have set a shorter one in its earlier CONNACK; one second of
// slack is left for the clocks of both sides).
func (l *loop) keptSession(s *session, present bool, now int64) {
	if len(l.away) == 0 {
		return
	}
	ended, ok := l.away[s.client]
	if !ok {
		return
	}
	delete(l.away, s.client)
	if present || s.flags&sfPersistent == 0 {
		return
	}
	if s.version == 5 {
		sp := s.spec
		if sp == nil || sp.Props == nil || !sp.Props.Has(codec.PropSessionExpiry) || sp.Props.SessionExpiry == 0 {
			return // the session ended with the connection [MQTT-3.1.2-23]
		}
		if x := sp.Props.SessionExpiry; x != 0xFFFFFFFF && now-ended+int64(time.Second) >= int64(x)*int64(time.Second) {
			return // it expired while the client was away
		}
	}
	l.e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourSessionNotKept, 1, 0, 1)
}

// established starts what a client does once connected: its SUBSCRIBE, its publisher.
func (l *loop) established(s *session, ca *codec.Connack) {
	v := codec.Version(s.version)
	spec := s.spec
	s.spec = nil // an idle connection keeps only what its session needs
	if spec == nil {
		return
	}
	if len(spec.Subscriptions) > 0 { // one SUBSCRIBE per connection: packet id 1
		sub := codec.Subscribe{ID: 1, Filters: spec.Subscriptions}
		for i := range sub.Filters {
			if sub.Filters[i].RetainAsPublished {
				s.flags |= sfRAP
			}
		}
		switch {
		case l.unsupported(s, ca, spec.Subscriptions):
			// Not sent: the broker said it does not take such filters. No SUBACK came, so
			// none is reported (Behaved counted the filters); the subscribe phase ends.
			s.flags &^= sfSubPending
			l.e.subscribed.Add(1)
		case s.maxOut > 0 && codec.SizeSubscribe(&sub, v) > int(s.maxOut): // [MQTT-3.2.2-15]
			// Not sent: reported as refused, so that the subscribe phase ends.
			s.flags &^= sfSubPending
			l.e.subscribed.Add(1)
			l.e.cfg.Observer.Subscribed(l.idx, int(s.client), len(sub.Filters), byte(codec.ReasonPacketTooLarge))
		default:
			l.write(s, codec.AppendSubscribe(l.out[:0], &sub, v))
		}
	}
	if spec.Respond && v == codec.V5 {
		l.responder(s, spec, ca)
	}
	if spec.Publish != nil {
		rm, am := 0, 0
		if v == codec.V5 && ca.Props.Has(codec.PropReceiveMaximum) {
			rm = int(ca.Props.ReceiveMaximum)
		}
		if v == codec.V5 && ca.Props.Has(codec.PropTopicAliasMaximum) {
			am = int(ca.Props.TopicAliasMaximum)
		}
		if s.maxOut > 0 && l.largestPublish(spec.Publish, v, am) > int(s.maxOut) {
			l.e.limited.Add(1)
		}
		p := l.publisher(s.client, spec.Publish)
		p.qos, p.noRetain = spec.Publish.QoS, false
		if v == codec.V5 {
			l.grants(s, p, ca)
		}
		l.startPublisher(s, spec.Publish, rm, am, ca.SessionPresent)
	}
}

// responder readies s to answer requests at what its 5.0 CONNACK ca grants: the broker's
// Receive Maximum bounds its responses in flight, its Maximum QoS their QoS. Responses in
// flight on an earlier connection are not sent again.
func (l *loop) responder(s *session, spec *ClientSpec, ca *codec.Connack) {
	if l.resp == nil {
		l.resp = map[int32]*respState{}
	}
	rs := l.resp[s.client]
	if rs == nil {
		rs = &respState{}
		l.resp[s.client] = rs
	}
	rs.out, rs.max, rs.qos = 0, 65535, spec.RespondQoS
	if ca.Props.Has(codec.PropReceiveMaximum) {
		rs.max = int(ca.Props.ReceiveMaximum)
	}
	if ca.Props.Has(codec.PropMaximumQoS) && ca.Props.MaximumQoS < rs.qos {
		rs.qos = ca.Props.MaximumQoS
	}
}

// grants runs publisher p of s at what its 5.0 CONNACK ca grants: the broker's Maximum QoS
// when it is below the plan's [MQTT-3.2.2-11], no retain flag when Retain Available is 0
// [MQTT-3.2.2-14]; each reported (Behaved) and counted (Lacking).
func (l *loop) grants(s *session, p *pubState, ca *codec.Connack) {
	e := l.e
	sp := p.spec
	if ca.Props.Has(codec.PropMaximumQoS) && ca.Props.MaximumQoS < sp.QoS {
		p.qos = ca.Props.MaximumQoS
		e.lacking.Add(1)
		e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourMaxQoS, sp.QoS, ca.Props.MaximumQoS, 1)
	}
	if sp.Retain && ca.Props.Has(codec.PropRetainAvailable) && ca.Props.RetainAvailable == 0 {
		p.noRetain = true
		e.lacking.Add(1)
		e.cfg.Observer.Behaved(l.idx, int(s.client), BehaviourNoRetain, 1, 0, 1)
	}
}

// unsupported reports whether s's 5.0 CONNACK ca says the broker does not take some of
// subs, the filters of s: shared subscriptions or wildcards not available. The SUBSCRIBE
// is then not sent, as the broker would end the connection for it (sections 3.2.2.3.13
// and 3.2.2.3.15) rather than refuse the filter: mqblast withholds it, which is no
// refusal of the broker's. Its filters are reported once (Behaved: BehaviourNoShared when
// one of them is shared, else BehaviourNoWildcard; n counts every filter not sent) and
// the client is counted (Lacking).
func (l *loop) unsupported(s *session, ca *codec.Connack, subs []codec.Subscription) bool {
	if s.version != 5 {
		return false
	}
	noShared := ca.Props.Has(codec.PropSharedSubAvailable) && ca.Props.SharedSubAvailable == 0
	noWild := ca.Props.Has(codec.PropWildcardSubAvailable) && ca.Props.WildcardSubAvailable == 0
	if !noShared && !noWild {
		return false
	}
	shared, wild := false, false
	for _, f := range subs {
		shared = shared || noShared && bytes.HasPrefix(f.Filter, sharePrefix)
		wild = wild || noWild && bytes.ContainsAny(f.Filter, "+#")
	}
	b := BehaviourNoShared
	switch {
	case shared:
	case wild:
		b = BehaviourNoWildcard
	default:
		return false
	}
	l.e.cfg.Observer.Behaved(l.idx, int(s.client), b, 1, 0, len(subs))
	l.e.lacking.Add(1)
	return true
}

var sharePrefix = []byte("$share/")

// largestPublish returns the size of the largest PUBLISH sp produces on a connection whose
// broker takes aliasMax topic aliases: the first message, with the whole topic and the
// alias, and the longest random topic number. Connect time only.
func (l *loop) largestPublish(sp *PublishSpec, v codec.Version, aliasMax int) int {
	pl := l.payload
	if len(pl) < sp.PayloadSize {
		pl = make([]byte, sp.PayloadSize)
	}
	var p codec.Publish
	fillPublish(&p, sp, sp.Topic, v, usesAlias(sp, aliasMax), true)
	p.Payload, p.ID = pl[:sp.PayloadSize], 1
	if sp.ResponseTopic != nil && v == codec.V5 {
		setRequest(&p, sp, pl[:HeaderSize])
	}
	if sp.RandN > 0 {
		p.Topic = strconv.AppendInt(append([]byte(nil), sp.Topic...), int64(sp.RandN), 10)
		p.Topic = append(p.Topic, sp.TopicSuffix...)
	}
	return codec.SizePublish(&p, v)
}

var errUnexpected = &unexpectedError{}

type unexpectedError struct{}

func (*unexpectedError) Error() string {
	return "reactor: unexpected CONNACK on an established session"
}

// suback311Failure reports whether body, a 3.1.1 SUBACK that DecodeSuback refused with
// err, is one whose only fault is a failure code of 5.0's (0x80 and up; mochi 2.7 sends
// 0x91, packet identifier in use, to a resumed 3.1.1 session's SUBSCRIBE), and if so
// decodes it into sa: the filter is refused, by that reason, and the connection kept.
func suback311Failure(err error, body []byte, v codec.Version, sa *codec.Suback) bool {
	if v != codec.V311 || !errors.Is(err, codec.ErrReasonCode) || len(body) < 3 {
		return false
	}
	id := uint16(body[0])<<8 | uint16(body[1])
	if id == 0 {
		return false
	}
	for _, c := range body[2:] {
		if c > 2 && c < 0x80 {
			return false
		}
	}
	sa.ID, sa.Reasons = id, sa.Reasons[:0]
	for _, c := range body[2:] {
		sa.Reasons = append(sa.Reasons, codec.ReasonCode(c))
	}
	return true
}
