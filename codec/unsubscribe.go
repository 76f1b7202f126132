package codec

// Unsubscribe is an UNSUBSCRIBE packet.
type Unsubscribe struct {
	ID      uint16
	Props   Properties // 5.0 only
	Filters [][]byte
}

func (p *Unsubscribe) sizes(v Version) (rem, pl int) {
	rem = 2
	if v == V5 {
		pl = propsLen(&p.Props)
		rem += propsWireLen(pl)
	}
	for _, f := range p.Filters {
		rem += 2 + len(f)
	}
	return rem, pl
}

// SizeUnsubscribe returns the number of bytes AppendUnsubscribe appends.
func SizeUnsubscribe(p *Unsubscribe, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendUnsubscribe appends the UNSUBSCRIBE packet p to dst and returns the extended slice. p
// must have passed Validate.
func AppendUnsubscribe(dst []byte, p *Unsubscribe, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeUnsubscribe)<<4|2, rem)
	dst = appendU16(dst, p.ID)
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	for _, f := range p.Filters {
		dst = appendStr(dst, f)
	}
	return dst
}

// DecodeUnsubscribe decodes the body of an UNSUBSCRIBE into dst. The filters alias body; the
// Filters slice reuses dst's backing array and grows it when needed.
func DecodeUnsubscribe(body []byte, v Version, dst *Unsubscribe) error {
	id, off, err := readU16(body, 0)
	if err != nil {
		return err
	}
	if id == 0 {
		return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
	}
	dst.ID = id
	if v == V5 {
		if off, err = decodeProps(body, off, ctxUnsubscribe, &dst.Props); err != nil {
			return err
		}
	} else {
		dst.Props.reset()
	}
	dst.Filters = dst.Filters[:0]
	for off < len(body) {
		var f []byte
		if f, off, err = readStr(body, off); err != nil { // [MQTT-3.10.3-1]
			return err
		}
		if !validTopicFilter(f) {
			return ErrMalformedTopicFilter // [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.3-1]
		}
		dst.Filters = append(dst.Filters, f)
	}
	if len(dst.Filters) == 0 {
		return ErrNoTopicFilters // [MQTT-3.10.3-2]
	}
	return nil
}
