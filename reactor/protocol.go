package reactor

import (
	"time"

	"github.com/mqblast/mqblast/codec"
)

// appendConnect appends s's CONNECT. Connect time only: it converts the strings.
func appendConnect(dst []byte, s *ClientSpec) []byte {
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
	if v == codec.V5 && s.Props != nil {
		p.Props = *s.Props
	}
	return codec.AppendConnect(dst, &p, v)
}

// maxInbound is the largest packet the engine accepts from a broker.
const maxInbound = 1 << 20

// handle processes the first packet of in, returning the bytes it used (0: incomplete).
func (l *loop) handle(s *session, in []byte) (int, error) {
	h, body, n, err := codec.Split(in, maxInbound)
	if err != nil || n == 0 {
		return 0, err
	}
	v := codec.Version(s.version)
	switch h.Type {
	case codec.TypeConnack:
		if s.state != stConnecting {
			return 0, errUnexpected
		}
		ca := &l.connack
		if err := codec.DecodeConnack(body, v, ca); err != nil {
			return 0, err
		}
		e := l.e
		now := e.now()
		if ca.Reason != 0 {
			e.cfg.Observer.Refused(l.idx, int(s.client), s.version, byte(ca.Reason))
			l.verdict(s)
			l.close(s)
			l.retry(s)
			return n, nil
		}
		s.state = stConnected
		if v == codec.V5 && ca.Props.Has(codec.PropMaximumPacketSize) {
			s.maxOut = ca.Props.MaximumPacketSize
		}
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
		l.established(s, ca)
	case codec.TypePublish:
		pk := &l.inPub
		if err := codec.DecodePublish(h, body, v, pk); err != nil {
			return 0, err
		}
		l.received(s, pk)
	case codec.TypePuback, codec.TypePubcomp:
		if err := codec.DecodePuback(body, v, &l.ack); err != nil {
			return 0, err
		}
		l.acked(s, l.ack.ID)
	case codec.TypePubrec:
		if err := codec.DecodePubrec(body, v, &l.ack); err != nil {
			return 0, err
		}
		if l.ack.Reason >= 0x80 { // the broker refused the message: the exchange ends here
			l.acked(s, l.ack.ID)
			break
		}
		l.released(s, l.ack.ID)
		l.reply = codec.AppendPubrel(l.reply, &codec.Ack{ID: l.ack.ID}, v)
	case codec.TypePubrel:
		if err := codec.DecodePubrel(body, v, &l.ack); err != nil {
			return 0, err
		}
		l.reply = codec.AppendPubcomp(l.reply, &codec.Ack{ID: l.ack.ID}, v)
	case codec.TypeSuback:
		sa := &l.suback
		if err := codec.DecodeSuback(body, v, sa); err != nil {
			return 0, err
		}
		failed, code := 0, byte(0)
		for _, r := range sa.Reasons {
			if r >= 0x80 {
				failed++
				code = byte(r)
			}
		}
		l.e.subscribed.Add(1)
		l.e.cfg.Observer.Subscribed(l.idx, int(s.client), failed, code)
	case codec.TypePingresp:
		if s.pingSent != 0 {
			l.e.cfg.Observer.Ping(l.idx, int(s.client), time.Duration(max(l.arrival()-(l.e.realEpoch+s.pingSent), 0)))
			s.pingSent = 0
		}
	case codec.TypeDisconnect:
		// The broker's DISCONNECT (5.0) precedes its close; OnClose reports the drop.
	}
	return n, nil
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
		l.write(s, codec.AppendSubscribe(l.out[:0], &codec.Subscribe{ID: 1, Filters: spec.Subscriptions}, v))
	}
	if spec.Publish != nil {
		rm, am := 0, 0
		if v == codec.V5 && ca.Props.Has(codec.PropReceiveMaximum) {
			rm = int(ca.Props.ReceiveMaximum)
		}
		if v == codec.V5 && ca.Props.Has(codec.PropTopicAliasMaximum) {
			am = int(ca.Props.TopicAliasMaximum)
		}
		l.startPublisher(s, spec.Publish, rm, am, ca.SessionPresent)
	}
}

var errUnexpected = &unexpectedError{}

type unexpectedError struct{}

func (*unexpectedError) Error() string {
	return "reactor: unexpected CONNACK on an established session"
}
