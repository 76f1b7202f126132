package codec

import (
	"errors"
	"iter"
	"math/bits"
)

// PropID is an MQTT 5.0 property identifier.
type PropID byte

// The property identifiers (section 2.2.2.2). The comment names the wire type and the packets
// that may carry the property; "will" is the will properties of CONNECT.
const (
	PropPayloadFormat        PropID = 0x01 // byte: PUBLISH, will
	PropMessageExpiry        PropID = 0x02 // four-byte integer: PUBLISH, will
	PropContentType          PropID = 0x03 // UTF-8 string: PUBLISH, will
	PropResponseTopic        PropID = 0x08 // UTF-8 string: PUBLISH, will
	PropCorrelationData      PropID = 0x09 // binary data: PUBLISH, will
	PropSubscriptionID       PropID = 0x0B // variable byte integer: PUBLISH (repeatable), SUBSCRIBE
	PropSessionExpiry        PropID = 0x11 // four-byte integer: CONNECT, CONNACK, DISCONNECT
	PropAssignedClientID     PropID = 0x12 // UTF-8 string: CONNACK
	PropServerKeepAlive      PropID = 0x13 // two-byte integer: CONNACK
	PropAuthMethod           PropID = 0x15 // UTF-8 string: CONNECT, CONNACK, AUTH
	PropAuthData             PropID = 0x16 // binary data: CONNECT, CONNACK, AUTH
	PropRequestProblemInfo   PropID = 0x17 // byte: CONNECT
	PropWillDelay            PropID = 0x18 // four-byte integer: will
	PropRequestResponseInfo  PropID = 0x19 // byte: CONNECT
	PropResponseInfo         PropID = 0x1A // UTF-8 string: CONNACK
	PropServerReference      PropID = 0x1C // UTF-8 string: CONNACK, DISCONNECT
	PropReasonString         PropID = 0x1F // UTF-8 string: CONNACK, PUBACK, PUBREC, PUBREL, PUBCOMP, SUBACK, UNSUBACK, DISCONNECT, AUTH
	PropReceiveMaximum       PropID = 0x21 // two-byte integer: CONNECT, CONNACK
	PropTopicAliasMaximum    PropID = 0x22 // two-byte integer: CONNECT, CONNACK
	PropTopicAlias           PropID = 0x23 // two-byte integer: PUBLISH
	PropMaximumQoS           PropID = 0x24 // byte: CONNACK
	PropRetainAvailable      PropID = 0x25 // byte: CONNACK
	PropUserProperty         PropID = 0x26 // UTF-8 string pair: every packet with properties, will (repeatable)
	PropMaximumPacketSize    PropID = 0x27 // four-byte integer: CONNECT, CONNACK
	PropWildcardSubAvailable PropID = 0x28 // byte: CONNACK
	PropSubIDAvailable       PropID = 0x29 // byte: CONNACK
	PropSharedSubAvailable   PropID = 0x2A // byte: CONNACK
)

// PropMask is a set of property identifiers, bit i standing for PropID i.
type PropMask uint64

// Mask returns the set of ids. It is meant for tables and setup code.
func Mask(ids ...PropID) PropMask {
	var m PropMask
	for _, id := range ids {
		m |= 1 << id
	}
	return m
}

// The wire types of property values.
const (
	wireNone byte = iota
	wireByte
	wireU16
	wireU32
	wireVarint
	wireStr
	wireBin
	wirePair
)

// ctxWill stands for the will properties of CONNECT in a property's allowed set; the other bits
// are 1<<PacketType.
const ctxWill = 1 << 0

const (
	ctxConnect     = 1 << TypeConnect
	ctxConnack     = 1 << TypeConnack
	ctxPublish     = 1 << TypePublish
	ctxPuback      = 1 << TypePuback
	ctxPubrec      = 1 << TypePubrec
	ctxPubrel      = 1 << TypePubrel
	ctxPubcomp     = 1 << TypePubcomp
	ctxSubscribe   = 1 << TypeSubscribe
	ctxSuback      = 1 << TypeSuback
	ctxUnsubscribe = 1 << TypeUnsubscribe
	ctxUnsuback    = 1 << TypeUnsuback
	ctxDisconnect  = 1 << TypeDisconnect
	ctxAuth        = 1 << TypeAuth
	ctxAck         = ctxPuback | ctxPubrec | ctxPubrel | ctxPubcomp
)

type propInfo struct {
	wire    byte   // wire type; wireNone for an undefined identifier
	allowed uint16 // contexts that may carry it
}

// propTable is table 2.2.2.2 of MQTT 5.0.
var propTable = [PropSharedSubAvailable + 1]propInfo{
	PropPayloadFormat:        {wireByte, ctxPublish | ctxWill},
	PropMessageExpiry:        {wireU32, ctxPublish | ctxWill},
	PropContentType:          {wireStr, ctxPublish | ctxWill},
	PropResponseTopic:        {wireStr, ctxPublish | ctxWill},
	PropCorrelationData:      {wireBin, ctxPublish | ctxWill},
	PropSubscriptionID:       {wireVarint, ctxPublish | ctxSubscribe},
	PropSessionExpiry:        {wireU32, ctxConnect | ctxConnack | ctxDisconnect},
	PropAssignedClientID:     {wireStr, ctxConnack},
	PropServerKeepAlive:      {wireU16, ctxConnack},
	PropAuthMethod:           {wireStr, ctxConnect | ctxConnack | ctxAuth},
	PropAuthData:             {wireBin, ctxConnect | ctxConnack | ctxAuth},
	PropRequestProblemInfo:   {wireByte, ctxConnect},
	PropWillDelay:            {wireU32, ctxWill},
	PropRequestResponseInfo:  {wireByte, ctxConnect},
	PropResponseInfo:         {wireStr, ctxConnack},
	PropServerReference:      {wireStr, ctxConnack | ctxDisconnect},
	PropReasonString:         {wireStr, ctxConnack | ctxAck | ctxSuback | ctxUnsuback | ctxDisconnect | ctxAuth},
	PropReceiveMaximum:       {wireU16, ctxConnect | ctxConnack},
	PropTopicAliasMaximum:    {wireU16, ctxConnect | ctxConnack},
	PropTopicAlias:           {wireU16, ctxPublish},
	PropMaximumQoS:           {wireByte, ctxConnack},
	PropRetainAvailable:      {wireByte, ctxConnack},
	PropUserProperty:         {wirePair, 0xffff},
	PropMaximumPacketSize:    {wireU32, ctxConnect | ctxConnack},
	PropWildcardSubAvailable: {wireByte, ctxConnack},
	PropSubIDAvailable:       {wireByte, ctxConnack},
	PropSharedSubAvailable:   {wireByte, ctxConnack},
}

// Properties holds the MQTT 5.0 properties of one packet (or of a will). A scalar or string
// property counts only when its bit is in Present, because 0 and "" are legal values; the
// repeatable User Property and Subscription Identifier live in User and SubIDs instead and have
// no Present bit. Fields that a packet type may not carry must be left unset (Validate checks).
// Time intervals are in seconds, as on the wire. A decoded Properties aliases the packet body.
type Properties struct {
	Present PropMask

	PayloadFormat        byte   // 0 unspecified bytes, 1 UTF-8
	MessageExpiry        uint32 // in seconds
	ContentType          []byte
	ResponseTopic        []byte
	CorrelationData      []byte
	SessionExpiry        uint32 // in seconds
	AssignedClientID     []byte
	ServerKeepAlive      uint16 // in seconds
	AuthMethod           []byte
	AuthData             []byte
	RequestProblemInfo   byte
	WillDelay            uint32 // in seconds
	RequestResponseInfo  byte
	ResponseInfo         []byte
	ServerReference      []byte
	ReasonString         []byte
	ReceiveMaximum       uint16
	TopicAliasMaximum    uint16
	TopicAlias           uint16
	MaximumQoS           byte
	RetainAvailable      byte
	MaximumPacketSize    uint32 // in bytes
	WildcardSubAvailable byte
	SubIDAvailable       byte
	SharedSubAvailable   byte

	User   UserProps
	SubIDs SubIDs
}

// Has reports whether the property is present. For PropUserProperty and PropSubscriptionID it
// reports whether at least one is.
func (p *Properties) Has(id PropID) bool {
	switch id {
	case PropUserProperty:
		return p.User.n > 0
	case PropSubscriptionID:
		return p.SubIDs.n > 0
	}
	return p.Present&(1<<id) != 0
}

// Set marks the property as present; set its field too. It must not be used for the
// repeatable properties (use User.Add and SubIDs.Add).
func (p *Properties) Set(id PropID) { p.Present |= 1 << id }

// empty reports whether p has no property at all.
func (p *Properties) empty() bool { return p.Present == 0 && p.User.n == 0 && p.SubIDs.n == 0 }

// reset zeroes p unless it already is.
func (p *Properties) reset() {
	if !p.empty() {
		*p = Properties{}
	}
}

// UserProps is an ordered list of User Properties (name, value pairs) kept in wire form.
// A decoded list aliases the property bytes of the packet it came from, so decoding allocates
// nothing whatever the number of pairs; Add, meant for setup code, appends to its own buffer.
// The zero value is an empty list.
type UserProps struct {
	raw []byte // properties in wire form; entries other than user properties are skipped
	n   int
}

// Add appends a pair. Name and value must be valid UTF-8 strings of at most 65535 bytes.
func (u *UserProps) Add(name, value string) {
	u.raw = append(u.raw[:len(u.raw):len(u.raw)], byte(PropUserProperty))
	u.raw = appendStr(u.raw, []byte(name))
	u.raw = appendStr(u.raw, []byte(value))
	u.n++
}

// Len returns the number of pairs.
func (u UserProps) Len() int { return u.n }

// All yields the pairs in order. The slices alias the list's bytes.
func (u UserProps) All() iter.Seq2[[]byte, []byte] {
	return func(yield func(name, value []byte) bool) {
		for off := 0; off < len(u.raw); {
			id, start, end := nextProp(u.raw, off)
			off = end
			if id != PropUserProperty {
				continue
			}
			kl := int(u.raw[start])<<8 | int(u.raw[start+1])
			k := u.raw[start+2 : start+2+kl]
			v := u.raw[start+4+kl : end]
			if !yield(k, v) {
				return
			}
		}
	}
}

// Equal reports whether both lists hold the same pairs in the same order (go-cmp uses it).
func (u UserProps) Equal(o UserProps) bool {
	return u.n == o.n && string(u.wire()) == string(o.wire())
}

// wire returns the user properties in wire form, copying only when other properties are mixed
// in (never on the encoding path of a list built with Add).
func (u UserProps) wire() []byte { return filterProps(u.raw, PropUserProperty, u.n) }

// size is the number of bytes the list takes on the wire.
func (u *UserProps) size() int { return sizeProps(u.raw, PropUserProperty) }

// SubIDs is an ordered list of Subscription Identifiers in wire form, like UserProps. A
// PUBLISH from the server may carry several; a SUBSCRIBE at most one.
type SubIDs struct {
	raw []byte
	n   int
}

// Add appends an identifier, which must be in 1..268435455.
func (s *SubIDs) Add(id uint32) {
	s.raw = append(s.raw[:len(s.raw):len(s.raw)], byte(PropSubscriptionID))
	s.raw = appendVarint(s.raw, id)
	s.n++
}

// Len returns the number of identifiers.
func (s SubIDs) Len() int { return s.n }

// All yields the identifiers in order.
func (s SubIDs) All() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		for off := 0; off < len(s.raw); {
			id, start, end := nextProp(s.raw, off)
			off = end
			if id != PropSubscriptionID {
				continue
			}
			v, _, _ := readVarint(s.raw[:end], start)
			if !yield(uint32(v)) {
				return
			}
		}
	}
}

// Equal reports whether both lists hold the same identifiers in the same order.
func (s SubIDs) Equal(o SubIDs) bool {
	return s.n == o.n && string(s.wire()) == string(o.wire())
}

func (s SubIDs) wire() []byte { return filterProps(s.raw, PropSubscriptionID, s.n) }
func (s *SubIDs) size() int   { return sizeProps(s.raw, PropSubscriptionID) }

// nextProp returns the identifier of the property at raw[off] and the bounds of its value.
// raw must be well-formed (built by Add or checked by decodeProps).
func nextProp(raw []byte, off int) (id PropID, start, end int) {
	id = PropID(raw[off])
	start = off + 1
	switch propTable[id].wire {
	case wireByte:
		end = start + 1
	case wireU16:
		end = start + 2
	case wireU32:
		end = start + 4
	case wireVarint:
		end = start + 1
		for raw[end-1]&0x80 != 0 {
			end++
		}
	case wireStr, wireBin:
		end = start + 2 + (int(raw[start])<<8 | int(raw[start+1]))
	case wirePair:
		end = start + 2 + (int(raw[start])<<8 | int(raw[start+1]))
		end += 2 + (int(raw[end])<<8 | int(raw[end+1]))
	}
	return id, start, end
}

// filterProps returns the entries of raw with identifier want. It returns raw itself when
// every entry matches.
func filterProps(raw []byte, want PropID, n int) []byte {
	if n == 0 {
		return nil
	}
	var out []byte
	all := true
	for off := 0; off < len(raw); {
		id, _, end := nextProp(raw, off)
		if id == want {
			out = append(out, raw[off:end]...)
		} else {
			all = false
		}
		off = end
	}
	if all {
		return raw
	}
	return out
}

func sizeProps(raw []byte, want PropID) int {
	size := 0
	for off := 0; off < len(raw); {
		id, _, end := nextProp(raw, off)
		if id == want {
			size += end - off
		}
		off = end
	}
	return size
}

func appendFiltered(dst, raw []byte, want PropID) []byte {
	for off := 0; off < len(raw); {
		id, _, end := nextProp(raw, off)
		if id == want {
			dst = append(dst, raw[off:end]...)
		}
		off = end
	}
	return dst
}

// propsLen is the length of the property block without its length prefix.
func propsLen(p *Properties) int {
	n := 0
	for m := p.Present; m != 0; m &= m - 1 {
		id := PropID(bits.TrailingZeros64(uint64(m)))
		n++
		switch propTable[id].wire {
		case wireByte:
			n++
		case wireU16:
			n += 2
		case wireU32:
			n += 4
		case wireStr, wireBin:
			n += 2 + len(*p.bytesField(id))
		}
	}
	if p.SubIDs.n > 0 {
		n += p.SubIDs.size()
	}
	if p.User.n > 0 {
		n += p.User.size()
	}
	return n
}

// propsWireLen is the size of the property block with its length prefix.
func propsWireLen(pl int) int { return varintLen(pl) + pl }

// appendProps appends the property block whose length propsLen computed as pl.
// Properties are written in identifier order, then subscription identifiers and user
// properties in their own order.
func appendProps(dst []byte, p *Properties, pl int) []byte {
	dst = appendVarint(dst, uint32(pl))
	for m := p.Present; m != 0; m &= m - 1 {
		id := PropID(bits.TrailingZeros64(uint64(m)))
		dst = append(dst, byte(id))
		switch id {
		case PropPayloadFormat:
			dst = append(dst, p.PayloadFormat)
		case PropMessageExpiry:
			dst = appendU32(dst, p.MessageExpiry)
		case PropSessionExpiry:
			dst = appendU32(dst, p.SessionExpiry)
		case PropServerKeepAlive:
			dst = appendU16(dst, p.ServerKeepAlive)
		case PropRequestProblemInfo:
			dst = append(dst, p.RequestProblemInfo)
		case PropWillDelay:
			dst = appendU32(dst, p.WillDelay)
		case PropRequestResponseInfo:
			dst = append(dst, p.RequestResponseInfo)
		case PropReceiveMaximum:
			dst = appendU16(dst, p.ReceiveMaximum)
		case PropTopicAliasMaximum:
			dst = appendU16(dst, p.TopicAliasMaximum)
		case PropTopicAlias:
			dst = appendU16(dst, p.TopicAlias)
		case PropMaximumQoS:
			dst = append(dst, p.MaximumQoS)
		case PropRetainAvailable:
			dst = append(dst, p.RetainAvailable)
		case PropMaximumPacketSize:
			dst = appendU32(dst, p.MaximumPacketSize)
		case PropWildcardSubAvailable:
			dst = append(dst, p.WildcardSubAvailable)
		case PropSubIDAvailable:
			dst = append(dst, p.SubIDAvailable)
		case PropSharedSubAvailable:
			dst = append(dst, p.SharedSubAvailable)
		default:
			dst = appendStr(dst, *p.bytesField(id))
		}
	}
	if p.SubIDs.n > 0 {
		dst = appendFiltered(dst, p.SubIDs.raw, PropSubscriptionID)
	}
	if p.User.n > 0 {
		dst = appendFiltered(dst, p.User.raw, PropUserProperty)
	}
	return dst
}

// bytesField returns the field of a string or binary property.
func (p *Properties) bytesField(id PropID) *[]byte {
	switch id {
	case PropContentType:
		return &p.ContentType
	case PropResponseTopic:
		return &p.ResponseTopic
	case PropCorrelationData:
		return &p.CorrelationData
	case PropAssignedClientID:
		return &p.AssignedClientID
	case PropAuthMethod:
		return &p.AuthMethod
	case PropAuthData:
		return &p.AuthData
	case PropResponseInfo:
		return &p.ResponseInfo
	case PropServerReference:
		return &p.ServerReference
	case PropReasonString:
		return &p.ReasonString
	}
	panic("BUG: property has no byte-slice field")
}

// decodeProps reads a property block at b[off:] for the context ctx (1<<PacketType, or ctxWill)
// into p and returns the offset after it.
func decodeProps(b []byte, off int, ctx uint16, p *Properties) (int, error) {
	p.reset()
	n, off, err := readVarint(b, off)
	if err != nil {
		return off, err
	}
	if n > len(b)-off {
		return off, ErrMalformedProperties // [MQTT-2.2.2] property length beyond the packet
	}
	blk := b[: off+n : off+n]
	start := off
	for off < len(blk) {
		id := PropID(blk[off])
		off++
		// Identifiers are variable byte integers, but all defined ones fit in one byte.
		if id > PropSharedSubAvailable || propTable[id].wire == wireNone {
			return off, ErrUnknownProperty // [MQTT-2.2.2.2]
		}
		info := propTable[id]
		if info.allowed&ctx == 0 {
			return off, ErrPropertyNotAllowed // [MQTT-2.2.2.2] table 2-4
		}
		bit := PropMask(1) << id
		if p.Present&bit != 0 {
			return off, ErrDuplicateProperty // [MQTT-2.2.2.2] "Protocol Error to include ... more than once"
		}
		if off, err = decodeProp(blk, off, id, info.wire, ctx, p); err != nil {
			if errors.Is(err, ErrTruncated) {
				err = ErrMalformedProperties
			}
			return off, err
		}
		if id == PropUserProperty || id == PropSubscriptionID {
			continue
		}
		p.Present |= bit
	}
	if p.User.n > 0 {
		p.User.raw = blk[start:]
	}
	if p.SubIDs.n > 0 {
		p.SubIDs.raw = blk[start:]
	}
	if p.Present&(1<<PropAuthData) != 0 && p.Present&(1<<PropAuthMethod) == 0 {
		return off, ErrPropertyValue // [MQTT-3.1.2.11.10] data without a method
	}
	return off, nil
}

func decodeProp(b []byte, off int, id PropID, wire byte, ctx uint16, p *Properties) (int, error) {
	var err error
	switch wire {
	case wireByte:
		var v byte
		if v, off, err = readByte(b, off); err != nil {
			return off, err
		}
		if v > 1 {
			// Every byte property is 0 or 1: payload format, request problem/response
			// information, maximum QoS, retain/wildcard/subscription id/shared available.
			return off, ErrPropertyValue // e.g. [MQTT-3.3.2.3.2] [MQTT-3.2.2.3.4]
		}
		switch id {
		case PropPayloadFormat:
			p.PayloadFormat = v
		case PropRequestProblemInfo:
			p.RequestProblemInfo = v
		case PropRequestResponseInfo:
			p.RequestResponseInfo = v
		case PropMaximumQoS:
			p.MaximumQoS = v
		case PropRetainAvailable:
			p.RetainAvailable = v
		case PropWildcardSubAvailable:
			p.WildcardSubAvailable = v
		case PropSubIDAvailable:
			p.SubIDAvailable = v
		case PropSharedSubAvailable:
			p.SharedSubAvailable = v
		}
	case wireU16:
		var v uint16
		if v, off, err = readU16(b, off); err != nil {
			return off, err
		}
		switch id {
		case PropServerKeepAlive:
			p.ServerKeepAlive = v
		case PropReceiveMaximum:
			if v == 0 {
				return off, ErrPropertyValue // [MQTT-3.1.2.11.3] receive maximum 0
			}
			p.ReceiveMaximum = v
		case PropTopicAliasMaximum:
			p.TopicAliasMaximum = v
		case PropTopicAlias:
			if v == 0 {
				return off, ErrPropertyValue // [MQTT-3.3.2-8] topic alias 0
			}
			p.TopicAlias = v
		}
	case wireU32:
		var v uint32
		if v, off, err = readU32(b, off); err != nil {
			return off, err
		}
		switch id {
		case PropMessageExpiry:
			p.MessageExpiry = v
		case PropSessionExpiry:
			p.SessionExpiry = v
		case PropWillDelay:
			p.WillDelay = v
		case PropMaximumPacketSize:
			if v == 0 {
				return off, ErrPropertyValue // [MQTT-3.1.2.11.4] maximum packet size 0
			}
			p.MaximumPacketSize = v
		}
	case wireVarint: // Subscription Identifier
		var v int
		if v, off, err = readVarint(b, off); err != nil {
			return off, err
		}
		if v == 0 {
			return off, ErrPropertyValue // [MQTT-3.8.2.1.2] subscription identifier 0
		}
		if ctx != ctxPublish && p.SubIDs.n > 0 {
			return off, ErrDuplicateProperty // [MQTT-3.8.2.1.2] once in SUBSCRIBE
		}
		p.SubIDs.n++
	case wireStr:
		var s []byte
		if s, off, err = readStr(b, off); err != nil {
			return off, err
		}
		if id == PropResponseTopic && !validTopicName(s) {
			return off, ErrMalformedTopic // [MQTT-3.3.2-14]
		}
		*p.bytesField(id) = s
	case wireBin:
		var s []byte
		if s, off, err = readBin(b, off); err != nil {
			return off, err
		}
		*p.bytesField(id) = s
	case wirePair:
		if _, off, err = readStr(b, off); err != nil {
			return off, err
		}
		if _, off, err = readStr(b, off); err != nil {
			return off, err
		}
		p.User.n++
	}
	return off, nil
}
