package codec

// Unsuback is an UNSUBACK packet. In 5.0 it carries one reason code per filter of the
// UNSUBSCRIBE; in 3.1.1 only the packet identifier.
type Unsuback struct {
	ID      uint16
	Props   Properties   // 5.0 only
	Reasons []ReasonCode // 5.0 only
}

func (p *Unsuback) sizes(v Version) (rem, pl int) {
	if v != V5 {
		return 2, 0
	}
	pl = propsLen(&p.Props)
	return 2 + propsWireLen(pl) + len(p.Reasons), pl
}

// SizeUnsuback returns the number of bytes AppendUnsuback appends.
func SizeUnsuback(p *Unsuback, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendUnsuback appends the UNSUBACK packet p to dst and returns the extended slice. p must
// have passed Validate.
func AppendUnsuback(dst []byte, p *Unsuback, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeUnsuback)<<4, rem)
	dst = appendU16(dst, p.ID)
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
		for _, r := range p.Reasons {
			dst = append(dst, byte(r))
		}
	}
	return dst
}

// DecodeUnsuback decodes the body of an UNSUBACK into dst. The properties alias body; Reasons
// is copied into dst's backing array, which grows when needed.
func DecodeUnsuback(body []byte, v Version, dst *Unsuback) error {
	id, off, err := readU16(body, 0)
	if err != nil {
		return err
	}
	if id == 0 {
		return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
	}
	dst.ID = id
	dst.Reasons = dst.Reasons[:0]
	if v != V5 {
		dst.Props.reset()
		if len(body) != 2 {
			return ErrTrailingBytes // 3.1.1: remaining length is 2
		}
		return nil
	}
	if off, err = decodeProps(body, off, ctxUnsuback, &dst.Props); err != nil {
		return err
	}
	for _, c := range body[off:] {
		if !codesUnsuback.has(ReasonCode(c)) {
			return ErrReasonCode // section 3.11.3
		}
		dst.Reasons = append(dst.Reasons, ReasonCode(c))
	}
	return nil
}
