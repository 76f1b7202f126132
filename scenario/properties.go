package scenario

// propKind is the value type of an MQTT 5 property.
type propKind byte

const (
	propNum  propKind = iota // Byte, Two Byte or Four Byte Integer
	propStr                  // UTF-8 string or binary data
	propPair                 // user property: key and value
)

// Packets a property may be sent on.
const (
	onConnect = 1 << iota
	onPublish
)

// propDef describes a property a scenario may set.
type propDef struct {
	name     string
	id       byte
	kind     propKind
	min, max uint64
	packets  int
}

// propDefs lists the MQTT 5 properties a client may send on CONNECT or PUBLISH
// (MQTT 5.0 §2.2.2.2); authentication and subscription identifiers are left out.
var propDefs = []propDef{
	{"payload_format_indicator", 0x01, propNum, 0, 1, onPublish},
	{"message_expiry_interval", 0x02, propNum, 0, 1<<32 - 1, onPublish},
	{"content_type", 0x03, propStr, 0, 0, onPublish},
	{"response_topic", 0x08, propStr, 0, 0, onPublish},
	{"correlation_data", 0x09, propStr, 0, 0, onPublish},
	{"session_expiry_interval", 0x11, propNum, 0, 1<<32 - 1, onConnect},
	{"request_problem_information", 0x17, propNum, 0, 1, onConnect},
	{"request_response_information", 0x19, propNum, 0, 1, onConnect},
	{"receive_maximum", 0x21, propNum, 1, 65535, onConnect}, // MQTT 5.0 §3.1.2.11.3: 0 is a Protocol Error
	{"topic_alias_maximum", 0x22, propNum, 0, 65535, onConnect},
	{"topic_alias", 0x23, propNum, 1, 65535, onPublish}, // MQTT 5.0 §3.3.2.3.4: 0 is not permitted
	{"user_property", 0x26, propPair, 0, 0, onConnect | onPublish},
	{"maximum_packet_size", 0x27, propNum, 1, 1<<32 - 1, onConnect}, // MQTT 5.0 §3.1.2.11.4: 0 is a Protocol Error
}

func propertyByName(name string) (propDef, bool) {
	for _, d := range propDefs {
		if d.name == name {
			return d, true
		}
	}
	return propDef{}, false
}

func propertyNames() []string {
	out := make([]string, len(propDefs))
	for i, d := range propDefs {
		out[i] = d.name
	}
	return out
}

// size returns the wire size of p inside a property list.
func (p *Property) size() int {
	d, _ := propertyByName(p.Name)
	switch d.kind {
	case propPair:
		return 1 + 2 + len(p.Key) + 2 + len(p.Str)
	case propStr:
		return 1 + 2 + len(p.Str)
	}
	switch {
	case d.max <= 0xff:
		return 2
	case d.max <= 0xffff:
		return 3
	}
	return 5
}
