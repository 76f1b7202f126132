// Package codec is the MQTT 3.1.1 and 5.0 wire format: every control packet as a plain struct,
// append-style encoders (Append*, Size*), framing (Split) and decoders (Decode*) whose byte
// fields alias the input, the 5.0 properties, reason codes, and the validation rules of both
// specifications with a sentinel error per rule.
//
// # What it must not do
//
// codec imports nothing but the standard library. It does no I/O, starts no goroutines and keeps
// no state between calls except in structs the caller owns. All functions are safe for
// concurrent use on distinct arguments.
//
// # Encoding
//
// AppendX(dst, p, v) appends the wire form of p for protocol version v to dst and returns the
// extended slice; SizeX(p, v) is the exact number of bytes AppendX appends. Encoders never
// allocate beyond growing dst and never fail: their input must have passed the packet's
// Validate method, which runs when a scenario is loaded, not per packet.
//
// # Decoding
//
// Split frames the first complete packet of a buffer and rejects bad fixed headers (reserved
// packet type or flags, a fifth remaining-length byte, a packet larger than the caller's
// maximum) before the body has arrived. DecodeX(body, v, dst) then fills a struct the caller owns
// and reuses. Every []byte field of a decoded struct aliases body and is valid only as long as
// the caller keeps those bytes; convert to string only what must outlive the buffer. On error the
// contents of dst are unspecified. Decoders do not allocate, except that slices of
// subscriptions, topic filters and reason codes grow dst's backing arrays the first time.
//
// # Use
//
// A connection keeps one output buffer and one struct per packet type it receives, all owned by
// its event loop:
//
//	out = codec.AppendPublish(out, &pub, v) // many packets may share one write
//	...
//	h, body, n, err := codec.Split(in, maxPacket)
//	switch h.Type {
//	case codec.TypePuback:
//		err = codec.DecodePuback(body, v, &c.ack)
//	case codec.TypePublish:
//		err = codec.DecodePublish(h, body, v, &c.pub)
//	}
//
// PUBACK, PUBREC, PUBREL and PUBCOMP share one wire form and one struct, Ack; PINGREQ and
// PINGRESP have no struct. AUTH exists only in 5.0. A 3.1 session (CONNECT level 3, protocol
// name "MQIsdp") uses the 3.1.1 form of every other packet: pass V31 or V311, both work.
//
// # Validation
//
// Decoders enforce the rules of the specifications that a receiver can check on one packet
// (reserved bits, QoS 3, packet identifier 0, wildcards in topic names, UTF-8, properties per
// packet and their multiplicity and ranges, reason codes per packet, lengths that disagree).
// Rules that need session state (topic alias maximum, receive maximum, packet identifiers in
// use, subscription identifiers sent by a client) belong to the session, not to the codec.
// Validate methods run the same decoder over the encoded packet, after checking what the wire
// cannot represent (a QoS of 7, a 70000-byte topic), so encoder input and decoder input obey one
// set of rules.
//
// # Properties
//
// Properties holds every MQTT 5.0 property as a value field plus a presence bit in
// Properties.Present, because 0 and "" are legal values and pointers would escape to the heap.
// The two repeatable properties, User Property and Subscription Identifier, are kept in wire
// form (UserProps, SubIDs): a decoded one aliases the packet's property bytes and is read with
// an iterator, so decoding never allocates however many pairs arrive, and their order is kept.
//
// # Errors
//
// Every decoding failure is one of the Err* sentinels, an *Error that carries the MQTT 5.0
// reason code a receiver should send in its DISCONNECT (or CONNACK). Compare with errors.Is.
// The line that enforces a rule cites its clause, for example [MQTT-3.3.1-4]; clauses are from
// MQTT 5.0 unless marked 3.1.1.
//
// # Units
//
// Time fields keep the unit of the wire (KeepAlive in seconds, expiry intervals in seconds)
// rather than time.Duration, so that a decoded value re-encodes to the same bytes; each field's
// comment names its unit.
package codec
