package codec_test

import (
	"math/rand/v2"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// gen makes random packets that Validate accepts, for the differential tests. It is
// deterministic for a given seed. Its knobs keep the packets inside what the other library can
// represent without loss (see the differential tests for each limit and why).
type gen struct {
	r *rand.Rand
	v codec.Version
	// singleSubID: at most one subscription identifier per packet (paho keeps one).
	singleSubID bool
	// nonZeroProps: no property with value 0 or "" (mochi drops those it has no flag for).
	nonZeroProps bool
	// willSubset: the will properties that survive the other library.
	willSubset []codec.PropID
}

// allowedProps is table 2.2.2.2 of MQTT 5.0, written out again here (not taken from the codec)
// so that the test checks the codec's table. PropTypeWill stands for the will properties.
const typeWill = codec.PacketType(0)

var allowedProps = map[codec.PacketType][]codec.PropID{
	codec.TypeConnect: {codec.PropSessionExpiry, codec.PropAuthMethod, codec.PropAuthData,
		codec.PropRequestProblemInfo, codec.PropRequestResponseInfo, codec.PropReceiveMaximum,
		codec.PropTopicAliasMaximum, codec.PropMaximumPacketSize},
	codec.TypeConnack: {codec.PropSessionExpiry, codec.PropAssignedClientID, codec.PropServerKeepAlive,
		codec.PropAuthMethod, codec.PropAuthData, codec.PropResponseInfo, codec.PropServerReference,
		codec.PropReasonString, codec.PropReceiveMaximum, codec.PropTopicAliasMaximum,
		codec.PropMaximumQoS, codec.PropRetainAvailable, codec.PropMaximumPacketSize,
		codec.PropWildcardSubAvailable, codec.PropSubIDAvailable, codec.PropSharedSubAvailable},
	codec.TypePublish: {codec.PropPayloadFormat, codec.PropMessageExpiry, codec.PropContentType,
		codec.PropResponseTopic, codec.PropCorrelationData, codec.PropSubscriptionID, codec.PropTopicAlias},
	typeWill: {codec.PropPayloadFormat, codec.PropMessageExpiry, codec.PropContentType,
		codec.PropResponseTopic, codec.PropCorrelationData, codec.PropWillDelay},
	codec.TypePuback:      {codec.PropReasonString},
	codec.TypePubrec:      {codec.PropReasonString},
	codec.TypePubrel:      {codec.PropReasonString},
	codec.TypePubcomp:     {codec.PropReasonString},
	codec.TypeSubscribe:   {codec.PropSubscriptionID},
	codec.TypeSuback:      {codec.PropReasonString},
	codec.TypeUnsubscribe: {},
	codec.TypeUnsuback:    {codec.PropReasonString},
	codec.TypeDisconnect:  {codec.PropSessionExpiry, codec.PropServerReference, codec.PropReasonString},
	codec.TypeAuth:        {codec.PropAuthMethod, codec.PropAuthData, codec.PropReasonString},
}

var (
	codesConnack5   = []codec.ReasonCode{0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F}
	codesPubAck     = []codec.ReasonCode{0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99}
	codesPubRel     = []codec.ReasonCode{0x00, 0x92}
	codesSuback5    = []codec.ReasonCode{0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2}
	codesSuback311  = []codec.ReasonCode{0x00, 0x01, 0x02, 0x80}
	codesUnsuback   = []codec.ReasonCode{0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91}
	codesDisconnect = []codec.ReasonCode{0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2}
	codesAuth       = []codec.ReasonCode{0x00, 0x18, 0x19}
)

var genTypes = []codec.PacketType{codec.TypeConnect, codec.TypeConnack, codec.TypePublish, codec.TypePuback,
	codec.TypePubrec, codec.TypePubrel, codec.TypePubcomp, codec.TypeSubscribe, codec.TypeSuback,
	codec.TypeUnsubscribe, codec.TypeUnsuback, codec.TypePingreq, codec.TypePingresp, codec.TypeDisconnect,
	codec.TypeAuth}

func (g *gen) pick(codes []codec.ReasonCode) codec.ReasonCode { return codes[g.r.IntN(len(codes))] }

// str returns a random valid UTF-8 string of 1..n runes, with some multi-byte runes.
func (g *gen) str(n int) []byte {
	runes := []rune("abcxyz019-_ é世€😀")
	var b []byte
	for range 1 + g.r.IntN(n) {
		b = append(b, string(runes[g.r.IntN(len(runes))])...)
	}
	return b
}

func (g *gen) bin(n int) []byte {
	b := make([]byte, g.r.IntN(n+1))
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g *gen) topic() []byte {
	levels := 1 + g.r.IntN(4)
	var b []byte
	for i := range levels {
		if i > 0 {
			b = append(b, '/')
		}
		b = append(b, g.str(5)...)
	}
	return b
}

func (g *gen) filter() []byte {
	switch g.r.IntN(5) {
	case 0:
		return []byte("#")
	case 1:
		return append(g.topic(), "/+/x"...)
	case 2:
		return append(g.topic(), "/#"...)
	}
	return g.topic()
}

func (g *gen) id() uint16 { return uint16(1 + g.r.IntN(65535)) }

// props fills random properties allowed in context t.
func (g *gen) props(t codec.PacketType) codec.Properties {
	var p codec.Properties
	if g.v != codec.V5 {
		return p
	}
	ids := allowedProps[t]
	if t == typeWill && g.willSubset != nil {
		ids = g.willSubset
	}
	small := func() uint32 {
		if g.nonZeroProps {
			return 1 + g.r.Uint32N(1000)
		}
		return g.r.Uint32N(1000)
	}
	for _, id := range ids {
		if g.r.IntN(3) != 0 {
			continue
		}
		switch id {
		case codec.PropSubscriptionID:
			n := 1
			if t == codec.TypePublish && !g.singleSubID {
				n += g.r.IntN(3)
			}
			for range n {
				p.SubIDs.Add(1 + g.r.Uint32N(codec.MaxRemainingLength))
			}
			continue
		case codec.PropPayloadFormat:
			p.PayloadFormat = byte(g.r.IntN(2))
		case codec.PropMessageExpiry:
			p.MessageExpiry = small()
		case codec.PropContentType:
			p.ContentType = g.str(8)
		case codec.PropResponseTopic:
			p.ResponseTopic = g.topic()
		case codec.PropCorrelationData:
			p.CorrelationData = append(g.bin(8), 1)
		case codec.PropSessionExpiry:
			p.SessionExpiry = small()
		case codec.PropAssignedClientID:
			p.AssignedClientID = g.str(8)
		case codec.PropServerKeepAlive:
			p.ServerKeepAlive = uint16(small())
		case codec.PropAuthMethod:
			p.AuthMethod = g.str(8)
		case codec.PropAuthData:
			p.AuthData = append(g.bin(8), 1)
			p.AuthMethod = g.str(8)
			p.Set(codec.PropAuthMethod) // [MQTT-3.1.2.11.10] data needs a method
		case codec.PropRequestProblemInfo:
			p.RequestProblemInfo = byte(g.r.IntN(2))
		case codec.PropWillDelay:
			p.WillDelay = small()
		case codec.PropRequestResponseInfo:
			p.RequestResponseInfo = 1 // mochi writes it only when non-zero and has no flag
		case codec.PropResponseInfo:
			p.ResponseInfo = g.str(8)
		case codec.PropServerReference:
			p.ServerReference = g.str(8)
		case codec.PropReasonString:
			p.ReasonString = g.str(8)
		case codec.PropReceiveMaximum:
			p.ReceiveMaximum = uint16(1 + g.r.IntN(65535))
		case codec.PropTopicAliasMaximum:
			p.TopicAliasMaximum = uint16(small())
		case codec.PropTopicAlias:
			p.TopicAlias = uint16(1 + g.r.IntN(65535))
		case codec.PropMaximumQoS:
			p.MaximumQoS = byte(g.r.IntN(2))
		case codec.PropRetainAvailable:
			p.RetainAvailable = byte(g.r.IntN(2))
		case codec.PropMaximumPacketSize:
			p.MaximumPacketSize = 1 + g.r.Uint32N(1<<30)
		case codec.PropWildcardSubAvailable:
			p.WildcardSubAvailable = byte(g.r.IntN(2))
		case codec.PropSubIDAvailable:
			p.SubIDAvailable = byte(g.r.IntN(2))
		case codec.PropSharedSubAvailable:
			p.SharedSubAvailable = byte(g.r.IntN(2))
		}
		p.Set(id)
	}
	for range g.r.IntN(3) {
		p.User.Add(string(g.str(6)), string(g.str(6)))
	}
	return p
}

// packet returns a random packet of type t.
func (g *gen) packet(t codec.PacketType) any {
	v5 := g.v == codec.V5
	switch t {
	case codec.TypeConnect:
		p := &codec.Connect{ClientID: g.str(12), KeepAlive: uint16(g.r.IntN(65536)),
			CleanStart: g.r.IntN(2) == 0, Props: g.props(t)}
		if g.r.IntN(2) == 0 {
			p.HasWill, p.WillQoS, p.WillRetain = true, codec.QoS(g.r.IntN(3)), g.r.IntN(2) == 0
			p.WillTopic, p.WillPayload, p.WillProps = g.topic(), g.bin(20), g.props(typeWill)
		}
		if g.r.IntN(2) == 0 {
			p.HasUsername, p.Username = true, g.str(8)
			if g.r.IntN(2) == 0 {
				p.HasPassword, p.Password = true, g.bin(8)
			}
		}
		return p
	case codec.TypeConnack:
		p := &codec.Connack{Props: g.props(t)}
		if v5 {
			p.Reason = g.pick(codesConnack5)
		} else {
			p.Reason = codec.ReasonCode(g.r.IntN(6))
		}
		p.SessionPresent = p.Reason == 0 && g.r.IntN(2) == 0
		return p
	case codec.TypePublish:
		p := &codec.Publish{QoS: codec.QoS(g.r.IntN(3)), Retain: g.r.IntN(2) == 0, Topic: g.topic(),
			Payload: g.bin(64), Props: g.props(t)}
		if p.QoS > 0 {
			p.ID, p.Dup = g.id(), g.r.IntN(2) == 0
		}
		return p
	case codec.TypePuback, codec.TypePubrec, codec.TypePubrel, codec.TypePubcomp:
		p := &codec.Ack{ID: g.id()}
		if v5 {
			p.Props = g.props(t)
			if t == codec.TypePuback || t == codec.TypePubrec {
				p.Reason = g.pick(codesPubAck)
			} else {
				p.Reason = g.pick(codesPubRel)
			}
		}
		return p
	case codec.TypeSubscribe:
		p := &codec.Subscribe{ID: g.id(), Props: g.props(t)}
		for range 1 + g.r.IntN(4) {
			s := codec.Subscription{Filter: g.filter(), QoS: codec.QoS(g.r.IntN(3))}
			if v5 {
				s.NoLocal, s.RetainAsPublished = g.r.IntN(2) == 0, g.r.IntN(2) == 0
				s.RetainHandling = byte(g.r.IntN(3))
			}
			p.Filters = append(p.Filters, s)
		}
		return p
	case codec.TypeSuback:
		p := &codec.Suback{ID: g.id(), Props: g.props(t)}
		codes := codesSuback311
		if v5 {
			codes = codesSuback5
		}
		for range 1 + g.r.IntN(4) {
			p.Reasons = append(p.Reasons, g.pick(codes))
		}
		return p
	case codec.TypeUnsubscribe:
		p := &codec.Unsubscribe{ID: g.id(), Props: g.props(t)}
		for range 1 + g.r.IntN(4) {
			p.Filters = append(p.Filters, g.filter())
		}
		return p
	case codec.TypeUnsuback:
		p := &codec.Unsuback{ID: g.id(), Props: g.props(t)}
		if v5 {
			for range 1 + g.r.IntN(4) {
				p.Reasons = append(p.Reasons, g.pick(codesUnsuback))
			}
		}
		return p
	case codec.TypePingreq, codec.TypePingresp:
		return codectest.Ping{}
	case codec.TypeDisconnect:
		p := &codec.Disconnect{Props: g.props(t)}
		if v5 {
			p.Reason = g.pick(codesDisconnect)
		}
		return p
	case codec.TypeAuth:
		p := &codec.Auth{Reason: g.pick(codesAuth), Props: g.props(t)}
		return p
	}
	panic("BUG: gen: unknown type")
}
