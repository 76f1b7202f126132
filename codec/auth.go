package codec

// Auth is an AUTH packet (MQTT 5.0 only), used for enhanced authentication.
type Auth struct {
	Reason ReasonCode
	Props  Properties
}

// sizes returns the remaining length and property length: the reason code and property length
// are left out only when they are Success and empty (section 3.15.2.1), the one short form the
// specification names for AUTH.
func (p *Auth) sizes() (rem, pl int) {
	pl = propsLen(&p.Props)
	if pl == 0 && p.Reason == ReasonSuccess {
		return 0, 0
	}
	return 1 + propsWireLen(pl), pl
}

// SizeAuth returns the number of bytes AppendAuth appends.
func SizeAuth(p *Auth) int {
	rem, _ := p.sizes()
	return headerLen(rem) + rem
}

// AppendAuth appends the AUTH packet p to dst and returns the extended slice. p must have
// passed Validate. AUTH exists only in 5.0, so there is no version argument.
func AppendAuth(dst []byte, p *Auth) []byte {
	rem, pl := p.sizes()
	dst = appendHeader(dst, byte(TypeAuth)<<4, rem)
	if rem > 0 {
		dst = append(dst, byte(p.Reason))
		if rem > 1 {
			dst = appendProps(dst, &p.Props, pl)
		}
	}
	return dst
}

// DecodeAuth decodes the body of an AUTH into dst. v must be V5: AUTH is a reserved packet
// type in 3.1.1 and decoding it there fails with ErrReservedType. The properties alias body.
func DecodeAuth(body []byte, v Version, dst *Auth) error {
	if v != V5 {
		return ErrReservedType // 3.1.1: [MQTT-2.2.1] type 15 is reserved
	}
	dst.Reason = ReasonSuccess
	if len(body) < 2 {
		dst.Props.reset()
	}
	if len(body) == 0 {
		return nil // section 3.15.2.1: no reason code means Success
	}
	dst.Reason = ReasonCode(body[0])
	if !codesAuth.has(dst.Reason) {
		return ErrReasonCode // section 3.15.2.1
	}
	if len(body) == 1 {
		return nil // accepted like DISCONNECT's short form, although AppendAuth never writes it
	}
	off, err := decodeProps(body, 1, ctxAuth, &dst.Props)
	if err != nil {
		return err
	}
	if off != len(body) {
		return ErrTrailingBytes
	}
	return nil
}
