package codec

// ReasonCode is an MQTT 5.0 reason code, or an MQTT 3.1.1 CONNACK return code or SUBACK
// return code (which share the byte).
type ReasonCode byte

// The MQTT 5.0 reason codes (section 2.4). Several share a value and differ only in the packet
// they appear in.
const (
	ReasonSuccess                     ReasonCode = 0x00
	ReasonNormalDisconnection         ReasonCode = 0x00
	ReasonGrantedQoS0                 ReasonCode = 0x00
	ReasonGrantedQoS1                 ReasonCode = 0x01
	ReasonGrantedQoS2                 ReasonCode = 0x02
	ReasonDisconnectWithWill          ReasonCode = 0x04
	ReasonNoMatchingSubscribers       ReasonCode = 0x10
	ReasonNoSubscriptionExisted       ReasonCode = 0x11
	ReasonContinueAuthentication      ReasonCode = 0x18
	ReasonReAuthenticate              ReasonCode = 0x19
	ReasonUnspecifiedError            ReasonCode = 0x80
	ReasonMalformedPacket             ReasonCode = 0x81
	ReasonProtocolError               ReasonCode = 0x82
	ReasonImplementationSpecificError ReasonCode = 0x83
	ReasonUnsupportedProtocolVersion  ReasonCode = 0x84
	ReasonClientIDNotValid            ReasonCode = 0x85
	ReasonBadUsernameOrPassword       ReasonCode = 0x86
	ReasonNotAuthorized               ReasonCode = 0x87
	ReasonServerUnavailable           ReasonCode = 0x88
	ReasonServerBusy                  ReasonCode = 0x89
	ReasonBanned                      ReasonCode = 0x8A
	ReasonServerShuttingDown          ReasonCode = 0x8B
	ReasonBadAuthenticationMethod     ReasonCode = 0x8C
	ReasonKeepAliveTimeout            ReasonCode = 0x8D
	ReasonSessionTakenOver            ReasonCode = 0x8E
	ReasonTopicFilterInvalid          ReasonCode = 0x8F
	ReasonTopicNameInvalid            ReasonCode = 0x90
	ReasonPacketIDInUse               ReasonCode = 0x91
	ReasonPacketIDNotFound            ReasonCode = 0x92
	ReasonReceiveMaximumExceeded      ReasonCode = 0x93
	ReasonTopicAliasInvalid           ReasonCode = 0x94
	ReasonPacketTooLarge              ReasonCode = 0x95
	ReasonMessageRateTooHigh          ReasonCode = 0x96
	ReasonQuotaExceeded               ReasonCode = 0x97
	ReasonAdministrativeAction        ReasonCode = 0x98
	ReasonPayloadFormatInvalid        ReasonCode = 0x99
	ReasonRetainNotSupported          ReasonCode = 0x9A
	ReasonQoSNotSupported             ReasonCode = 0x9B
	ReasonUseAnotherServer            ReasonCode = 0x9C
	ReasonServerMoved                 ReasonCode = 0x9D
	ReasonSharedSubsNotSupported      ReasonCode = 0x9E
	ReasonConnectionRateExceeded      ReasonCode = 0x9F
	ReasonMaximumConnectTime          ReasonCode = 0xA0
	ReasonSubIDsNotSupported          ReasonCode = 0xA1
	ReasonWildcardSubsNotSupported    ReasonCode = 0xA2
)

// The MQTT 3.1.1 CONNACK return codes (section 3.2.2.3). A 3.1.1 SUBACK uses 0x00-0x02 for the
// granted QoS and ReasonUnspecifiedError (0x80) for a failure.
const (
	Reason311Accepted              ReasonCode = 0x00
	Reason311BadProtocolVersion    ReasonCode = 0x01
	Reason311IdentifierRejected    ReasonCode = 0x02
	Reason311ServerUnavailable     ReasonCode = 0x03
	Reason311BadUsernameOrPassword ReasonCode = 0x04
	Reason311NotAuthorized         ReasonCode = 0x05
)

// IsError reports whether c signals a failure: MQTT 5.0 codes 0x80 and above, which is also
// the 3.1.1 SUBACK failure code. (A 3.1.1 CONNACK refusal is any non-zero code.)
func (c ReasonCode) IsError() bool { return c >= 0x80 }

// codeSet is a set of reason codes, one bit per value.
type codeSet [4]uint64

func (s *codeSet) has(c ReasonCode) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func makeCodeSet(codes ...ReasonCode) codeSet {
	var s codeSet
	for _, c := range codes {
		s[c>>6] |= 1 << (c & 63)
	}
	return s
}

// The reason codes each MQTT 5.0 packet may carry (section 2.4, and each packet's reason code
// table in chapter 3); the 3.1.1 sets follow sections 3.2.2.3 and 3.9.3.
var (
	codesConnack5 = makeCodeSet(0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
		0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F)
	codesConnack311 = makeCodeSet(0, 1, 2, 3, 4, 5)
	codesPubAck     = makeCodeSet(0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99) // PUBACK, PUBREC
	codesPubRel     = makeCodeSet(0x00, 0x92)                                           // PUBREL, PUBCOMP
	codesSuback5    = makeCodeSet(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2)
	codesSuback311  = makeCodeSet(0x00, 0x01, 0x02, 0x80)
	codesUnsuback   = makeCodeSet(0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91)
	codesDisconnect = makeCodeSet(0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E,
		0x8F, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F,
		0xA0, 0xA1, 0xA2)
	codesAuth = makeCodeSet(0x00, 0x18, 0x19)
)
