package codec

// Subscription is one topic filter of a SUBSCRIBE with its options. NoLocal,
// RetainAsPublished and RetainHandling are 5.0 only.
type Subscription struct {
	Filter            []byte
	QoS               QoS // maximum QoS
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte // 0 send retained on subscribe, 1 only if new, 2 never
}

func (s *Subscription) options(v Version) byte {
	o := byte(s.QoS)
	if v == V5 {
		if s.NoLocal {
			o |= 0x04
		}
		if s.RetainAsPublished {
			o |= 0x08
		}
		o |= s.RetainHandling << 4
	}
	return o
}

// Subscribe is a SUBSCRIBE packet. A 5.0 subscription identifier goes in Props.SubIDs.
type Subscribe struct {
	ID      uint16
	Props   Properties // 5.0 only
	Filters []Subscription
}

func (p *Subscribe) sizes(v Version) (rem, pl int) {
	rem = 2
	if v == V5 {
		pl = propsLen(&p.Props)
		rem += propsWireLen(pl)
	}
	for i := range p.Filters {
		rem += 3 + len(p.Filters[i].Filter)
	}
	return rem, pl
}

// SizeSubscribe returns the number of bytes AppendSubscribe appends.
func SizeSubscribe(p *Subscribe, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendSubscribe appends the SUBSCRIBE packet p to dst and returns the extended slice. p must
// have passed Validate.
func AppendSubscribe(dst []byte, p *Subscribe, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypeSubscribe)<<4|2, rem)
	dst = appendU16(dst, p.ID)
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	for i := range p.Filters {
		dst = appendStr(dst, p.Filters[i].Filter)
		dst = append(dst, p.Filters[i].options(v))
	}
	return dst
}

// DecodeSubscribe decodes the body of a SUBSCRIBE into dst. The filters alias body; the
// Filters slice reuses dst's backing array and grows it when needed.
func DecodeSubscribe(body []byte, v Version, dst *Subscribe) error {
	id, off, err := readU16(body, 0)
	if err != nil {
		return err
	}
	if id == 0 {
		return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
	}
	dst.ID = id
	if v == V5 {
		if off, err = decodeProps(body, off, ctxSubscribe, &dst.Props); err != nil {
			return err
		}
	} else {
		dst.Props.reset()
	}
	dst.Filters = dst.Filters[:0]
	for off < len(body) {
		var s Subscription
		if s.Filter, off, err = readStr(body, off); err != nil { // [MQTT-3.8.3-1]
			return err
		}
		if !validTopicFilter(s.Filter) {
			return ErrMalformedTopicFilter // [MQTT-4.7.1-2] [MQTT-4.7.1-3] [MQTT-4.7.3-1]
		}
		var o byte
		if o, off, err = readByte(body, off); err != nil {
			return err
		}
		s.QoS = QoS(o & 3)
		if s.QoS == 3 {
			return ErrInvalidQoS // [MQTT-3.8.3-4] 3.1.1: [MQTT-3-8.3-4]
		}
		if v != V5 {
			if o&0xfc != 0 {
				return ErrSubscriptionOptions // 3.1.1: [MQTT-3-8.3-4] reserved bits
			}
		} else {
			if o&0xc0 != 0 {
				return ErrSubscriptionOptions // [MQTT-3.8.3-5] reserved bits
			}
			s.NoLocal = o&0x04 != 0
			s.RetainAsPublished = o&0x08 != 0
			s.RetainHandling = o >> 4 & 3
			if s.RetainHandling == 3 {
				return ErrSubscriptionOptions // section 3.8.3.1: retain handling 3
			}
			if s.NoLocal && isShared(s.Filter) {
				return ErrSubscriptionOptions // [MQTT-3.8.3-4] no local on a shared subscription
			}
		}
		dst.Filters = append(dst.Filters, s)
	}
	if len(dst.Filters) == 0 {
		return ErrNoTopicFilters // [MQTT-3.8.3-2] 3.1.1: [MQTT-3.8.3-3]
	}
	return nil
}
