// Package codectest holds the golden vectors of the codec (one exported table, Vectors) and
// helpers to encode and decode any packet type through one call, for the codec's own tests,
// fuzz targets and the fake brokers of other packages' tests. It must not be imported by
// non-test code.
package codectest

import (
	"github.com/mqblast/mqblast/codec"
)

// Ping is the decoded form of PINGREQ and PINGRESP, which have no fields.
type Ping struct{}

// Encode appends the wire form of p, a packet of type t for version v, to dst. p is a pointer
// to the codec struct of the type (*codec.Ack for the four acknowledgements, Ping or nil for
// PINGREQ and PINGRESP). It panics on a type it does not know, which is a bug in the test.
func Encode(dst []byte, t codec.PacketType, p any, v codec.Version) []byte {
	switch t {
	case codec.TypeConnect:
		return codec.AppendConnect(dst, p.(*codec.Connect), v)
	case codec.TypeConnack:
		return codec.AppendConnack(dst, p.(*codec.Connack), v)
	case codec.TypePublish:
		return codec.AppendPublish(dst, p.(*codec.Publish), v)
	case codec.TypePuback:
		return codec.AppendPuback(dst, p.(*codec.Ack), v)
	case codec.TypePubrec:
		return codec.AppendPubrec(dst, p.(*codec.Ack), v)
	case codec.TypePubrel:
		return codec.AppendPubrel(dst, p.(*codec.Ack), v)
	case codec.TypePubcomp:
		return codec.AppendPubcomp(dst, p.(*codec.Ack), v)
	case codec.TypeSubscribe:
		return codec.AppendSubscribe(dst, p.(*codec.Subscribe), v)
	case codec.TypeSuback:
		return codec.AppendSuback(dst, p.(*codec.Suback), v)
	case codec.TypeUnsubscribe:
		return codec.AppendUnsubscribe(dst, p.(*codec.Unsubscribe), v)
	case codec.TypeUnsuback:
		return codec.AppendUnsuback(dst, p.(*codec.Unsuback), v)
	case codec.TypePingreq:
		return codec.AppendPingreq(dst)
	case codec.TypePingresp:
		return codec.AppendPingresp(dst)
	case codec.TypeDisconnect:
		return codec.AppendDisconnect(dst, p.(*codec.Disconnect), v)
	case codec.TypeAuth:
		return codec.AppendAuth(dst, p.(*codec.Auth))
	}
	panic("BUG: codectest.Encode: unknown packet type " + t.String())
}

// Decoded is one packet as Decode returns it.
type Decoded struct {
	Header  codec.Header
	Version codec.Version // for CONNECT the version it announces, else the one passed in
	Packet  any           // pointer to a fresh codec struct, or Ping
}

// Decode frames the first packet of buf with codec.Split and decodes it for version v into a
// fresh struct. n == 0 with a nil error means more bytes are needed. The packet aliases buf.
func Decode(buf []byte, v codec.Version, maxSize int) (d Decoded, n int, err error) {
	h, body, n, err := codec.Split(buf, maxSize)
	if err != nil || n == 0 {
		return Decoded{}, n, err
	}
	d, err = DecodeBody(h, body, v)
	return d, n, err
}

// DecodeBody decodes one packet body whose fixed header is h.
func DecodeBody(h codec.Header, body []byte, v codec.Version) (Decoded, error) {
	d := Decoded{Header: h, Version: v}
	var err error
	switch h.Type {
	case codec.TypeConnect:
		p := new(codec.Connect)
		d.Packet = p
		d.Version, err = codec.DecodeConnect(body, p)
	case codec.TypeConnack:
		p := new(codec.Connack)
		d.Packet, err = p, codec.DecodeConnack(body, v, p)
	case codec.TypePublish:
		p := new(codec.Publish)
		d.Packet, err = p, codec.DecodePublish(h, body, v, p)
	case codec.TypePuback:
		p := new(codec.Ack)
		d.Packet, err = p, codec.DecodePuback(body, v, p)
	case codec.TypePubrec:
		p := new(codec.Ack)
		d.Packet, err = p, codec.DecodePubrec(body, v, p)
	case codec.TypePubrel:
		p := new(codec.Ack)
		d.Packet, err = p, codec.DecodePubrel(body, v, p)
	case codec.TypePubcomp:
		p := new(codec.Ack)
		d.Packet, err = p, codec.DecodePubcomp(body, v, p)
	case codec.TypeSubscribe:
		p := new(codec.Subscribe)
		d.Packet, err = p, codec.DecodeSubscribe(body, v, p)
	case codec.TypeSuback:
		p := new(codec.Suback)
		d.Packet, err = p, codec.DecodeSuback(body, v, p)
	case codec.TypeUnsubscribe:
		p := new(codec.Unsubscribe)
		d.Packet, err = p, codec.DecodeUnsubscribe(body, v, p)
	case codec.TypeUnsuback:
		p := new(codec.Unsuback)
		d.Packet, err = p, codec.DecodeUnsuback(body, v, p)
	case codec.TypePingreq:
		d.Packet, err = Ping{}, codec.DecodePingreq(body)
	case codec.TypePingresp:
		d.Packet, err = Ping{}, codec.DecodePingresp(body)
	case codec.TypeDisconnect:
		p := new(codec.Disconnect)
		d.Packet, err = p, codec.DecodeDisconnect(body, v, p)
	case codec.TypeAuth:
		p := new(codec.Auth)
		d.Packet, err = p, codec.DecodeAuth(body, v, p)
	default:
		err = codec.ErrReservedType
	}
	return d, err
}

// Users returns user properties built from name, value pairs.
func Users(pairs ...string) codec.UserProps {
	var u codec.UserProps
	for i := 0; i+1 < len(pairs); i += 2 {
		u.Add(pairs[i], pairs[i+1])
	}
	return u
}

// SubIDs returns a list of subscription identifiers.
func SubIDs(ids ...uint32) codec.SubIDs {
	var s codec.SubIDs
	for _, id := range ids {
		s.Add(id)
	}
	return s
}

// B returns the bytes of s, for packet literals.
func B(s string) []byte { return []byte(s) }
