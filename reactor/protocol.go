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

func appendPingreq(dst []byte) []byte { return append(dst, byte(codec.TypePingreq)<<4, 0) }

// appendDisconnect appends a normal DISCONNECT: in 5.0 a remaining length of 0 means
// reason code 0x00 and no properties [MQTT-3.14.2.1], so the bytes are those of 3.1.1.
func appendDisconnect(dst []byte) []byte { return append(dst, byte(codec.TypeDisconnect)<<4, 0) }

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
			e.verdicts.Add(1)
			s.signal()
			l.close(s)
			l.retry(s)
			return n, nil
		}
		s.state = stConnected
		e.open.Add(1)
		if s.attempt > 0 {
			e.cfg.Observer.Reconnected(l.idx, int(s.client), int(s.attempt), time.Duration(now-s.dialStart))
		} else {
			e.cfg.Observer.Connected(l.idx, int(s.client), time.Duration(now-s.dialStart))
		}
		e.verdicts.Add(1)
		s.signal()
	case codec.TypePingresp:
		if s.pingSent != 0 {
			l.e.cfg.Observer.Ping(l.idx, int(s.client), time.Duration(l.e.now()-s.pingSent))
			s.pingSent = 0
		}
	case codec.TypeDisconnect:
		// The broker's DISCONNECT (5.0) precedes its close; OnClose reports the drop.
	default:
		// PUBLISH and acknowledgements belong to messaging runs (issue #5).
	}
	return n, nil
}

var errUnexpected = &unexpectedError{}

type unexpectedError struct{}

func (*unexpectedError) Error() string {
	return "reactor: unexpected CONNACK on an established session"
}
