package codectest

import (
	"github.com/mqblast/mqblast/codec"
)

// ID names a vector for good: IDs are never reused or renumbered, so a failure report or a
// fuzz seed can point at one.
type ID int

// Vector is one golden wire form.
//
// A valid vector (Err == nil) decodes to Packet, and Packet encodes to Raw unless DecodeOnly is
// set (for a legal but not the shortest form, which the encoders never write). A malformed
// vector fails Split or the decoder with Err; its comment cites the clause it violates.
type Vector struct {
	ID         ID
	Name       string
	Version    codec.Version
	Raw        []byte
	Packet     any   // *codec.X (Ping for PINGREQ and PINGRESP); nil for malformed vectors
	Err        error // expected sentinel, compared with errors.Is
	DecodeOnly bool
	MaxSize    int // passed to codec.Split; 0 for no limit
}

// Type is the packet type in the first byte of Raw.
func (v *Vector) Type() codec.PacketType { return codec.PacketType(v.Raw[0] >> 4) }

// The vector IDs. Append new ones at the end of their group.
const (
	IDConnect311Minimal ID = 100 + iota
	IDConnect311Full
	IDConnect31
	IDConnect5Minimal
	IDConnect5Full
	IDConnect5PasswordOnly
	IDConnack311Accepted
	IDConnack311Refused
	IDConnack5Full
	IDConnack5Refused
	IDPublish311QoS0
	IDPublish311QoS1
	IDPublish311QoS2DupRetain
	IDPublish5QoS0
	IDPublish5TwoProps
	IDPublish5AliasOnly
	IDPublish5AllProps
	IDPuback311
	IDPubrec311
	IDPubrel311
	IDPubcomp311
	IDPuback5Short
	IDPuback5ReasonOnly
	IDPuback5Props
	IDPuback5ExplicitSuccess
	IDPubrec5Error
	IDPubrel5NotFound
	IDPubcomp5Short
	IDSubscribe311
	IDSuback311
	IDSubscribe5
	IDSuback5
	IDUnsubscribe311
	IDUnsuback311
	IDUnsubscribe5
	IDUnsuback5
	IDPingreq311
	IDPingresp311
	IDPingreq5
	IDPingresp5
	IDDisconnect311
	IDDisconnect5Short
	IDDisconnect5ReasonOnly
	IDDisconnect5Props
	IDAuth5Short
	IDAuth5Continue
)

// Remaining-length boundary vectors: PUBLISH packets whose remaining length is exactly the
// value in the name (0 is PINGREQ above).
const (
	IDRemaining127 ID = 300 + iota
	IDRemaining128
	IDRemaining16383
	IDRemaining16384
	IDRemaining2097151
	IDRemaining2097152
)

// Malformed vector IDs.
const (
	IDBadReservedType ID = 500 + iota
	IDBadPubackFlags
	IDBadSubscribeFlags
	IDBadPubrelFlags
	IDBadVarintFifthByte
	IDBadVarintNonMinimal
	IDBadTooLarge
	IDBadTooLargeHuge
	IDBadPublishQoS3
	IDBadPublishDupQoS0
	IDBadPublishWildcardPlus
	IDBadPublishWildcardHash
	IDBadPublishZeroID311
	IDBadPublishZeroID5
	IDBadPublishUTF8
	IDBadPublishNUL
	IDBadPublishSurrogate5
	IDBadPublishTopicTooLong
	IDBadPublishEmptyTopic311
	IDBadPublishEmptyTopic5
	IDBadPublishPropNotAllowed
	IDBadPublishPropTwice
	IDBadPublishPropUnknown
	IDBadPublishAliasZero
	IDBadPublishPropLenTooLong
	IDBadPublishPropValueCut
	IDBadPublishPayloadFormat
	IDBadPublishUserPropUTF8
	IDBadPublishResponseTopicWildcard
	IDBadPubackZeroID
	IDBadPuback311Long
	IDBadPubackShort
	IDBadPuback5Reason
	IDBadPuback5ReasonStringTwice
	IDBadConnectProtocolName
	IDBadConnectLevel
	IDBadConnectReservedFlag
	IDBadConnectWillQoS3
	IDBadConnectWillRetainNoWill
	IDBadConnectPasswordNoUser311
	IDBadConnectEmptyIDNoClean311
	IDBadConnectTrailing
	IDBadConnect5ReceiveMaxZero
	IDBadConnect5WillPropNotAllowed
	IDBadConnect5AuthDataNoMethod
	IDBadConnack311Flags
	IDBadConnack311SessionRefused
	IDBadConnack311Code
	IDBadConnack5MaxQoS2
	IDBadConnack5TopicAlias
	IDBadSubscribeNoFilters
	IDBadSubscribe311Options
	IDBadSubscribe5Reserved
	IDBadSubscribe5RetainHandling3
	IDBadSubscribeQoS3
	IDBadSubscribeHashInside
	IDBadSubscribePlusInside
	IDBadSubscribeEmptyFilter
	IDBadSubscribe5NoLocalShared
	IDBadSubscribe5TwoSubIDs
	IDBadSubscribe5SubIDZero
	IDBadSuback311Code
	IDBadUnsubscribeNoFilters
	IDBadUnsuback311Long
	IDBadPingreqBody
	IDBadDisconnect311Body
	IDBadDisconnect5Reason
	IDBadAuth311
	IDBadAuth5PropNotAllowed
	IDBadVarintInProps
)

// Vectors is the table of golden vectors. Tests must not modify it.
var Vectors = append(append(valid, boundaries()...), malformed...)

var valid = []Vector{
	{
		ID: IDConnect311Minimal, Name: "connect/v311/minimal", Version: codec.V311,
		Raw: []byte{
			0x10, 0x0e, // CONNECT, remaining length 14
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x02,       // flags: clean session
			0x00, 0x3c, // keep alive 60 s
			0x00, 0x02, 'c', '1', // client id "c1"
		},
		Packet: &codec.Connect{ClientID: B("c1"), KeepAlive: 60, CleanStart: true},
	},
	{
		ID: IDConnect311Full, Name: "connect/v311/will-user-password", Version: codec.V311,
		Raw: []byte{
			0x10, 0x1e, // CONNECT, remaining length 30
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0xec,       // flags: username, password, will retain, will qos 1, will
			0x00, 0x00, // keep alive off
			0x00, 0x01, 'c', // client id "c"
			0x00, 0x03, 'w', '/', 't', // will topic "w/t"
			0x00, 0x03, 'b', 'y', 'e', // will payload "bye"
			0x00, 0x01, 'u', // username "u"
			0x00, 0x02, 'p', 'w', // password "pw"
		},
		Packet: &codec.Connect{ClientID: B("c"), HasWill: true, WillQoS: 1, WillRetain: true,
			WillTopic: B("w/t"), WillPayload: B("bye"), HasUsername: true, Username: B("u"),
			HasPassword: true, Password: B("pw")},
	},
	{
		ID: IDConnect31, Name: "connect/v31/mqisdp", Version: codec.V31,
		Raw: []byte{
			0x10, 0x11, // CONNECT, remaining length 17
			0x00, 0x06, 'M', 'Q', 'I', 's', 'd', 'p', // protocol name "MQIsdp"
			0x03,       // protocol level 3
			0x02,       // flags: clean session
			0x00, 0x0a, // keep alive 10 s
			0x00, 0x03, 'c', 'i', 'd', // client id "cid"
		},
		Packet: &codec.Connect{ClientID: B("cid"), KeepAlive: 10, CleanStart: true},
	},
	{
		ID: IDConnect5Minimal, Name: "connect/v5/minimal", Version: codec.V5,
		Raw: []byte{
			0x10, 0x0d, // CONNECT, remaining length 13
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0x02,       // flags: clean start
			0x00, 0x1e, // keep alive 30 s
			0x00,       // property length 0
			0x00, 0x00, // client id "" (the server assigns one)
		},
		Packet: &codec.Connect{KeepAlive: 30, CleanStart: true},
	},
	{
		ID: IDConnect5Full, Name: "connect/v5/props-will-user-password", Version: codec.V5,
		Raw: []byte{
			0x10, 0x3d, // CONNECT, remaining length 61
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0xf6,       // flags: username, password, will retain, will qos 2, will, clean start
			0x01, 0x2c, // keep alive 300 s
			0x19,                         // property length 25
			0x11, 0x00, 0x00, 0x0e, 0x10, // session expiry interval 3600 s
			0x17, 0x01, // request problem information 1
			0x21, 0x00, 0x0a, // receive maximum 10
			0x22, 0x00, 0x05, // topic alias maximum 5
			0x27, 0x00, 0x01, 0x00, 0x00, // maximum packet size 65536
			0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v', // user property k=v
			0x00, 0x02, 'i', 'd', // client id "id"
			0x07,       // will property length 7
			0x01, 0x01, // payload format indicator 1 (UTF-8)
			0x18, 0x00, 0x00, 0x00, 0x05, // will delay interval 5 s
			0x00, 0x01, 'w', // will topic "w"
			0x00, 0x00, // will payload ""
			0x00, 0x04, 'u', 's', 'e', 'r', // username "user"
			0x00, 0x00, // password ""
		},
		Packet: &codec.Connect{ClientID: B("id"), KeepAlive: 300, CleanStart: true,
			HasWill: true, WillQoS: 2, WillRetain: true, WillTopic: B("w"), WillPayload: B(""),
			WillProps: codec.Properties{Present: codec.Mask(codec.PropPayloadFormat, codec.PropWillDelay),
				PayloadFormat: 1, WillDelay: 5},
			HasUsername: true, Username: B("user"), HasPassword: true, Password: B(""),
			Props: codec.Properties{
				Present: codec.Mask(codec.PropSessionExpiry, codec.PropRequestProblemInfo,
					codec.PropReceiveMaximum, codec.PropTopicAliasMaximum, codec.PropMaximumPacketSize),
				SessionExpiry: 3600, RequestProblemInfo: 1, ReceiveMaximum: 10, TopicAliasMaximum: 5,
				MaximumPacketSize: 65536, User: Users("k", "v"),
			}},
	},
	{
		ID: IDConnect5PasswordOnly, Name: "connect/v5/password-without-username", Version: codec.V5,
		Raw: []byte{
			0x10, 0x12, // CONNECT, remaining length 18
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0x40,       // flags: password (allowed without username in 5.0)
			0x00, 0x00, // keep alive off
			0x00,            // property length 0
			0x00, 0x01, 'c', // client id "c"
			0x00, 0x02, 0xff, 0x00, // password: binary, any bytes
		},
		Packet: &codec.Connect{ClientID: B("c"), HasPassword: true, Password: []byte{0xff, 0x00}},
	},
	{
		ID: IDConnack311Accepted, Name: "connack/v311/accepted-session-present", Version: codec.V311,
		Raw: []byte{
			0x20, 0x02, // CONNACK, remaining length 2
			0x01, // session present
			0x00, // return code 0 accepted
		},
		Packet: &codec.Connack{SessionPresent: true},
	},
	{
		ID: IDConnack311Refused, Name: "connack/v311/not-authorized", Version: codec.V311,
		Raw: []byte{
			0x20, 0x02, // CONNACK, remaining length 2
			0x00, // no session
			0x05, // return code 5 not authorized
		},
		Packet: &codec.Connack{Reason: codec.Reason311NotAuthorized},
	},
	{
		ID: IDConnack5Full, Name: "connack/v5/all-server-props", Version: codec.V5,
		Raw: []byte{
			0x20, 0x33, // CONNACK, remaining length 51
			0x00,                         // no session
			0x00,                         // reason success
			0x30,                         // property length 48
			0x11, 0x00, 0x00, 0x00, 0x3c, // session expiry interval 60 s
			0x12, 0x00, 0x02, 'a', 'b', // assigned client identifier "ab"
			0x13, 0x00, 0x14, // server keep alive 20 s
			0x21, 0x00, 0x64, // receive maximum 100
			0x22, 0x00, 0x0a, // topic alias maximum 10
			0x24, 0x01, // maximum qos 1
			0x25, 0x00, // retain available 0
			0x27, 0x00, 0x00, 0x10, 0x00, // maximum packet size 4096
			0x28, 0x01, // wildcard subscription available
			0x29, 0x00, // subscription identifiers not available
			0x2a, 0x01, // shared subscription available
			0x26, 0x00, 0x01, 'x', 0x00, 0x01, 'y', // user property x=y
			0x26, 0x00, 0x01, 'x', 0x00, 0x01, 'z', // user property x=z (repeats keep order)
		},
		Packet: &codec.Connack{Props: codec.Properties{
			Present: codec.Mask(codec.PropSessionExpiry, codec.PropAssignedClientID,
				codec.PropServerKeepAlive, codec.PropReceiveMaximum, codec.PropTopicAliasMaximum,
				codec.PropMaximumQoS, codec.PropRetainAvailable, codec.PropMaximumPacketSize,
				codec.PropWildcardSubAvailable, codec.PropSubIDAvailable, codec.PropSharedSubAvailable),
			SessionExpiry: 60, AssignedClientID: B("ab"), ServerKeepAlive: 20, ReceiveMaximum: 100,
			TopicAliasMaximum: 10, MaximumQoS: 1, RetainAvailable: 0, MaximumPacketSize: 4096,
			WildcardSubAvailable: 1, SubIDAvailable: 0, SharedSubAvailable: 1,
			User: Users("x", "y", "x", "z"),
		}},
	},
	{
		ID: IDConnack5Refused, Name: "connack/v5/not-authorized-reason-string", Version: codec.V5,
		Raw: []byte{
			0x20, 0x09, // CONNACK, remaining length 9
			0x00,                            // no session
			0x87,                            // reason not authorized
			0x06,                            // property length 6
			0x1f, 0x00, 0x03, 'n', 'o', '!', // reason string "no!"
		},
		Packet: &codec.Connack{Reason: codec.ReasonNotAuthorized, Props: codec.Properties{
			Present: codec.Mask(codec.PropReasonString), ReasonString: B("no!")}},
	},
	{
		ID: IDPublish311QoS0, Name: "publish/v311/qos0", Version: codec.V311,
		Raw: []byte{
			0x30, 0x07, // PUBLISH qos=0, remaining length 7
			0x00, 0x03, 'a', '/', 'b', // topic "a/b"
			'h', 'i', // payload
		},
		Packet: &codec.Publish{Topic: B("a/b"), Payload: B("hi")},
	},
	{
		ID: IDPublish311QoS1, Name: "publish/v311/qos1", Version: codec.V311,
		Raw: []byte{
			0x32, 0x0b, // PUBLISH qos=1, remaining length 11
			0x00, 0x03, 'a', '/', 'b', // topic "a/b"
			0x00, 0x2a, // packet id 42
			'p', 'i', 'n', 'g', // payload
		},
		Packet: &codec.Publish{QoS: 1, Topic: B("a/b"), ID: 42, Payload: B("ping")},
	},
	{
		ID: IDPublish311QoS2DupRetain, Name: "publish/v311/qos2-dup-retain-empty", Version: codec.V311,
		Raw: []byte{
			0x3d, 0x05, // PUBLISH dup, qos=2, retain, remaining length 5
			0x00, 0x01, 't', // topic "t"
			0xff, 0xff, // packet id 65535
		},
		Packet: &codec.Publish{Dup: true, QoS: 2, Retain: true, Topic: B("t"), ID: 65535},
	},
	{
		ID: IDPublish5QoS0, Name: "publish/v5/qos0", Version: codec.V5,
		Raw: []byte{
			0x30, 0x08, // PUBLISH qos=0, remaining length 8
			0x00, 0x03, 'a', '/', 'b', // topic "a/b"
			0x00,     // property length 0
			'h', 'i', // payload
		},
		Packet: &codec.Publish{Topic: B("a/b"), Payload: B("hi")},
	},
	{
		ID: IDPublish5TwoProps, Name: "publish/v5/qos1-two-props", Version: codec.V5,
		Raw: []byte{
			0x32, 0x14, // PUBLISH qos=1, remaining length 20
			0x00, 0x03, 'a', '/', 'b', // topic "a/b"
			0x00, 0x07, // packet id 7
			0x08,                         // property length 8
			0x02, 0x00, 0x00, 0x00, 0x78, // message expiry interval 120 s
			0x23, 0x00, 0x01, // topic alias 1
			'p', 'i', 'n', 'g', // payload
		},
		Packet: &codec.Publish{QoS: 1, Topic: B("a/b"), ID: 7, Payload: B("ping"),
			Props: codec.Properties{Present: codec.Mask(codec.PropMessageExpiry, codec.PropTopicAlias),
				MessageExpiry: 120, TopicAlias: 1}},
	},
	{
		ID: IDPublish5AliasOnly, Name: "publish/v5/empty-topic-with-alias", Version: codec.V5,
		Raw: []byte{
			0x30, 0x07, // PUBLISH qos=0, remaining length 7
			0x00, 0x00, // topic "" (the alias stands for it)
			0x03,             // property length 3
			0x23, 0x00, 0x01, // topic alias 1
			'x', // payload
		},
		Packet: &codec.Publish{Topic: B(""), Payload: B("x"),
			Props: codec.Properties{Present: codec.Mask(codec.PropTopicAlias), TopicAlias: 1}},
	},
	{
		ID: IDPublish5AllProps, Name: "publish/v5/all-publish-props", Version: codec.V5,
		Raw: []byte{
			0x31, 0x2f, // PUBLISH qos=0 retain, remaining length 47
			0x00, 0x01, 't', // topic "t"
			0x2b,       // property length 43
			0x01, 0x00, // payload format indicator 0
			0x02, 0x00, 0x00, 0x00, 0x00, // message expiry interval 0 s (present, zero)
			0x03, 0x00, 0x04, 't', 'e', 'x', 't', // content type "text"
			0x08, 0x00, 0x03, 'r', '/', 'x', // response topic "r/x"
			0x09, 0x00, 0x02, 0x01, 0x02, // correlation data 01 02
			0x0b, 0x05, // subscription identifier 5
			0x0b, 0x80, 0x01, // subscription identifier 128
			0x26, 0x00, 0x01, 'a', 0x00, 0x01, '1', // user property a=1
			0x26, 0x00, 0x01, 'b', 0x00, 0x00, // user property b=""
		},
		Packet: &codec.Publish{Retain: true, Topic: B("t"), Props: codec.Properties{
			Present: codec.Mask(codec.PropPayloadFormat, codec.PropMessageExpiry, codec.PropContentType,
				codec.PropResponseTopic, codec.PropCorrelationData),
			ContentType: B("text"), ResponseTopic: B("r/x"), CorrelationData: []byte{1, 2},
			SubIDs: SubIDs(5, 128), User: Users("a", "1", "b", ""),
		}},
	},
	{
		ID: IDPuback311, Name: "puback/v311", Version: codec.V311,
		Raw: []byte{
			0x40, 0x02, // PUBACK, remaining length 2
			0x00, 0x01, // packet id 1
		},
		Packet: &codec.Ack{ID: 1},
	},
	{
		ID: IDPubrec311, Name: "pubrec/v311", Version: codec.V311,
		Raw: []byte{
			0x50, 0x02, // PUBREC, remaining length 2
			0x01, 0x00, // packet id 256
		},
		Packet: &codec.Ack{ID: 256},
	},
	{
		ID: IDPubrel311, Name: "pubrel/v311", Version: codec.V311,
		Raw: []byte{
			0x62, 0x02, // PUBREL (flags 0010), remaining length 2
			0x00, 0x02, // packet id 2
		},
		Packet: &codec.Ack{ID: 2},
	},
	{
		ID: IDPubcomp311, Name: "pubcomp/v311", Version: codec.V311,
		Raw: []byte{
			0x70, 0x02, // PUBCOMP, remaining length 2
			0x00, 0x03, // packet id 3
		},
		Packet: &codec.Ack{ID: 3},
	},
	{
		ID: IDPuback5Short, Name: "puback/v5/success-short-form", Version: codec.V5,
		Raw: []byte{
			0x40, 0x02, // PUBACK, remaining length 2 (reason and properties omitted)
			0x00, 0x09, // packet id 9
		},
		Packet: &codec.Ack{ID: 9},
	},
	{
		ID: IDPuback5ReasonOnly, Name: "puback/v5/no-matching-subscribers", Version: codec.V5,
		Raw: []byte{
			0x40, 0x03, // PUBACK, remaining length 3 (property length omitted)
			0x00, 0x09, // packet id 9
			0x10, // reason no matching subscribers
		},
		Packet: &codec.Ack{ID: 9, Reason: codec.ReasonNoMatchingSubscribers},
	},
	{
		ID: IDPuback5Props, Name: "puback/v5/quota-exceeded-props", Version: codec.V5,
		Raw: []byte{
			0x40, 0x0f, // PUBACK, remaining length 15
			0x00, 0x09, // packet id 9
			0x97,                  // reason quota exceeded
			0x0b,                  // property length 11
			0x1f, 0x00, 0x01, 'q', // reason string "q"
			0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v', // user property k=v
		},
		Packet: &codec.Ack{ID: 9, Reason: codec.ReasonQuotaExceeded, Props: codec.Properties{
			Present: codec.Mask(codec.PropReasonString), ReasonString: B("q"), User: Users("k", "v")}},
	},
	{
		ID: IDPuback5ExplicitSuccess, Name: "puback/v5/explicit-success-empty-props", Version: codec.V5,
		DecodeOnly: true, // the encoder writes the 2-byte short form
		Raw: []byte{
			0x40, 0x04, // PUBACK, remaining length 4
			0x00, 0x09, // packet id 9
			0x00, // reason success
			0x00, // property length 0
		},
		Packet: &codec.Ack{ID: 9},
	},
	{
		ID: IDPubrec5Error, Name: "pubrec/v5/unspecified-error", Version: codec.V5,
		Raw: []byte{
			0x50, 0x03, // PUBREC, remaining length 3
			0x00, 0x0a, // packet id 10
			0x80, // reason unspecified error
		},
		Packet: &codec.Ack{ID: 10, Reason: codec.ReasonUnspecifiedError},
	},
	{
		ID: IDPubrel5NotFound, Name: "pubrel/v5/packet-id-not-found", Version: codec.V5,
		Raw: []byte{
			0x62, 0x03, // PUBREL (flags 0010), remaining length 3
			0x00, 0x0b, // packet id 11
			0x92, // reason packet identifier not found
		},
		Packet: &codec.Ack{ID: 11, Reason: codec.ReasonPacketIDNotFound},
	},
	{
		ID: IDPubcomp5Short, Name: "pubcomp/v5/success-short-form", Version: codec.V5,
		Raw: []byte{
			0x70, 0x02, // PUBCOMP, remaining length 2
			0x00, 0x0c, // packet id 12
		},
		Packet: &codec.Ack{ID: 12},
	},
	{
		ID: IDSubscribe311, Name: "subscribe/v311/two-filters", Version: codec.V311,
		Raw: []byte{
			0x82, 0x0e, // SUBSCRIBE (flags 0010), remaining length 14
			0x00, 0x05, // packet id 5
			0x00, 0x03, 'a', '/', '#', // filter "a/#"
			0x00,                      // options: qos 0
			0x00, 0x03, '+', '/', 'b', // filter "+/b"
			0x02, // options: qos 2
		},
		Packet: &codec.Subscribe{ID: 5, Filters: []codec.Subscription{
			{Filter: B("a/#")}, {Filter: B("+/b"), QoS: 2}}},
	},
	{
		ID: IDSuback311, Name: "suback/v311/granted-and-failure", Version: codec.V311,
		Raw: []byte{
			0x90, 0x04, // SUBACK, remaining length 4
			0x00, 0x05, // packet id 5
			0x01, // granted qos 1
			0x80, // failure
		},
		Packet: &codec.Suback{ID: 5, Reasons: []codec.ReasonCode{codec.ReasonGrantedQoS1, codec.ReasonUnspecifiedError}},
	},
	{
		ID: IDSubscribe5, Name: "subscribe/v5/options-subid-user", Version: codec.V5,
		Raw: []byte{
			0x82, 0x1a, // SUBSCRIBE (flags 0010), remaining length 26
			0x00, 0x06, // packet id 6
			0x09,             // property length 9
			0x0b, 0x81, 0x01, // subscription identifier 129
			0x26, 0x00, 0x01, 'u', 0x00, 0x00, // user property u=""
			0x00, 0x01, 'a', // filter "a"
			0x2d,                                          // options: retain handling 2, retain as published, no local, qos 1
			0x00, 0x07, '$', 's', 'h', 'a', 'r', 'e', '/', // filter "$share/" (no group, not shared)
			0x10, // options: retain handling 1, qos 0
		},
		Packet: &codec.Subscribe{ID: 6,
			Props: codec.Properties{SubIDs: SubIDs(129), User: Users("u", "")},
			Filters: []codec.Subscription{
				{Filter: B("a"), QoS: 1, NoLocal: true, RetainAsPublished: true, RetainHandling: 2},
				{Filter: B("$share/"), RetainHandling: 1}}},
	},
	{
		ID: IDSuback5, Name: "suback/v5/reasons-reason-string", Version: codec.V5,
		Raw: []byte{
			0x90, 0x0a, // SUBACK, remaining length 10
			0x00, 0x06, // packet id 6
			0x04,                  // property length 4
			0x1f, 0x00, 0x01, 'r', // reason string "r"
			0x02, // granted qos 2
			0xa2, // wildcard subscriptions not supported
			0x00, // granted qos 0
		},
		Packet: &codec.Suback{ID: 6, Props: codec.Properties{Present: codec.Mask(codec.PropReasonString), ReasonString: B("r")},
			Reasons: []codec.ReasonCode{codec.ReasonGrantedQoS2, codec.ReasonWildcardSubsNotSupported, codec.ReasonGrantedQoS0}},
	},
	{
		ID: IDUnsubscribe311, Name: "unsubscribe/v311/two-filters", Version: codec.V311,
		Raw: []byte{
			0xa2, 0x0a, // UNSUBSCRIBE (flags 0010), remaining length 10
			0x00, 0x07, // packet id 7
			0x00, 0x01, '#', // filter "#"
			0x00, 0x03, 'a', '/', '+', // filter "a/+"
		},
		Packet: &codec.Unsubscribe{ID: 7, Filters: [][]byte{B("#"), B("a/+")}},
	},
	{
		ID: IDUnsuback311, Name: "unsuback/v311", Version: codec.V311,
		Raw: []byte{
			0xb0, 0x02, // UNSUBACK, remaining length 2
			0x00, 0x07, // packet id 7
		},
		Packet: &codec.Unsuback{ID: 7},
	},
	{
		ID: IDUnsubscribe5, Name: "unsubscribe/v5/user-prop", Version: codec.V5,
		Raw: []byte{
			0xa2, 0x0e, // UNSUBSCRIBE (flags 0010), remaining length 14
			0x00, 0x08, // packet id 8
			0x07,                                   // property length 7
			0x26, 0x00, 0x01, 'k', 0x00, 0x01, 'v', // user property k=v
			0x00, 0x02, 'a', 'b', // filter "ab"
		},
		Packet: &codec.Unsubscribe{ID: 8, Props: codec.Properties{User: Users("k", "v")},
			Filters: [][]byte{B("ab")}},
	},
	{
		ID: IDUnsuback5, Name: "unsuback/v5/reasons", Version: codec.V5,
		Raw: []byte{
			0xb0, 0x05, // UNSUBACK, remaining length 5
			0x00, 0x08, // packet id 8
			0x00, // property length 0
			0x00, // success
			0x11, // no subscription existed
		},
		Packet: &codec.Unsuback{ID: 8, Reasons: []codec.ReasonCode{codec.ReasonSuccess, codec.ReasonNoSubscriptionExisted}},
	},
	{
		ID: IDPingreq311, Name: "pingreq/v311", Version: codec.V311,
		Raw: []byte{
			0xc0, 0x00, // PINGREQ, remaining length 0
		},
		Packet: Ping{},
	},
	{
		ID: IDPingresp311, Name: "pingresp/v311", Version: codec.V311,
		Raw: []byte{
			0xd0, 0x00, // PINGRESP, remaining length 0
		},
		Packet: Ping{},
	},
	{
		ID: IDPingreq5, Name: "pingreq/v5", Version: codec.V5,
		Raw: []byte{
			0xc0, 0x00, // PINGREQ, remaining length 0
		},
		Packet: Ping{},
	},
	{
		ID: IDPingresp5, Name: "pingresp/v5", Version: codec.V5,
		Raw: []byte{
			0xd0, 0x00, // PINGRESP, remaining length 0
		},
		Packet: Ping{},
	},
	{
		ID: IDDisconnect311, Name: "disconnect/v311", Version: codec.V311,
		Raw: []byte{
			0xe0, 0x00, // DISCONNECT, remaining length 0
		},
		Packet: &codec.Disconnect{},
	},
	{
		ID: IDDisconnect5Short, Name: "disconnect/v5/normal-short-form", Version: codec.V5,
		Raw: []byte{
			0xe0, 0x00, // DISCONNECT, remaining length 0 (normal disconnection)
		},
		Packet: &codec.Disconnect{},
	},
	{
		ID: IDDisconnect5ReasonOnly, Name: "disconnect/v5/with-will", Version: codec.V5,
		Raw: []byte{
			0xe0, 0x01, // DISCONNECT, remaining length 1
			0x04, // reason disconnect with will message
		},
		Packet: &codec.Disconnect{Reason: codec.ReasonDisconnectWithWill},
	},
	{
		ID: IDDisconnect5Props, Name: "disconnect/v5/server-moved-props", Version: codec.V5,
		Raw: []byte{
			0xe0, 0x12, // DISCONNECT, remaining length 18
			0x9d,                         // reason server moved
			0x10,                         // property length 16
			0x11, 0x00, 0x00, 0x00, 0x00, // session expiry interval 0 s
			0x1c, 0x00, 0x03, 'h', ':', '1', // server reference "h:1"
			0x1f, 0x00, 0x02, 'b', 'y', // reason string "by"
		},
		Packet: &codec.Disconnect{Reason: codec.ReasonServerMoved, Props: codec.Properties{
			Present:         codec.Mask(codec.PropSessionExpiry, codec.PropServerReference, codec.PropReasonString),
			ServerReference: B("h:1"), ReasonString: B("by")}},
	},
	{
		ID: IDAuth5Short, Name: "auth/v5/success-short-form", Version: codec.V5,
		Raw: []byte{
			0xf0, 0x00, // AUTH, remaining length 0 (success)
		},
		Packet: &codec.Auth{},
	},
	{
		ID: IDAuth5Continue, Name: "auth/v5/continue-method-data", Version: codec.V5,
		Raw: []byte{
			0xf0, 0x0e, // AUTH, remaining length 14
			0x18,                                      // reason continue authentication
			0x0c,                                      // property length 12
			0x15, 0x00, 0x05, 'S', 'C', 'R', 'A', 'M', // authentication method "SCRAM"
			0x16, 0x00, 0x01, 0x07, // authentication data 07
		},
		Packet: &codec.Auth{Reason: codec.ReasonContinueAuthentication, Props: codec.Properties{
			Present:    codec.Mask(codec.PropAuthMethod, codec.PropAuthData),
			AuthMethod: B("SCRAM"), AuthData: []byte{7}}},
	},
}

// boundaries builds PUBLISH packets (3.1.1, QoS 0, topic "t") whose remaining lengths sit on
// both sides of each variable byte integer size: the header bytes are written out, the payload
// is generated because it is too long to list.
func boundaries() []Vector {
	pub := func(id ID, name string, header []byte, rem int) Vector {
		raw := append([]byte{}, header...)
		raw = append(raw, 0x00, 0x01, 't') // topic "t"
		payload := make([]byte, rem-3)
		for i := range payload {
			payload[i] = byte(i)
		}
		raw = append(raw, payload...)
		return Vector{ID: id, Name: name, Version: codec.V311, Raw: raw,
			Packet: &codec.Publish{Topic: B("t"), Payload: payload}}
	}
	return []Vector{
		pub(IDRemaining127, "remaining/127", []byte{0x30, 0x7f}, 127),                               // largest 1-byte length
		pub(IDRemaining128, "remaining/128", []byte{0x30, 0x80, 0x01}, 128),                         // smallest 2-byte length
		pub(IDRemaining16383, "remaining/16383", []byte{0x30, 0xff, 0x7f}, 16383),                   // largest 2-byte length
		pub(IDRemaining16384, "remaining/16384", []byte{0x30, 0x80, 0x80, 0x01}, 16384),             // smallest 3-byte length
		pub(IDRemaining2097151, "remaining/2097151", []byte{0x30, 0xff, 0xff, 0x7f}, 2097151),       // largest 3-byte length
		pub(IDRemaining2097152, "remaining/2097152", []byte{0x30, 0x80, 0x80, 0x80, 0x01}, 2097152), // smallest 4-byte length
	}
}

// HugeHeader is the fixed header of a PUBLISH with the largest remaining length, 268435455
// (0xff 0xff 0xff 0x7f). Split must ask for more bytes after it, or reject it against a smaller
// maximum packet size; the body is too large for a table.
var HugeHeader = []byte{0x30, 0xff, 0xff, 0xff, 0x7f}

var malformed = []Vector{
	{
		ID: IDBadReservedType, Name: "bad/reserved-type-0", Version: codec.V311, Err: codec.ErrReservedType,
		Raw: []byte{
			0x00, 0x00, // [MQTT-2.1.2] packet type 0 is reserved
		},
	},
	{
		ID: IDBadPubackFlags, Name: "bad/puback-flags", Version: codec.V5, Err: codec.ErrReservedFlags,
		Raw: []byte{
			0x41, 0x02, // [MQTT-2.1.3-1] PUBACK flags must be 0000
			0x00, 0x01, // packet id 1
		},
	},
	{
		ID: IDBadSubscribeFlags, Name: "bad/subscribe-flags", Version: codec.V311, Err: codec.ErrReservedFlags,
		Raw: []byte{
			0x80, 0x06, // 3.1.1 [MQTT-3.8.1-1] SUBSCRIBE flags must be 0010
			0x00, 0x01, // packet id 1
			0x00, 0x01, 'a', // filter "a"
			0x00, // options
		},
	},
	{
		ID: IDBadPubrelFlags, Name: "bad/pubrel-flags", Version: codec.V311, Err: codec.ErrReservedFlags,
		Raw: []byte{
			0x60, 0x02, // 3.1.1 [MQTT-3.6.1-1] PUBREL flags must be 0010
			0x00, 0x01, // packet id 1
		},
	},
	{
		ID: IDBadVarintFifthByte, Name: "bad/varint-fifth-byte", Version: codec.V311, Err: codec.ErrMalformedVarint,
		Raw: []byte{
			0x30, 0xff, 0xff, 0xff, 0xff, 0x01, // [MQTT-1.5.5] remaining length with a fifth byte
		},
	},
	{
		ID: IDBadVarintNonMinimal, Name: "bad/varint-non-minimal", Version: codec.V5, Err: codec.ErrMalformedVarint,
		Raw: []byte{
			0xc0, 0x80, 0x00, // [MQTT-1.5.5-1] remaining length 0 in two bytes
		},
	},
	{
		ID: IDBadTooLarge, Name: "bad/over-maximum-packet-size", Version: codec.V5, Err: codec.ErrPacketTooLarge,
		MaxSize: 8,
		Raw: []byte{
			0x30, 0x07, // [MQTT-3.2.2-15] 9 bytes against a maximum packet size of 8
			0x00, 0x01, 't', // topic "t"
			0x00,          // property length 0
			'a', 'b', 'c', // payload
		},
	},
	{
		ID: IDBadTooLargeHuge, Name: "bad/huge-before-body", Version: codec.V5, Err: codec.ErrPacketTooLarge,
		MaxSize: 1 << 20,
		Raw: []byte{
			0x30, 0xff, 0xff, 0xff, 0x7f, // [MQTT-3.2.2-15] remaining length 268435455, rejected before the body
		},
	},
	{
		ID: IDBadPublishQoS3, Name: "bad/publish-qos3", Version: codec.V311, Err: codec.ErrInvalidQoS,
		Raw: []byte{
			0x36, 0x05, // [MQTT-3.3.1-4] PUBLISH qos bits 11
			0x00, 0x01, 't', // topic "t"
			0x00, 0x01, // packet id 1
		},
	},
	{
		ID: IDBadPublishDupQoS0, Name: "bad/publish-dup-qos0", Version: codec.V5, Err: codec.ErrDupQoS0,
		Raw: []byte{
			0x38, 0x04, // [MQTT-3.3.1-2] PUBLISH dup with qos 0
			0x00, 0x01, 't', // topic "t"
			0x00, // property length 0
		},
	},
	{
		ID: IDBadPublishWildcardPlus, Name: "bad/publish-topic-plus", Version: codec.V311, Err: codec.ErrMalformedTopic,
		Raw: []byte{
			0x30, 0x05, // PUBLISH qos=0
			0x00, 0x03, 'a', '/', '+', // [MQTT-3.3.2-2] wildcard in a topic name
		},
	},
	{
		ID: IDBadPublishWildcardHash, Name: "bad/publish-topic-hash", Version: codec.V5, Err: codec.ErrMalformedTopic,
		Raw: []byte{
			0x30, 0x04, // PUBLISH qos=0
			0x00, 0x01, '#', // [MQTT-3.3.2-2] wildcard in a topic name
			0x00, // property length 0
		},
	},
	{
		ID: IDBadPublishZeroID311, Name: "bad/publish-id-0/v311", Version: codec.V311, Err: codec.ErrZeroPacketID,
		Raw: []byte{
			0x32, 0x05, // PUBLISH qos=1
			0x00, 0x01, 't', // topic "t"
			0x00, 0x00, // 3.1.1 [MQTT-2.3.1-1] packet id 0
		},
	},
	{
		ID: IDBadPublishZeroID5, Name: "bad/publish-id-0/v5", Version: codec.V5, Err: codec.ErrZeroPacketID,
		Raw: []byte{
			0x34, 0x06, // PUBLISH qos=2
			0x00, 0x01, 't', // topic "t"
			0x00, 0x00, // [MQTT-2.2.1-3] packet id 0
			0x00, // property length 0
		},
	},
	{
		ID: IDBadPublishUTF8, Name: "bad/publish-topic-invalid-utf8", Version: codec.V311, Err: codec.ErrMalformedString,
		Raw: []byte{
			0x30, 0x04, // PUBLISH qos=0
			0x00, 0x02, 0xc3, 0x28, // 3.1.1 [MQTT-1.5.3-1] ill-formed UTF-8
		},
	},
	{
		ID: IDBadPublishNUL, Name: "bad/publish-topic-nul", Version: codec.V311, Err: codec.ErrMalformedString,
		Raw: []byte{
			0x30, 0x05, // PUBLISH qos=0
			0x00, 0x03, 'a', 0x00, 'b', // 3.1.1 [MQTT-1.5.3-2] U+0000 in a string
		},
	},
	{
		ID: IDBadPublishSurrogate5, Name: "bad/publish-topic-surrogate", Version: codec.V5, Err: codec.ErrMalformedString,
		Raw: []byte{
			0x30, 0x06, // PUBLISH qos=0
			0x00, 0x03, 0xed, 0xa0, 0x80, // [MQTT-1.5.4-1] U+D800 encoded in UTF-8
			0x00, // property length 0
		},
	},
	{
		ID: IDBadPublishTopicTooLong, Name: "bad/publish-topic-longer-than-packet", Version: codec.V311, Err: codec.ErrTruncated,
		Raw: []byte{
			0x30, 0x04, // PUBLISH qos=0, remaining length 4
			0x00, 0x05, 'a', 'b', // [MQTT-1.5.4] topic length 5 runs past the remaining length
		},
	},
	{
		ID: IDBadPublishEmptyTopic311, Name: "bad/publish-empty-topic/v311", Version: codec.V311, Err: codec.ErrMalformedTopic,
		Raw: []byte{
			0x30, 0x03, // PUBLISH qos=0
			0x00, 0x00, // 3.1.1 [MQTT-4.7.3-1] empty topic name
			'x', // payload
		},
	},
	{
		ID: IDBadPublishEmptyTopic5, Name: "bad/publish-empty-topic-no-alias/v5", Version: codec.V5, Err: codec.ErrMalformedTopic,
		Raw: []byte{
			0x30, 0x03, // PUBLISH qos=0
			0x00, 0x00, // section 3.3.2.3.4: empty topic name without a topic alias
			0x00, // property length 0
		},
	},
	{
		ID: IDBadPublishPropNotAllowed, Name: "bad/publish-session-expiry", Version: codec.V5, Err: codec.ErrPropertyNotAllowed,
		Raw: []byte{
			0x30, 0x09, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x05,                         // property length 5
			0x11, 0x00, 0x00, 0x00, 0x01, // section 2.2.2.2: session expiry interval not allowed in PUBLISH
		},
	},
	{
		ID: IDBadPublishPropTwice, Name: "bad/publish-topic-alias-twice", Version: codec.V5, Err: codec.ErrDuplicateProperty,
		Raw: []byte{
			0x30, 0x0a, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x06,             // property length 6
			0x23, 0x00, 0x01, // topic alias 1
			0x23, 0x00, 0x02, // section 3.3.2.3.4: topic alias a second time
		},
	},
	{
		ID: IDBadPublishPropUnknown, Name: "bad/publish-unknown-property", Version: codec.V5, Err: codec.ErrUnknownProperty,
		Raw: []byte{
			0x30, 0x06, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x02,       // property length 2
			0x04, 0x00, // section 2.2.2.2: no property has identifier 0x04
		},
	},
	{
		ID: IDBadPublishAliasZero, Name: "bad/publish-topic-alias-0", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x30, 0x07, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x03,             // property length 3
			0x23, 0x00, 0x00, // [MQTT-3.3.2-8] topic alias 0
		},
	},
	{
		ID: IDBadPublishPropLenTooLong, Name: "bad/publish-property-length-past-end", Version: codec.V5, Err: codec.ErrMalformedProperties,
		Raw: []byte{
			0x30, 0x07, // PUBLISH qos=0, remaining length 7
			0x00, 0x01, 't', // topic "t"
			0x05,             // section 2.2.2.1: property length 5, but 3 bytes remain
			0x23, 0x00, 0x01, // topic alias 1
		},
	},
	{
		ID: IDBadPublishPropValueCut, Name: "bad/publish-property-value-cut", Version: codec.V5, Err: codec.ErrMalformedProperties,
		Raw: []byte{
			0x30, 0x07, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x02,       // section 2.2.2.1: property length 2 ends inside the value
			0x23, 0x00, // topic alias, first byte
			0x01, // payload
		},
	},
	{
		ID: IDBadPublishPayloadFormat, Name: "bad/publish-payload-format-2", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x30, 0x06, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x02,       // property length 2
			0x01, 0x02, // section 3.3.2.3.2: payload format indicator must be 0 or 1
		},
	},
	{
		ID: IDBadPublishUserPropUTF8, Name: "bad/publish-user-property-utf8", Version: codec.V5, Err: codec.ErrMalformedString,
		Raw: []byte{
			0x30, 0x0a, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x06,                               // property length 6
			0x26, 0x00, 0x01, 0xff, 0x00, 0x00, // [MQTT-1.5.4-1] user property name 0xff
		},
	},
	{
		ID: IDBadPublishResponseTopicWildcard, Name: "bad/publish-response-topic-wildcard", Version: codec.V5, Err: codec.ErrMalformedTopic,
		Raw: []byte{
			0x30, 0x08, // PUBLISH qos=0
			0x00, 0x01, 't', // topic "t"
			0x04,                  // property length 4
			0x08, 0x00, 0x01, '#', // [MQTT-3.3.2-14] response topic with a wildcard
		},
	},
	{
		ID: IDBadPubackZeroID, Name: "bad/puback-id-0", Version: codec.V311, Err: codec.ErrZeroPacketID,
		Raw: []byte{
			0x40, 0x02, // PUBACK
			0x00, 0x00, // 3.1.1 [MQTT-2.3.1-1] packet id 0
		},
	},
	{
		ID: IDBadPuback311Long, Name: "bad/puback-v311-remaining-3", Version: codec.V311, Err: codec.ErrTrailingBytes,
		Raw: []byte{
			0x40, 0x03, // 3.1.1 section 3.4.1: PUBACK remaining length must be 2
			0x00, 0x01, // packet id 1
			0x00, // extra byte
		},
	},
	{
		ID: IDBadPubackShort, Name: "bad/puback-remaining-1", Version: codec.V5, Err: codec.ErrTruncated,
		Raw: []byte{
			0x40, 0x01, // section 3.4.2: remaining length 1 cannot hold a packet id
			0x00, // half a packet id
		},
	},
	{
		ID: IDBadPuback5Reason, Name: "bad/puback-reason-not-found", Version: codec.V5, Err: codec.ErrReasonCode,
		Raw: []byte{
			0x40, 0x03, // PUBACK
			0x00, 0x01, // packet id 1
			0x92, // section 3.4.2.1: packet identifier not found is a PUBREL/PUBCOMP code
		},
	},
	{
		ID: IDBadPuback5ReasonStringTwice, Name: "bad/puback-reason-string-twice", Version: codec.V5, Err: codec.ErrDuplicateProperty,
		Raw: []byte{
			0x40, 0x0c, // PUBACK
			0x00, 0x01, // packet id 1
			0x80,                  // reason unspecified error
			0x08,                  // property length 8
			0x1f, 0x00, 0x01, 'a', // reason string "a"
			0x1f, 0x00, 0x01, 'b', // section 3.4.2.2.2: reason string a second time
		},
	},
	{
		ID: IDBadConnectProtocolName, Name: "bad/connect-protocol-name", Version: codec.V311, Err: codec.ErrProtocolName,
		Raw: []byte{
			0x10, 0x0d, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'X', // [MQTT-3.1.2-1] protocol name "MQTX"
			0x04,       // protocol level 4
			0x02,       // flags: clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnectLevel, Name: "bad/connect-level-6", Version: codec.V311, Err: codec.ErrProtocolVersion,
		Raw: []byte{
			0x10, 0x0d, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x06,       // [MQTT-3.1.2-2] protocol level 6
			0x02,       // flags: clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnectReservedFlag, Name: "bad/connect-reserved-flag", Version: codec.V311, Err: codec.ErrConnectFlags,
		Raw: []byte{
			0x10, 0x0d, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x03,       // [MQTT-3.1.2-3] reserved flag bit 0 set
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnectWillQoS3, Name: "bad/connect-will-qos3", Version: codec.V311, Err: codec.ErrInvalidQoS,
		Raw: []byte{
			0x10, 0x13, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x1e,       // 3.1.1 [MQTT-3.1.2-14] will qos 3, will, clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
			0x00, 0x01, 'w', // will topic "w"
			0x00, 0x01, 'x', // will payload "x"
		},
	},
	{
		ID: IDBadConnectWillRetainNoWill, Name: "bad/connect-will-retain-without-will", Version: codec.V311, Err: codec.ErrConnectFlags,
		Raw: []byte{
			0x10, 0x0d, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x22,       // 3.1.1 [MQTT-3.1.2-15] will retain without will, clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnectPasswordNoUser311, Name: "bad/connect-password-without-username/v311", Version: codec.V311, Err: codec.ErrConnectFlags,
		Raw: []byte{
			0x10, 0x10, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x42,       // 3.1.1 [MQTT-3.1.2-22] password without username, clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
			0x00, 0x01, 'p', // password "p"
		},
	},
	{
		ID: IDBadConnectEmptyIDNoClean311, Name: "bad/connect-empty-id-without-clean/v311", Version: codec.V311, Err: codec.ErrClientID,
		Raw: []byte{
			0x10, 0x0c, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x00,       // flags: no clean session
			0x00, 0x00, // keep alive
			0x00, 0x00, // 3.1.1 [MQTT-3.1.3-7] empty client id needs clean session
		},
	},
	{
		ID: IDBadConnectTrailing, Name: "bad/connect-trailing-bytes", Version: codec.V311, Err: codec.ErrTrailingBytes,
		Raw: []byte{
			0x10, 0x0e, // CONNECT, remaining length 14
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x04,       // protocol level 4
			0x02,       // flags: clean session
			0x00, 0x00, // keep alive
			0x00, 0x01, 'c', // client id "c"
			'!', // section 3.1.3: a byte no flag announced
		},
	},
	{
		ID: IDBadConnect5ReceiveMaxZero, Name: "bad/connect-receive-maximum-0", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x10, 0x11, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0x02,       // flags: clean start
			0x00, 0x00, // keep alive
			0x03,             // property length 3
			0x21, 0x00, 0x00, // section 3.1.2.11.3: receive maximum 0
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnect5WillPropNotAllowed, Name: "bad/connect-will-topic-alias", Version: codec.V5, Err: codec.ErrPropertyNotAllowed,
		Raw: []byte{
			0x10, 0x17, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0x06,       // flags: will, clean start
			0x00, 0x00, // keep alive
			0x00,            // property length 0
			0x00, 0x01, 'c', // client id "c"
			0x03,             // will property length 3
			0x23, 0x00, 0x01, // section 3.1.3.2: topic alias is not a will property
			0x00, 0x01, 'w', // will topic "w"
			0x00, 0x00, // will payload ""
		},
	},
	{
		ID: IDBadConnect5AuthDataNoMethod, Name: "bad/connect-auth-data-without-method", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x10, 0x12, // CONNECT
			0x00, 0x04, 'M', 'Q', 'T', 'T', // protocol name
			0x05,       // protocol level 5
			0x02,       // flags: clean start
			0x00, 0x00, // keep alive
			0x04,                   // property length 4
			0x16, 0x00, 0x01, 0x01, // section 3.1.2.11.10: authentication data without a method
			0x00, 0x01, 'c', // client id "c"
		},
	},
	{
		ID: IDBadConnack311Flags, Name: "bad/connack-reserved-flags/v311", Version: codec.V311, Err: codec.ErrConnackFlags,
		Raw: []byte{
			0x20, 0x02, // CONNACK
			0x02, // 3.1.1 section 3.2.2.1: flag bits 7-1 are reserved
			0x00, // accepted
		},
	},
	{
		ID: IDBadConnack311SessionRefused, Name: "bad/connack-session-present-refused/v311", Version: codec.V311, Err: codec.ErrConnackFlags,
		Raw: []byte{
			0x20, 0x02, // CONNACK
			0x01, // 3.1.1 [MQTT-3.2.2-4] session present with a refusal
			0x04, // bad username or password
		},
	},
	{
		ID: IDBadConnack311Code, Name: "bad/connack-return-code-6/v311", Version: codec.V311, Err: codec.ErrReasonCode,
		Raw: []byte{
			0x20, 0x02, // CONNACK
			0x00, // no session
			0x06, // 3.1.1 section 3.2.2.3: return codes 6-255 are reserved
		},
	},
	{
		ID: IDBadConnack5MaxQoS2, Name: "bad/connack-maximum-qos-2", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x20, 0x05, // CONNACK
			0x00,       // no session
			0x00,       // success
			0x02,       // property length 2
			0x24, 0x02, // section 3.2.2.3.4: maximum qos 2 is a protocol error
		},
	},
	{
		ID: IDBadConnack5TopicAlias, Name: "bad/connack-topic-alias", Version: codec.V5, Err: codec.ErrPropertyNotAllowed,
		Raw: []byte{
			0x20, 0x06, // CONNACK
			0x00,             // no session
			0x00,             // success
			0x03,             // property length 3
			0x23, 0x00, 0x01, // section 2.2.2.2: topic alias is a PUBLISH property
		},
	},
	{
		ID: IDBadSubscribeNoFilters, Name: "bad/subscribe-no-filters", Version: codec.V311, Err: codec.ErrNoTopicFilters,
		Raw: []byte{
			0x82, 0x02, // SUBSCRIBE
			0x00, 0x01, // packet id 1; 3.1.1 [MQTT-3.8.3-3] at least one filter
		},
	},
	{
		ID: IDBadSubscribe311Options, Name: "bad/subscribe-options-reserved/v311", Version: codec.V311, Err: codec.ErrSubscriptionOptions,
		Raw: []byte{
			0x82, 0x06, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00, 0x01, 'a', // filter "a"
			0x04, // 3.1.1 [MQTT-3-8.3-4] reserved option bits set
		},
	},
	{
		ID: IDBadSubscribe5Reserved, Name: "bad/subscribe-options-reserved/v5", Version: codec.V5, Err: codec.ErrSubscriptionOptions,
		Raw: []byte{
			0x82, 0x07, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00,            // property length 0
			0x00, 0x01, 'a', // filter "a"
			0x40, // [MQTT-3.8.3-5] reserved option bit 6 set
		},
	},
	{
		ID: IDBadSubscribe5RetainHandling3, Name: "bad/subscribe-retain-handling-3", Version: codec.V5, Err: codec.ErrSubscriptionOptions,
		Raw: []byte{
			0x82, 0x07, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00,            // property length 0
			0x00, 0x01, 'a', // filter "a"
			0x30, // section 3.8.3.1: retain handling 3 is a protocol error
		},
	},
	{
		ID: IDBadSubscribeQoS3, Name: "bad/subscribe-qos3", Version: codec.V311, Err: codec.ErrInvalidQoS,
		Raw: []byte{
			0x82, 0x06, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00, 0x01, 'a', // filter "a"
			0x03, // 3.1.1 [MQTT-3-8.3-4] requested qos 3
		},
	},
	{
		ID: IDBadSubscribeHashInside, Name: "bad/subscribe-hash-not-last", Version: codec.V311, Err: codec.ErrMalformedTopicFilter,
		Raw: []byte{
			0x82, 0x0a, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00, 0x05, 'a', '/', '#', '/', 'b', // [MQTT-4.7.1-2] "#" not the last level
			0x00, // options
		},
	},
	{
		ID: IDBadSubscribePlusInside, Name: "bad/subscribe-plus-in-level", Version: codec.V5, Err: codec.ErrMalformedTopicFilter,
		Raw: []byte{
			0x82, 0x08, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00,                 // property length 0
			0x00, 0x02, 'a', '+', // [MQTT-4.7.1-3] "+" sharing a level
			0x00, // options
		},
	},
	{
		ID: IDBadSubscribeEmptyFilter, Name: "bad/subscribe-empty-filter", Version: codec.V311, Err: codec.ErrMalformedTopicFilter,
		Raw: []byte{
			0x82, 0x05, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00, 0x00, // [MQTT-4.7.3-1] empty topic filter
			0x00, // options
		},
	},
	{
		ID: IDBadSubscribe5NoLocalShared, Name: "bad/subscribe-no-local-shared", Version: codec.V5, Err: codec.ErrSubscriptionOptions,
		Raw: []byte{
			0x82, 0x0e, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00,                                               // property length 0
			0x00, 0x08, '$', 's', 'h', 'a', 'r', 'e', '/', 'g', // filter "$share/g"
			0x04, // [MQTT-3.8.3-4] no local on a shared subscription
		},
	},
	{
		ID: IDBadSubscribe5TwoSubIDs, Name: "bad/subscribe-two-subscription-ids", Version: codec.V5, Err: codec.ErrDuplicateProperty,
		Raw: []byte{
			0x82, 0x0b, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x04,       // property length 4
			0x0b, 0x01, // subscription identifier 1
			0x0b, 0x02, // section 3.8.2.1.2: a second subscription identifier
			0x00, 0x01, 'a', // filter "a"
			0x00, // options
		},
	},
	{
		ID: IDBadSubscribe5SubIDZero, Name: "bad/subscribe-subscription-id-0", Version: codec.V5, Err: codec.ErrPropertyValue,
		Raw: []byte{
			0x82, 0x09, // SUBSCRIBE
			0x00, 0x01, // packet id 1
			0x02,       // property length 2
			0x0b, 0x00, // section 3.8.2.1.2: subscription identifier 0
			0x00, 0x01, 'a', // filter "a"
			0x00, // options
		},
	},
	{
		ID: IDBadSuback311Code, Name: "bad/suback-code/v311", Version: codec.V311, Err: codec.ErrReasonCode,
		Raw: []byte{
			0x90, 0x03, // SUBACK
			0x00, 0x01, // packet id 1
			0x87, // 3.1.1 [MQTT-3.9.3-2] only 0x00-0x02 and 0x80
		},
	},
	{
		ID: IDBadUnsubscribeNoFilters, Name: "bad/unsubscribe-no-filters", Version: codec.V5, Err: codec.ErrNoTopicFilters,
		Raw: []byte{
			0xa2, 0x03, // UNSUBSCRIBE
			0x00, 0x01, // packet id 1
			0x00, // property length 0; [MQTT-3.10.3-2] at least one filter
		},
	},
	{
		ID: IDBadUnsuback311Long, Name: "bad/unsuback-trailing/v311", Version: codec.V311, Err: codec.ErrTrailingBytes,
		Raw: []byte{
			0xb0, 0x03, // 3.1.1 section 3.11.1: UNSUBACK remaining length must be 2
			0x00, 0x01, // packet id 1
			0x00, // extra byte
		},
	},
	{
		ID: IDBadPingreqBody, Name: "bad/pingreq-with-body", Version: codec.V311, Err: codec.ErrTrailingBytes,
		Raw: []byte{
			0xc0, 0x01, // section 3.12: PINGREQ has no variable header or payload
			0x00, // extra byte
		},
	},
	{
		ID: IDBadDisconnect311Body, Name: "bad/disconnect-with-body/v311", Version: codec.V311, Err: codec.ErrTrailingBytes,
		Raw: []byte{
			0xe0, 0x01, // 3.1.1 section 3.14.2: DISCONNECT has no variable header
			0x00, // extra byte
		},
	},
	{
		ID: IDBadDisconnect5Reason, Name: "bad/disconnect-reason-granted-qos1", Version: codec.V5, Err: codec.ErrReasonCode,
		Raw: []byte{
			0xe0, 0x01, // DISCONNECT
			0x01, // section 3.14.2.1: 0x01 is not a DISCONNECT reason code
		},
	},
	{
		ID: IDBadAuth311, Name: "bad/auth-in-v311", Version: codec.V311, Err: codec.ErrReservedType,
		Raw: []byte{
			0xf0, 0x00, // 3.1.1 section 2.2.1: packet type 15 is reserved
		},
	},
	{
		ID: IDBadAuth5PropNotAllowed, Name: "bad/auth-topic-alias", Version: codec.V5, Err: codec.ErrPropertyNotAllowed,
		Raw: []byte{
			0xf0, 0x05, // AUTH
			0x18,             // continue authentication
			0x03,             // property length 3
			0x23, 0x00, 0x01, // section 2.2.2.2: topic alias is a PUBLISH property
		},
	},
	{
		ID: IDBadVarintInProps, Name: "bad/property-length-five-bytes", Version: codec.V5, Err: codec.ErrMalformedVarint,
		Raw: []byte{
			0x20, 0x07, // CONNACK
			0x00,                         // no session
			0x00,                         // success
			0xff, 0xff, 0xff, 0xff, 0x01, // [MQTT-1.5.5] property length with a fifth byte
		},
	},
}
