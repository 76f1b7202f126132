package codec

// Disconnect is a DISCONNECT packet. Reason and Props are 5.0 only.
type Disconnect struct {
	Reason ReasonCode
	Props  Properties
}

// sizes returns the remaining length and property length: in 5.0 the reason code and property
// length are left out when they are Normal disconnection and empty (section 3.14.2.1).
func (p *Disconnect) sizes(v Version) (rem, pl int) {
	if v != V5 {
		return 0, 0
	}
	pl = propsLen(&p.Props)
	switch {
	case pl > 0:
		return 1 + propsWireLen(pl), pl
	case p.Reason != ReasonNormalDisconnection:
		return 1, 0
	}
	return 0, 0
}

// SizeDisconnect returns the number of bytes AppendDisconnect appends.
func SizeDisconnect(p *Disconnect, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendDisconnect appends the DISCONNECT packet p to dst and returns the extended slice. p
// must have passed Validate.
func AppendDisconnect(dst []byte, p *Disconnect, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeDisconnect)<<4, rem)
	if rem > 0 {
		dst = append(dst, byte(p.Reason))
		if rem > 1 {
			dst = appendProps(dst, &p.Props, pl)
		}
	}
	return dst
}

// DecodeDisconnect decodes the body of a DISCONNECT into dst. The properties alias body.
func DecodeDisconnect(body []byte, v Version, dst *Disconnect) error {
	dst.Reason = ReasonNormalDisconnection
	if v != V5 || len(body) < 2 {
		dst.Props.reset()
	}
	if v != V5 {
		if len(body) != 0 {
			return ErrTrailingBytes // 3.1.1: section 3.14.2, no variable header
		}
		return nil
	}
	if len(body) == 0 {
		return nil // section 3.14.2.1: no reason code means Normal disconnection
	}
	dst.Reason = ReasonCode(body[0])
	if !codesDisconnect.has(dst.Reason) {
		return ErrReasonCode // section 3.14.2.1
	}
	if len(body) == 1 {
		return nil // section 3.14.2.2.1: no property length means no properties
	}
	off, err := decodeProps(body, 1, ctxDisconnect, &dst.Props)
	if err != nil {
		return err
	}
	if off != len(body) {
		return ErrTrailingBytes
	}
	return nil
}
