package reactor

import (
	"errors"
	"fmt"

	"github.com/mqblast/mqblast/codec"
)

// Rules the client enforces on what a broker sends. The errors handle returns wrap them
// with the packet's particulars, which Observer.Failed or Dropped get as the example; they
// are built only when a connection ends on them.
var (
	// ErrInboundLimit reports a packet over the client's inbound limit (Config.MaxInbound, or
	// the smaller Maximum Packet Size of the client's 5.0 CONNECT properties).
	ErrInboundLimit = errors.New("reactor: packet over the client's inbound limit")
	// ErrTopicAlias reports a 5.0 PUBLISH with a Topic Alias above the Topic Alias Maximum
	// the client announced (0 when it announced none).
	ErrTopicAlias = errors.New("reactor: topic alias over the client's maximum")
	// ErrUnknownAlias reports a 5.0 PUBLISH with an empty topic and a Topic Alias that no
	// PUBLISH of the connection has set.
	ErrUnknownAlias = errors.New("reactor: topic alias not set on the connection")
)

// ruleError is a broken rule with its example text.
type ruleError struct {
	err  error // the sentinel
	text string
}

func (e *ruleError) Error() string { return e.text }
func (e *ruleError) Unwrap() error { return e.err }

// rxState is what a client remembers as a receiver across packets: the QoS 2 packet ids
// it has acknowledged with PUBREC and not yet seen released by PUBREL, and the 5.0 topic
// aliases the broker set on the connection. It lives in its loop (loop.rx) by client, so
// that the ids survive a reconnect to a session the broker kept; it is created by the
// first QoS 2 PUBLISH or by a CONNACK to a CONNECT that announced a Topic Alias Maximum.
// After warm-up nothing in it allocates: ids and topics reuse their arrays.
type rxState struct {
	qos2     []uint16 // unreleased ids, in no order: a few are in flight at a time
	aliasMax uint16   // the Topic Alias Maximum of the connection's CONNECT (0: none)
	aliases  [][]byte // aliases[a-1] is alias a's topic (empty: not set on this connection)
}

// rxConnected prepares s's receiver state at its CONNACK: the QoS 2 ids are kept only if
// the broker kept the session, the aliases never (they are per connection).
func (l *loop) rxConnected(s *session, sessionPresent bool) {
	am := uint16(0)
	if sp := s.spec; sp != nil && sp.Version == 5 && sp.Props != nil && sp.Props.Has(codec.PropTopicAliasMaximum) {
		am = sp.Props.TopicAliasMaximum
	}
	r := l.rx[s.client]
	if r == nil {
		if am == 0 {
			return
		}
		r = l.rxFor(s.client)
	}
	if !sessionPresent {
		r.qos2 = r.qos2[:0] // a new session: its state is discarded [MQTT-3.2.2-5]
	}
	r.aliasMax = am
	for i := range r.aliases {
		r.aliases[i] = r.aliases[i][:0] // [MQTT-3.3.2-7] aliases end with the connection
	}
}

// rxFor returns client's receiver state, creating it.
func (l *loop) rxFor(client int32) *rxState {
	r := l.rx[client]
	if r == nil {
		r = &rxState{}
		if l.rx == nil {
			l.rx = map[int32]*rxState{}
		}
		l.rx[client] = r
	}
	return r
}

// qos2First remembers id, of a QoS 2 PUBLISH that s received, until its PUBREL. It reports
// false if id was remembered already: the PUBLISH is one the client has (a DUP re-send, or
// a broker that did not see the PUBREC).
func (l *loop) qos2First(s *session, id uint16) bool {
	r := l.rxFor(s.client)
	for _, x := range r.qos2 {
		if x == id {
			return false
		}
	}
	r.qos2 = append(r.qos2, id)
	return true
}

// qos2Release forgets id, released by a PUBREL, and reports whether it was remembered.
// A later PUBLISH with id is a new message ([MQTT-4.3.3-12]; 3.1.1: [MQTT-4.3.3-2]).
func (l *loop) qos2Release(s *session, id uint16) bool {
	r := l.rx[s.client]
	if r == nil {
		return false
	}
	for i, x := range r.qos2 {
		if x == id {
			last := len(r.qos2) - 1
			r.qos2[i] = r.qos2[last]
			r.qos2 = r.qos2[:last]
			return true
		}
	}
	return false
}

// resolveAlias checks the Topic Alias of a 5.0 PUBLISH that s received against the Topic
// Alias Maximum the client announced, sets it when the PUBLISH has a topic and replaces an
// empty topic with the alias's. The topic outlives the read buffer, so it is copied: an
// allocation only when an alias is set to a topic longer than the one it had.
func (l *loop) resolveAlias(s *session, pk *codec.Publish) error {
	a := pk.Props.TopicAlias
	r := l.rx[s.client]
	am := uint16(0)
	if r != nil {
		am = r.aliasMax
	}
	if a > am { // [MQTT-3.3.2-11] [MQTT-3.1.2-27]
		return &ruleError{ErrTopicAlias, fmt.Sprintf(
			"PUBLISH with Topic Alias %d over the client's Topic Alias Maximum %d [MQTT-3.3.2-11]", a, am)}
	}
	i := int(a) - 1 // a >= 1: the codec refuses 0 [MQTT-3.3.2-8]
	if len(pk.Topic) > 0 {
		for len(r.aliases) <= i {
			r.aliases = append(r.aliases, nil)
		}
		r.aliases[i] = append(r.aliases[i][:0], pk.Topic...) // [MQTT-3.3.2-10]
		return nil
	}
	if i >= len(r.aliases) || len(r.aliases[i]) == 0 {
		return &ruleError{ErrUnknownAlias, fmt.Sprintf(
			"PUBLISH with an empty topic and Topic Alias %d, which the connection has not set (section 3.3.2.3.4)", a)}
	}
	pk.Topic = r.aliases[i]
	return nil
}

// overLimit describes the packet at the start of in, which codec.Split found over s's
// inbound limit: its fixed header is complete.
func (l *loop) overLimit(s *session, in []byte) error {
	rem, i := 0, 1
	for shift := 0; i < len(in) && i < 5; shift += 7 {
		c := in[i]
		i++
		rem |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
	}
	hint := "raise it with --max-packet-size"
	if int(s.maxIn) < l.e.maxIn {
		hint = "the Maximum Packet Size of the scenario's CONNECT properties"
	}
	return &ruleError{ErrInboundLimit, fmt.Sprintf("%s of %d bytes over the client's inbound limit %d (%s)",
		codec.PacketType(in[0]>>4), i+rem, s.maxIn, hint)}
}

// verdictOf returns the Cause an error of handle is reported with and the reason code of
// the 5.0 DISCONNECT that precedes the close.
func verdictOf(err error) (Cause, codec.ReasonCode) {
	var ce *codec.Error
	var we *wsError
	switch {
	case errors.As(err, &we):
		return CauseWebSocket, codec.ReasonProtocolError
	case errors.Is(err, ErrInboundLimit):
		return CauseClientLimit, codec.ReasonPacketTooLarge // the client's own limit, not the broker's fault
	case errors.Is(err, ErrTopicAlias):
		return CauseProtocol, codec.ReasonTopicAliasInvalid
	case errors.As(err, &ce):
		return CauseProtocol, ce.Code
	}
	return CauseProtocol, codec.ReasonProtocolError
}
