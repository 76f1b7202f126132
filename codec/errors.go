package codec

// Error is a codec failure. Code is the MQTT 5.0 reason code the receiver of the offending
// packet should report (in a DISCONNECT, or a CONNACK while connecting). All codec errors are
// the package-level sentinels below; compare them with errors.Is.
type Error struct {
	Code ReasonCode
	msg  string
}

// Error returns the message, prefixed with "codec: ".
func (e *Error) Error() string { return e.msg }

// The sentinels. Each names the field or rule that broke.
var (
	// ErrMalformedVarint: a variable byte integer with a fifth byte, a non-minimal encoding, or
	// one cut short by the end of its packet.
	ErrMalformedVarint = &Error{ReasonMalformedPacket, "codec: malformed variable byte integer"}
	// ErrPacketTooLarge: the fixed header announces more bytes than the caller's maximum.
	ErrPacketTooLarge = &Error{ReasonPacketTooLarge, "codec: packet exceeds the maximum packet size"}
	// ErrReservedType: packet type 0, or AUTH outside MQTT 5.0.
	ErrReservedType = &Error{ReasonMalformedPacket, "codec: reserved packet type"}
	// ErrReservedFlags: fixed header flags other than those the packet type requires.
	ErrReservedFlags = &Error{ReasonMalformedPacket, "codec: reserved fixed header flags"}
	// ErrInvalidQoS: a QoS of 3 (both bits set) in a PUBLISH, will or subscription.
	ErrInvalidQoS = &Error{ReasonMalformedPacket, "codec: invalid qos"}
	// ErrDupQoS0: a QoS 0 PUBLISH with the DUP flag set.
	ErrDupQoS0 = &Error{ReasonProtocolError, "codec: dup flag set on a qos 0 publish"}
	// ErrTruncated: the remaining length ends before a field does.
	ErrTruncated = &Error{ReasonMalformedPacket, "codec: remaining length shorter than the fields"}
	// ErrTrailingBytes: bytes left over after the last field of a packet.
	ErrTrailingBytes = &Error{ReasonMalformedPacket, "codec: remaining length longer than the fields"}
	// ErrMalformedString: a UTF-8 string field that is not well-formed UTF-8 or holds U+0000.
	ErrMalformedString = &Error{ReasonMalformedPacket, "codec: malformed utf-8 string"}
	// ErrMalformedTopic: an empty topic name, or one with a wildcard character.
	ErrMalformedTopic = &Error{ReasonTopicNameInvalid, "codec: malformed topic name"}
	// ErrMalformedTopicFilter: an empty topic filter, or a misplaced wildcard.
	ErrMalformedTopicFilter = &Error{ReasonTopicFilterInvalid, "codec: malformed topic filter"}
	// ErrZeroPacketID: packet identifier 0 in a packet that requires one.
	ErrZeroPacketID = &Error{ReasonProtocolError, "codec: packet identifier is zero"}
	// ErrProtocolName: a CONNECT protocol name other than "MQTT" (or "MQIsdp" at level 3).
	ErrProtocolName = &Error{ReasonUnsupportedProtocolVersion, "codec: unknown protocol name"}
	// ErrProtocolVersion: a CONNECT protocol level other than 3, 4 or 5.
	ErrProtocolVersion = &Error{ReasonUnsupportedProtocolVersion, "codec: unsupported protocol version"}
	// ErrConnectFlags: reserved or contradictory CONNECT flags.
	ErrConnectFlags = &Error{ReasonMalformedPacket, "codec: malformed connect flags"}
	// ErrClientID: a 3.1.1 CONNECT with an empty client identifier and no clean session.
	ErrClientID = &Error{ReasonClientIDNotValid, "codec: empty client identifier without clean session"}
	// ErrConnackFlags: reserved CONNACK flags, or session present with a refusal.
	ErrConnackFlags = &Error{ReasonMalformedPacket, "codec: malformed connack flags"}
	// ErrUnknownProperty: a property identifier the specification does not define.
	ErrUnknownProperty = &Error{ReasonMalformedPacket, "codec: unknown property identifier"}
	// ErrPropertyNotAllowed: a property the packet type may not carry.
	ErrPropertyNotAllowed = &Error{ReasonProtocolError, "codec: property not allowed in this packet"}
	// ErrDuplicateProperty: a property that may appear once appearing again.
	ErrDuplicateProperty = &Error{ReasonProtocolError, "codec: property included more than once"}
	// ErrPropertyValue: a property value out of its range (a zero receive maximum, a payload
	// format indicator of 2, authentication data without a method ...).
	ErrPropertyValue = &Error{ReasonProtocolError, "codec: invalid property value"}
	// ErrMalformedProperties: a property length that disagrees with the properties it covers.
	ErrMalformedProperties = &Error{ReasonMalformedPacket, "codec: property length disagrees with the properties"}
	// ErrReasonCode: a reason code the packet type may not carry.
	ErrReasonCode = &Error{ReasonProtocolError, "codec: reason code not valid for this packet"}
	// ErrNoTopicFilters: a SUBSCRIBE or UNSUBSCRIBE without any topic filter.
	ErrNoTopicFilters = &Error{ReasonProtocolError, "codec: no topic filters"}
	// ErrSubscriptionOptions: reserved bits or retain handling 3 in subscription options, or No
	// Local on a shared subscription.
	ErrSubscriptionOptions = &Error{ReasonProtocolError, "codec: malformed subscription options"}
	// ErrFieldTooLong: (Validate only) a string or binary field longer than 65535 bytes, or a
	// packet longer than 268435455 bytes.
	ErrFieldTooLong = &Error{ReasonPacketTooLarge, "codec: field too long for the wire"}
	// ErrVersion: (Validate only) a protocol version other than V31, V311 and V5, or AUTH
	// outside V5.
	ErrVersion = &Error{ReasonUnsupportedProtocolVersion, "codec: unknown protocol version"}
)
