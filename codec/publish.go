package codec

// Publish is a PUBLISH packet. ID is used only when QoS > 0. In 5.0 an empty Topic with a
// Topic Alias property refers to an alias set earlier on the connection.
type Publish struct {
	Dup     bool
	QoS     QoS
	Retain  bool
	Topic   []byte
	ID      uint16
	Props   Properties // 5.0 only
	Payload []byte
}

func (p *Publish) headerFlags() byte {
	f := byte(p.QoS) << 1
	if p.Dup {
		f |= 8
	}
	if p.Retain {
		f |= 1
	}
	return f
}

func (p *Publish) sizes(v Version) (rem, pl int) {
	rem = 2 + len(p.Topic) + len(p.Payload)
	if p.QoS > 0 {
		rem += 2
	}
	if v == V5 {
		pl = propsLen(&p.Props)
		rem += propsWireLen(pl)
	}
	return rem, pl
}

// SizePublish returns the number of bytes AppendPublish appends.
func SizePublish(p *Publish, v Version) int {
	rem, _ := p.sizes(v)
	return headerLen(rem) + rem
}

// AppendPublish appends the PUBLISH packet p to dst and returns the extended slice. p must have
// passed Validate; AppendPublish does not re-check it.
func AppendPublish(dst []byte, p *Publish, v Version) []byte {
	rem, pl := p.sizes(v)
	dst = appendHeader(dst, byte(TypePublish)<<4|p.headerFlags(), rem)
	dst = appendStr(dst, p.Topic)
	if p.QoS > 0 {
		dst = append(dst, byte(p.ID>>8), byte(p.ID))
	}
	if v == V5 {
		dst = appendProps(dst, &p.Props, pl)
	}
	return append(dst, p.Payload...)
}

// DecodePublish decodes a PUBLISH (its fixed header h and body) into dst. Topic, Payload and
// the properties alias body.
func DecodePublish(h Header, body []byte, v Version, dst *Publish) error {
	qos := QoS(h.Flags >> 1 & 3)
	if qos == 3 {
		return ErrInvalidQoS // [MQTT-3.3.1-4]
	}
	dup := h.Flags&8 != 0
	if dup && qos == 0 {
		return ErrDupQoS0 // [MQTT-3.3.1-2]
	}
	topic, off, err := readBin(body, 0)
	if err != nil {
		return err
	}
	if err = checkTopicName(topic); err != nil {
		return err // [MQTT-3.3.2-1] [MQTT-3.3.2-2]
	}
	dst.ID = 0
	if qos > 0 {
		if len(body)-off < 2 {
			return ErrTruncated
		}
		dst.ID = uint16(body[off])<<8 | uint16(body[off+1])
		off += 2
		if dst.ID == 0 {
			return ErrZeroPacketID // [MQTT-2.2.1-3] 3.1.1: [MQTT-2.3.1-1]
		}
	}
	if v == V5 {
		if off, err = decodeProps(body, off, ctxPublish, &dst.Props); err != nil {
			return err
		}
		if len(topic) == 0 && dst.Props.Present&(1<<PropTopicAlias) == 0 {
			return ErrMalformedTopic // [MQTT-3.3.2-1] section 3.3.2.1: empty topic without an alias
		}
	} else {
		dst.Props.reset()
		if len(topic) == 0 {
			return ErrMalformedTopic // 3.1.1: [MQTT-4.7.3-1]
		}
	}
	dst.Dup, dst.QoS, dst.Retain = dup, qos, h.Flags&1 != 0
	dst.Topic = topic
	dst.Payload = body[off:]
	return nil
}
