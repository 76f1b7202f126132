package codec

// Ack is a PUBACK, PUBREC, PUBREL or PUBCOMP packet: the four share one wire form, so one
// struct serves them and the functions name the type. Reason and Props are 5.0 only.
type Ack struct {
	ID     uint16
	Reason ReasonCode
	Props  Properties
}

// sizes returns the remaining length and property length. In 5.0 the reason code and property
// length are omitted when they are Success and empty (section 3.4.2.1), the shortest form.
func (p *Ack) sizes(v Version) (rem, pl int) {
	if v != V5 {
		return 2, 0
	}
	pl = propsLen(&p.Props)
	switch {
	case pl > 0:
		return 3 + propsWireLen(pl), pl
	case p.Reason != ReasonSuccess:
		return 3, 0
	}
	return 2, 0
}

func appendAck(dst []byte, first byte, p *Ack, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, first, rem)
	dst = append(dst, byte(p.ID>>8), byte(p.ID))
	if rem > 2 {
		dst = append(dst, byte(p.Reason))
		if rem > 3 {
			dst = appendProps(dst, &p.Props, pl)
		}
	}
	return dst
}

// SizeAck returns the number of bytes AppendPuback (and Pubrec, Pubrel, Pubcomp) appends.
func SizeAck(p *Ack, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendPuback appends p as a PUBACK to dst and returns the extended slice. p must have passed
// ValidatePuback.
func AppendPuback(dst []byte, p *Ack, v Version) []byte {
	return appendAck(dst, byte(TypePuback)<<4, p, v)
}

// AppendPubrec appends p as a PUBREC to dst and returns the extended slice.
func AppendPubrec(dst []byte, p *Ack, v Version) []byte {
	return appendAck(dst, byte(TypePubrec)<<4, p, v)
}

// AppendPubrel appends p as a PUBREL (fixed header flags 0010) to dst and returns the extended
// slice.
func AppendPubrel(dst []byte, p *Ack, v Version) []byte {
	return appendAck(dst, byte(TypePubrel)<<4|2, p, v)
}

// AppendPubcomp appends p as a PUBCOMP to dst and returns the extended slice.
func AppendPubcomp(dst []byte, p *Ack, v Version) []byte {
	return appendAck(dst, byte(TypePubcomp)<<4, p, v)
}

func decodeAck(body []byte, v Version, ctx uint16, codes *codeSet, dst *Ack) error {
	if len(body) < 2 {
		return ErrTruncated
	}
	dst.ID = uint16(body[0])<<8 | uint16(body[1])
	if dst.ID == 0 {
		return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
	}
	dst.Reason = ReasonSuccess
	if v != V5 {
		dst.Props.reset()
		if len(body) != 2 {
			return ErrTrailingBytes // 3.1.1: remaining length is 2
		}
		return nil
	}
	if len(body) == 2 {
		dst.Props.reset()
		return nil // section 3.4.2.1: no reason code means Success
	}
	dst.Reason = ReasonCode(body[2])
	if !codes.has(dst.Reason) {
		return ErrReasonCode // section 3.4.2.1 (3.5.2.1, 3.6.2.1, 3.7.2.1)
	}
	if len(body) == 3 {
		dst.Props.reset()
		return nil // section 3.4.2.2.1: no property length means no properties
	}
	off, err := decodeProps(body, 3, ctx, &dst.Props)
	if err != nil {
		return err
	}
	if off != len(body) {
		return ErrTrailingBytes
	}
	return nil
}

// DecodePuback decodes the body of a PUBACK into dst. The properties alias body.
func DecodePuback(body []byte, v Version, dst *Ack) error {
	return decodeAck(body, v, ctxPuback, &codesPubAck, dst)
}

// DecodePubrec decodes the body of a PUBREC into dst. The properties alias body.
func DecodePubrec(body []byte, v Version, dst *Ack) error {
	return decodeAck(body, v, ctxPubrec, &codesPubAck, dst)
}

// DecodePubrel decodes the body of a PUBREL into dst. The properties alias body.
func DecodePubrel(body []byte, v Version, dst *Ack) error {
	return decodeAck(body, v, ctxPubrel, &codesPubRel, dst)
}

// DecodePubcomp decodes the body of a PUBCOMP into dst. The properties alias body.
func DecodePubcomp(body []byte, v Version, dst *Ack) error {
	return decodeAck(body, v, ctxPubcomp, &codesPubRel, dst)
}
