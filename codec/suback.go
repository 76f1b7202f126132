package codec

// Suback is a SUBACK packet: one reason code (3.1.1: return code) per filter of the SUBSCRIBE,
// in order.
type Suback struct {
	ID      uint16
	Props   Properties // 5.0 only
	Reasons []ReasonCode
}

func (p *Suback) sizes(v Version) (rem, pl int) {
	rem = 2 + len(p.Reasons)
	if v == V5 {
		pl = propsLen(&p.Props)
		rem += propsWireLen(pl)
	}
	return rem, pl
}

// SizeSuback returns the number of bytes AppendSuback appends.
func SizeSuback(p *Suback, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendSuback appends the SUBACK packet p to dst and returns the extended slice. p must have
// passed Validate.
func AppendSuback(dst []byte, p *Suback, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeSuback)<<4, rem)
	dst = appendU16(dst, p.ID)
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	for _, r := range p.Reasons {
		dst = append(dst, byte(r))
	}
	return dst
}

// DecodeSuback decodes the body of a SUBACK into dst. The properties alias body; Reasons is
// copied into dst's backing array, which grows when needed.
func DecodeSuback(body []byte, v Version, dst *Suback) error {
	id, off, err := readU16(body, 0)
	if err != nil {
		return err
	}
	if id == 0 {
		return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
	}
	dst.ID = id
	codes := &codesSuback311
	if v == V5 {
		codes = &codesSuback5
		if off, err = decodeProps(body, off, ctxSuback, &dst.Props); err != nil {
			return err
		}
	} else {
		dst.Props.reset()
	}
	dst.Reasons = dst.Reasons[:0]
	for _, c := range body[off:] {
		if !codes.has(ReasonCode(c)) {
			return ErrReasonCode // section 3.9.3 3.1.1: [MQTT-3.9.3-2]
		}
		dst.Reasons = append(dst.Reasons, ReasonCode(c))
	}
	return nil
}
