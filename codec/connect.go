package codec

// Connect is a CONNECT packet. The protocol version is not a field: AppendConnect takes it and
// DecodeConnect returns it.
type Connect struct {
	ClientID   []byte
	KeepAlive  uint16 // in seconds; 0 turns keep alive off
	CleanStart bool   // Clean Session in 3.1.1

	HasWill     bool
	WillQoS     QoS
	WillRetain  bool
	WillTopic   []byte
	WillPayload []byte
	WillProps   Properties // 5.0 only

	HasUsername bool // an empty username is legal, hence the flag
	Username    []byte
	HasPassword bool
	Password    []byte

	Props Properties // 5.0 only
}

const (
	connFlagReserved = 0x01
	connFlagClean    = 0x02
	connFlagWill     = 0x04
	connFlagWillQoS  = 0x18
	connFlagRetain   = 0x20
	connFlagPassword = 0x40
	connFlagUsername = 0x80
)

func protocolName(v Version) string {
	if v == V31 {
		return "MQIsdp"
	}
	return "MQTT"
}

func (p *Connect) sizes(v Version) (rem, pl, wpl int) {
	rem = 2 + len(protocolName(v)) + 1 + 1 + 2 + 2 + len(p.ClientID)
	if v == V5 {
		pl = propsLen(&p.Props)
		rem += propsWireLen(pl)
	}
	if p.HasWill {
		rem += 2 + len(p.WillTopic) + 2 + len(p.WillPayload)
		if v == V5 {
			wpl = propsLen(&p.WillProps)
			rem += propsWireLen(wpl)
		}
	}
	if p.HasUsername {
		rem += 2 + len(p.Username)
	}
	if p.HasPassword {
		rem += 2 + len(p.Password)
	}
	return rem, pl, wpl
}

// SizeConnect returns the number of bytes AppendConnect appends.
func SizeConnect(p *Connect, v Version) int {
	rem, _, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendConnect appends the CONNECT packet p for version v (V31 writes protocol name "MQIsdp"
// and level 3) to dst and returns the extended slice. p must have passed Validate.
func AppendConnect(dst []byte, p *Connect, v Version) []byte {
	rem, pl, wpl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeConnect)<<4, rem)
	name := protocolName(v)
	dst = append(dst, 0, byte(len(name)))
	dst = append(dst, name...)
	var flags byte
	if p.CleanStart {
		flags |= connFlagClean
	}
	if p.HasWill {
		flags |= connFlagWill | byte(p.WillQoS)<<3
		if p.WillRetain {
			flags |= connFlagRetain
		}
	}
	if p.HasPassword {
		flags |= connFlagPassword
	}
	if p.HasUsername {
		flags |= connFlagUsername
	}
	dst = append(dst, byte(v), flags)
	dst = appendU16(dst, p.KeepAlive)
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	dst = appendStr(dst, p.ClientID)
	if p.HasWill {
		if v == V5 {
			dst = appendProps(dst, &p.WillProps, wpl)
		}
		dst = appendStr(dst, p.WillTopic)
		dst = appendStr(dst, p.WillPayload)
	}
	if p.HasUsername {
		dst = appendStr(dst, p.Username)
	}
	if p.HasPassword {
		dst = appendStr(dst, p.Password)
	}
	return dst
}

// DecodeConnect decodes the body of a CONNECT into dst and returns the protocol version it
// announces (V31 for "MQIsdp" level 3). Byte fields alias body.
func DecodeConnect(body []byte, dst *Connect) (Version, error) {
	dst.Props.reset()
	dst.WillProps.reset()
	name, off, err := readBin(body, 0)
	if err != nil {
		return 0, err
	}
	var level byte
	if level, off, err = readByte(body, off); err != nil {
		return 0, err
	}
	v := Version(level)
	switch {
	case v == V31 && string(name) == "MQIsdp":
	case (v == V311 || v == V5) && string(name) == "MQTT":
	case string(name) != "MQTT" && string(name) != "MQIsdp":
		return 0, ErrProtocolName // [MQTT-3.1.2-1]
	default:
		return 0, ErrProtocolVersion // [MQTT-3.1.2-2]
	}
	var flags byte
	if flags, off, err = readByte(body, off); err != nil {
		return 0, err
	}
	if flags&connFlagReserved != 0 {
		return 0, ErrConnectFlags // [MQTT-3.1.2-3]
	}
	dst.CleanStart = flags&connFlagClean != 0
	dst.HasWill = flags&connFlagWill != 0
	dst.WillQoS = QoS(flags & connFlagWillQoS >> 3)
	dst.WillRetain = flags&connFlagRetain != 0
	dst.HasPassword = flags&connFlagPassword != 0
	dst.HasUsername = flags&connFlagUsername != 0
	if dst.WillQoS == 3 {
		return 0, ErrInvalidQoS // [MQTT-3.1.2-12] 3.1.1: [MQTT-3.1.2-14]
	}
	if !dst.HasWill && (dst.WillQoS != 0 || dst.WillRetain) {
		return 0, ErrConnectFlags // [MQTT-3.1.2-11] [MQTT-3.1.2-13] 3.1.1: [MQTT-3.1.2-13] [MQTT-3.1.2-15]
	}
	if v != V5 && dst.HasPassword && !dst.HasUsername {
		return 0, ErrConnectFlags // 3.1.1: [MQTT-3.1.2-22]
	}
	if dst.KeepAlive, off, err = readU16(body, off); err != nil {
		return 0, err
	}
	if v == V5 {
		if off, err = decodeProps(body, off, ctxConnect, &dst.Props); err != nil {
			return 0, err
		}
	}
	if dst.ClientID, off, err = readStr(body, off); err != nil { // [MQTT-3.1.3-4]
		return 0, err
	}
	if v != V5 && len(dst.ClientID) == 0 && !dst.CleanStart {
		return 0, ErrClientID // 3.1.1: [MQTT-3.1.3-7]
	}
	dst.WillTopic, dst.WillPayload = nil, nil
	if dst.HasWill {
		if v == V5 {
			if off, err = decodeProps(body, off, ctxWill, &dst.WillProps); err != nil {
				return 0, err
			}
		}
		if dst.WillTopic, off, err = readStr(body, off); err != nil { // [MQTT-3.1.3-11]
			return 0, err
		}
		if !validTopicName(dst.WillTopic) || len(dst.WillTopic) == 0 {
			return 0, ErrMalformedTopic // [MQTT-3.3.2-2] [MQTT-4.7.3-1] it becomes a PUBLISH topic
		}
		if dst.WillPayload, off, err = readBin(body, off); err != nil {
			return 0, err
		}
	}
	dst.Username, dst.Password = nil, nil
	if dst.HasUsername {
		if dst.Username, off, err = readStr(body, off); err != nil { // [MQTT-3.1.3-11]
			return 0, err
		}
	}
	if dst.HasPassword {
		if dst.Password, off, err = readBin(body, off); err != nil {
			return 0, err
		}
	}
	if off != len(body) {
		return 0, ErrTrailingBytes
	}
	return v, nil
}
