package codec

// PacketType is the MQTT control packet type, the high nibble of the first byte.
type PacketType byte

// The control packet types (section 2.1.2).
const (
	TypeConnect     PacketType = 1
	TypeConnack     PacketType = 2
	TypePublish     PacketType = 3
	TypePuback      PacketType = 4
	TypePubrec      PacketType = 5
	TypePubrel      PacketType = 6
	TypePubcomp     PacketType = 7
	TypeSubscribe   PacketType = 8
	TypeSuback      PacketType = 9
	TypeUnsubscribe PacketType = 10
	TypeUnsuback    PacketType = 11
	TypePingreq     PacketType = 12
	TypePingresp    PacketType = 13
	TypeDisconnect  PacketType = 14
	TypeAuth        PacketType = 15 // MQTT 5.0 only
)

var typeNames = [16]string{"RESERVED", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL",
	"PUBCOMP", "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH"}

// String returns the name the specification uses, e.g. "PUBLISH".
func (t PacketType) String() string { return typeNames[t&15] }

// Version is an MQTT protocol level as carried in CONNECT.
type Version byte

// The protocol versions. V31 exists for CONNECT ("MQIsdp", level 3); every other packet of a
// 3.1 session has the 3.1.1 wire form, and the codec treats V31 like V311 for them.
const (
	V31  Version = 3
	V311 Version = 4
	V5   Version = 5
)

// String returns "3.1", "3.1.1", "5.0" or "unknown".
func (v Version) String() string {
	switch v {
	case V31:
		return "3.1"
	case V311:
		return "3.1.1"
	case V5:
		return "5.0"
	}
	return "unknown"
}

func (v Version) valid() bool { return v == V31 || v == V311 || v == V5 }

// QoS is an MQTT quality of service level, 0, 1 or 2.
type QoS byte

// MaxRemainingLength is the largest remaining length a fixed header can carry.
const MaxRemainingLength = 268435455

// Header is the decoded fixed header of a packet: the type and the four flag bits.
type Header struct {
	Type  PacketType
	Flags byte // low nibble of the first byte
}

// requiredFlags holds the fixed-header flags each packet type must carry, -1 for PUBLISH
// (whose flags are DUP, QoS and RETAIN) and -2 for the reserved type 0 (section 2.1.3).
var requiredFlags = [16]int8{-2, 0, 0, -1, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0}

// Split reports the first complete packet at the start of buf. It returns n == 0 and a nil error
// when more bytes are needed; the partial bytes must stay buffered and be passed again, with
// whatever arrived since, at the start of buf.
//
// maxSize is the largest whole packet (fixed header included) the caller accepts, as in the
// MQTT 5.0 Maximum Packet Size; 0 or less means no limit beyond the protocol's. A packet over it
// is rejected with ErrPacketTooLarge as soon as its fixed header is complete, before the body
// arrives. A fixed header with a reserved type or reserved flags is rejected as soon as its first
// byte is there. PUBLISH flags are checked by DecodePublish.
//
// The returned body aliases buf (with its capacity capped at its length) and is valid only until
// the caller discards those bytes. Split is pure and safe for concurrent use.
func Split(buf []byte, maxSize int) (h Header, body []byte, n int, err error) {
	if len(buf) == 0 {
		return Header{}, nil, 0, nil
	}
	h = Header{Type: PacketType(buf[0] >> 4), Flags: buf[0] & 0x0f}
	switch req := requiredFlags[h.Type]; {
	case req == -2:
		return Header{}, nil, 0, ErrReservedType // [MQTT-2.1.2] type 0 is reserved
	case req >= 0 && h.Flags != byte(req):
		return Header{}, nil, 0, ErrReservedFlags // [MQTT-2.1.3-1] 3.1.1: [MQTT-2.2.2-1]
	}
	rem, i := 0, 1
	for shift := 0; ; shift += 7 {
		if i >= len(buf) {
			return Header{}, nil, 0, nil
		}
		c := buf[i]
		i++
		rem |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			if c == 0 && i > 2 {
				return Header{}, nil, 0, ErrMalformedVarint // [MQTT-1.5.5-1] not the minimum number of bytes
			}
			break
		}
		if i == 5 {
			return Header{}, nil, 0, ErrMalformedVarint // [MQTT-1.5.5] at most four bytes
		}
	}
	n = i + rem
	if maxSize > 0 && n > maxSize {
		return Header{}, nil, 0, ErrPacketTooLarge // [MQTT-3.1.2-24] [MQTT-3.2.2-15]
	}
	if len(buf) < n {
		return Header{}, nil, 0, nil
	}
	return h, buf[i:n:n], n, nil
}

// appendHeader appends a fixed header: the first byte and the remaining length.
func appendHeader(dst []byte, first byte, rem int) []byte {
	return appendVarint(append(dst, first), uint32(rem))
}

// appendVarint appends v as a variable byte integer; v must be at most MaxRemainingLength.
func appendVarint(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// varintLen is the number of bytes appendVarint writes for v.
func varintLen(v int) int {
	switch {
	case v < 1<<7:
		return 1
	case v < 1<<14:
		return 2
	case v < 1<<21:
		return 3
	}
	return 4
}

// headerLen is the size of a fixed header announcing rem bytes.
func headerLen(rem int) int { return 1 + varintLen(rem) }
