package codec

// Validation runs off the hot path (at scenario load, or in a test server). Each Validate
// method first checks what the wire cannot represent (field lengths, values wider than their
// bits), then encodes the packet and runs the decoder over the bytes, so that what an encoder is
// allowed to send obeys exactly the rules a receiver enforces. It allocates.

const maxField = 1<<16 - 1

func validVersion(v Version) error {
	if !v.valid() {
		return ErrVersion
	}
	return nil
}

func checkLen(fields ...[]byte) error {
	for _, f := range fields {
		if len(f) > maxField {
			return ErrFieldTooLong
		}
	}
	return nil
}

func checkProps(p *Properties) error {
	if err := checkLen(p.ContentType, p.ResponseTopic, p.CorrelationData, p.AssignedClientID,
		p.AuthMethod, p.AuthData, p.ResponseInfo, p.ServerReference, p.ReasonString); err != nil {
		return err
	}
	if p.Present&^Mask(PropPayloadFormat, PropMessageExpiry, PropContentType, PropResponseTopic,
		PropCorrelationData, PropSessionExpiry, PropAssignedClientID, PropServerKeepAlive,
		PropAuthMethod, PropAuthData, PropRequestProblemInfo, PropWillDelay, PropRequestResponseInfo,
		PropResponseInfo, PropServerReference, PropReasonString, PropReceiveMaximum,
		PropTopicAliasMaximum, PropTopicAlias, PropMaximumQoS, PropRetainAvailable,
		PropMaximumPacketSize, PropWildcardSubAvailable, PropSubIDAvailable, PropSharedSubAvailable) != 0 {
		return ErrUnknownProperty // includes the repeatable ones, which have no Present bit
	}
	for v := range p.SubIDs.All() {
		if v > MaxRemainingLength {
			return ErrPropertyValue
		}
	}
	if propsLen(p) > MaxRemainingLength {
		return ErrFieldTooLong
	}
	return nil
}

func checkQoS(q QoS) error {
	if q > 2 {
		return ErrInvalidQoS
	}
	return nil
}

// roundTrip frames wire and hands the header and body to decode.
func roundTrip(wire []byte, decode func(h Header, body []byte) error) error {
	if len(wire) > MaxRemainingLength+5 {
		return ErrFieldTooLong
	}
	h, body, n, err := Split(wire, 0)
	if err != nil {
		return err
	}
	if n != len(wire) {
		return ErrFieldTooLong // the remaining length did not fit its four bytes
	}
	return decode(h, body)
}

// Validate checks that p is a CONNECT that version v may send.
func (p *Connect) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkLen(p.ClientID, p.WillTopic, p.WillPayload, p.Username, p.Password); err != nil {
		return err
	}
	if err := checkQoS(p.WillQoS); err != nil {
		return err
	}
	if err := checkProps(&p.Props); err != nil {
		return err
	}
	if err := checkProps(&p.WillProps); err != nil {
		return err
	}
	if v != V5 && (!p.Props.empty() || !p.WillProps.empty()) {
		return ErrPropertyNotAllowed
	}
	return roundTrip(AppendConnect(nil, p, v), func(_ Header, body []byte) error {
		_, err := DecodeConnect(body, new(Connect))
		return err
	})
}

// Validate checks that p is a CONNACK that version v may send.
func (p *Connack) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	return roundTrip(AppendConnack(nil, p, v), func(_ Header, body []byte) error {
		return DecodeConnack(body, v, new(Connack))
	})
}

func checkV5Props(p *Properties, v Version) error {
	if err := checkProps(p); err != nil {
		return err
	}
	if v != V5 && !p.empty() {
		return ErrPropertyNotAllowed // properties exist in 5.0 only
	}
	return nil
}

// Validate checks that p is a PUBLISH that version v may send.
func (p *Publish) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkLen(p.Topic); err != nil {
		return err
	}
	if err := checkQoS(p.QoS); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	return roundTrip(AppendPublish(nil, p, v), func(h Header, body []byte) error {
		return DecodePublish(h, body, v, new(Publish))
	})
}

// Validate checks that p is an acknowledgement of type t (TypePuback, TypePubrec, TypePubrel or
// TypePubcomp) that version v may send.
func (p *Ack) Validate(t PacketType, v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	if v != V5 && p.Reason != ReasonSuccess {
		return ErrReasonCode // reason codes exist in 5.0 only
	}
	var wire []byte
	var decode func([]byte, Version, *Ack) error
	switch t {
	case TypePuback:
		wire, decode = AppendPuback(nil, p, v), DecodePuback
	case TypePubrec:
		wire, decode = AppendPubrec(nil, p, v), DecodePubrec
	case TypePubrel:
		wire, decode = AppendPubrel(nil, p, v), DecodePubrel
	case TypePubcomp:
		wire, decode = AppendPubcomp(nil, p, v), DecodePubcomp
	default:
		return ErrReservedType
	}
	return roundTrip(wire, func(_ Header, body []byte) error { return decode(body, v, new(Ack)) })
}

// Validate checks that p is a SUBSCRIBE that version v may send.
func (p *Subscribe) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	for i := range p.Filters {
		s := &p.Filters[i]
		if err := checkLen(s.Filter); err != nil {
			return err
		}
		if err := checkQoS(s.QoS); err != nil {
			return err
		}
		if s.RetainHandling > 2 || (v != V5 && (s.NoLocal || s.RetainAsPublished || s.RetainHandling != 0)) {
			return ErrSubscriptionOptions
		}
	}
	return roundTrip(AppendSubscribe(nil, p, v), func(_ Header, body []byte) error {
		return DecodeSubscribe(body, v, new(Subscribe))
	})
}

// Validate checks that p is a SUBACK that version v may send.
func (p *Suback) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	return roundTrip(AppendSuback(nil, p, v), func(_ Header, body []byte) error {
		return DecodeSuback(body, v, new(Suback))
	})
}

// Validate checks that p is an UNSUBSCRIBE that version v may send.
func (p *Unsubscribe) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	if err := checkLen(p.Filters...); err != nil {
		return err
	}
	return roundTrip(AppendUnsubscribe(nil, p, v), func(_ Header, body []byte) error {
		return DecodeUnsubscribe(body, v, new(Unsubscribe))
	})
}

// Validate checks that p is an UNSUBACK that version v may send.
func (p *Unsuback) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	if v != V5 && len(p.Reasons) > 0 {
		return ErrReasonCode // reason codes exist in 5.0 only
	}
	return roundTrip(AppendUnsuback(nil, p, v), func(_ Header, body []byte) error {
		return DecodeUnsuback(body, v, new(Unsuback))
	})
}

// Validate checks that p is a DISCONNECT that version v may send.
func (p *Disconnect) Validate(v Version) error {
	if err := validVersion(v); err != nil {
		return err
	}
	if err := checkV5Props(&p.Props, v); err != nil {
		return err
	}
	if v != V5 && p.Reason != ReasonNormalDisconnection {
		return ErrReasonCode // reason codes exist in 5.0 only
	}
	return roundTrip(AppendDisconnect(nil, p, v), func(_ Header, body []byte) error {
		return DecodeDisconnect(body, v, new(Disconnect))
	})
}

// Validate checks that p is an AUTH packet (5.0 only).
func (p *Auth) Validate() error {
	if err := checkProps(&p.Props); err != nil {
		return err
	}
	return roundTrip(AppendAuth(nil, p), func(_ Header, body []byte) error {
		return DecodeAuth(body, V5, new(Auth))
	})
}
