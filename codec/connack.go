package codec

// Connack is a CONNACK packet. Reason holds the 5.0 reason code or the 3.1.1 return code.
type Connack struct {
	SessionPresent bool
	Reason         ReasonCode
	Props          Properties // 5.0 only
}

func (p *Connack) sizes(v Version) (rem, pl int) {
	if v != V5 {
		return 2, 0
	}
	pl = propsLen(&p.Props)
	return 2 + propsWireLen(pl), pl
}

// SizeConnack returns the number of bytes AppendConnack appends.
func SizeConnack(p *Connack, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendConnack appends the CONNACK packet p to dst and returns the extended slice. p must have
// passed Validate.
func AppendConnack(dst []byte, p *Connack, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeConnack)<<4, rem)
	var flags byte
	if p.SessionPresent {
		flags = 1
	}
	dst = append(dst, flags, byte(p.Reason))
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	return dst
}

// DecodeConnack decodes the body of a CONNACK into dst. Byte fields alias body.
func DecodeConnack(body []byte, v Version, dst *Connack) error {
	if len(body) < 2 {
		return ErrTruncated
	}
	flags, code := body[0], ReasonCode(body[1])
	if flags&^1 != 0 {
		return ErrConnackFlags // [MQTT-3.2.2-1] 3.1.1: section 3.2.2.1 bits 7-1 reserved
	}
	dst.SessionPresent = flags == 1
	dst.Reason = code
	if v != V5 {
		dst.Props.reset()
		if !codesConnack311.has(code) {
			return ErrReasonCode // 3.1.1: table 3.1
		}
		if dst.SessionPresent && code != 0 {
			return ErrConnackFlags // 3.1.1: [MQTT-3.2.2-4]
		}
		if len(body) != 2 {
			return ErrTrailingBytes // 3.1.1: remaining length is 2
		}
		return nil
	}
	if !codesConnack5.has(code) {
		return ErrReasonCode // section 3.2.2.2
	}
	if dst.SessionPresent && code >= 0x80 {
		return ErrConnackFlags // [MQTT-3.2.2-6]
	}
	off, err := decodeProps(body, 2, ctxConnack, &dst.Props)
	if err != nil {
		return err
	}
	if off != len(body) {
		return ErrTrailingBytes
	}
	return nil
}
