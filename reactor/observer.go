package reactor

import "time"

// Cause says why a connection failed to establish or was lost.
type Cause uint8

// Causes of failed and lost connections.
const (
	CauseRefused       Cause = iota // TCP connection refused (nothing listening)
	CauseTimeout                    // no TCP connection or no CONNACK within the timeout
	CauseAddrExhausted              // no free source port (EADDRNOTAVAIL)
	CauseFDLimit                    // out of file descriptors (EMFILE/ENFILE)
	CauseUnreachable                // no route, host or network unreachable, bad address
	CauseClosed                     // the broker closed the connection
	CauseProtocol                   // the broker sent something that is not valid MQTT
	CauseKeepalive                  // no PINGRESP within the ping timeout
	CauseNetwork                    // another socket error (reset, broken pipe, ...)
	CauseClientLimit                // a packet over the client's own inbound limit (Config.MaxInbound)
	CauseTLS                        // the TLS handshake failed (a certificate, a version, an alert), or the broker's TLS alert ended the connection
	CauseWebSocket                  // the WebSocket upgrade failed, or the broker broke WebSocket's rules
	// The loop's TLS record layer refused a record of the broker's, and the connection ended.
	CauseTLSRecordOverflow    // a record over 2^14+256 bytes, or its plaintext over 2^14
	CauseTLSBadRecordMAC      // a record that failed to authenticate
	CauseTLSUnexpectedMessage // a message TLS 1.3 does not allow after the handshake
	CauseTLSDecodeError       // a malformed message
	CauseTLSKeyUpdateStorm    // KeyUpdates without application data past a bound

	NumCauses // number of causes, for arrays indexed by Cause
)

var causeNames = [NumCauses]string{
	"refused", "timeout", "address_exhausted", "fd_limit", "unreachable",
	"closed_by_broker", "protocol_error", "keepalive_timeout", "network_error",
	"client_packet_limit", "tls_error", "websocket_error",
	"tls_record_overflow", "tls_bad_record_mac", "tls_unexpected_message", "tls_decode_error", "tls_key_update_storm",
}

// String returns the snake_case name used in results.
func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return "unknown"
}

// Observer receives the engine's events. Every method is called on the event loop whose
// index it is given, never concurrently for the same loop, so an implementation can keep
// one unsynchronised recorder per loop. Methods must not block.
type Observer interface {
	// Connected reports a CONNACK with a success code; latency runs from the start of the
	// TCP connect to the CONNACK.
	Connected(loop int, client int, latency time.Duration)
	// Reconnected reports a dropped client connected again after attempt reconnect
	// attempts (Config.Reconnect); latency is that of the successful attempt.
	Reconnected(loop int, client int, attempt int, latency time.Duration)
	// Refused reports a CONNACK with a failure code: an MQTT 3.1.1 return code (1-5) when
	// version is 3 or 4, a 5.0 reason code (0x80 and up) when it is 5. attempt is 0 for the
	// client's first connect (not retried: the client never connected) and counts its
	// reconnect attempts from 1, as Reconnected's does.
	Refused(loop int, client int, attempt int, version, code byte)
	// Failed reports a connect attempt that was never established; example is one error
	// text, attempt as Refused's.
	Failed(loop int, client int, attempt int, cause Cause, example string)
	// Dropped reports an established connection lost before the engine closed it.
	Dropped(loop int, client int, cause Cause, example string)
	// Ping reports a PINGREQ round trip.
	Ping(loop int, client int, rtt time.Duration)
	// Subscribed reports a SUBACK: failed of its filters were refused, the last with code.
	Subscribed(loop int, client int, failed int, code byte)
	// Published reports one PUBLISH handed whole to the kernel (written to its socket, not
	// merely queued); receivers is how many copies the broker should deliver, qos the QoS
	// it was written at (at 1 or 2 its exchange ends in Acked or PublishRefused, or is
	// reported unacknowledged by InFlightDropped or PublisherEnd), due its due time and at the write
	// time (CLOCK_REALTIME ns), lag how late the client itself was in building it (lateness
	// the broker caused by holding the publisher is not in it).
	Published(loop int, client int, receivers int, qos byte, due, at int64, lag time.Duration)
	// Unsent reports n scheduled messages of a publisher that were never written, and why.
	Unsent(loop int, client int, cause Unsent, n int)
	// Held reports that a publisher could not send for d (it had messages due): the
	// broker's flow control, its not reading, or no connection.
	Held(loop int, client int, hold Hold, d time.Duration)
	// InFlightDropped reports the messages (end.InFlight, valid only during the call) that
	// were written but never acknowledged when their connection ended and the session did
	// not survive (not re-sent), and end.Released those PUBREC'd whose PUBCOMP had not
	// come; end.Scheduled is 0.
	InFlightDropped(loop int, client int, end *PublisherEnd)
	// PublisherEnd reports a publisher's account at the end of publishing.
	PublisherEnd(loop int, client int, end *PublisherEnd)
	// Acked reports the end of a QoS 1 or 2 exchange the broker accepted (PUBACK or
	// PUBCOMP).
	Acked(loop int, client int)
	// PublishRefused reports a QoS 1 or 2 message the broker refused: a 5.0 PUBACK or
	// PUBREC whose reason code (code) is 0x80 or more. Its exchange ends there, Acked is
	// not called for it, and receivers are the copies the plan expected of it: the broker
	// said it will deliver none.
	PublishRefused(loop int, client int, receivers int, code byte)
	// BrokerDisconnect reports an established 5.0 connection the broker ended with a
	// DISCONNECT, in place of Dropped: code is its reason code, reason its Reason String
	// (nil: none), valid only during the call.
	BrokerDisconnect(loop int, client int, code byte, reason []byte)
	// Behaved reports something the broker did or announced that the plan did not ask for
	// (Behaviour), for n filters or messages of one client at once: asked is what the plan
	// asked for, got what the broker granted or said.
	Behaved(loop int, client int, b Behaviour, asked, got byte, n int)
	// Received reports one PUBLISH delivered to a client. Called per message: keep it cheap.
	Received(loop int, client int, m Message)
	// ResponseUnsent reports a request a responder (ClientSpec.Respond) did not answer: its
	// window of responses in flight was full (the broker's Receive Maximum), or the
	// response was over the broker's Maximum Packet Size. publisher is the request's
	// publisher number when measured (its header read), so that its expected response is
	// not counted lost.
	ResponseUnsent(loop int, client int, publisher uint32, measured bool)
}

// Behaviour is something a broker did or announced that differs from what the plan asked
// for; the engine adapts where MQTT says it must, and reports it (Observer.Behaved).
type Behaviour uint8

// Behaviours of a broker.
const (
	// BehaviourMaxQoS: a 5.0 CONNACK's Maximum QoS (got) is below the QoS the client
	// publishes at (asked); the publisher sends at the broker's maximum [MQTT-3.2.2-11].
	BehaviourMaxQoS Behaviour = iota
	// BehaviourNoRetain: a 5.0 CONNACK says Retain Available 0 and the client retains; the
	// publisher sends without the retain flag [MQTT-3.2.2-14].
	BehaviourNoRetain
	// BehaviourNoShared: a 5.0 CONNACK says Shared Subscription Available 0 and the
	// client's SUBSCRIBE has "$share/" filters: mqblast does not send it (no SUBACK, no
	// refusal), n counts its filters.
	BehaviourNoShared
	// BehaviourNoWildcard: a 5.0 CONNACK says Wildcard Subscription Available 0 and the
	// client's SUBSCRIBE has filters with '+' or '#' (and none shared the broker lacks):
	// mqblast does not send it, n counts its filters.
	BehaviourNoWildcard
	// BehaviourGrantedQoS: a SUBACK granted QoS got to n filters that asked QoS asked.
	BehaviourGrantedQoS
	// BehaviourClosedQoS2: the broker closed a 3.1.1 publisher's connection while QoS 2
	// messages were in flight, without a word (3.1.1 has none): a broker whose maximum QoS
	// is 1 does.
	BehaviourClosedQoS2
	// BehaviourAnswered311: a 5.0 CONNECT was answered by a 3.1.1 CONNACK whose return
	// code is got: the broker does not speak MQTT 5.0. The client is reported Refused.
	BehaviourAnswered311
	// BehaviourPubackQoS2: the broker answered a QoS 2 PUBLISH with a PUBACK, QoS 1's
	// acknowledgement (RabbitMQ 3.10 does): the message was taken at QoS 1, at least once,
	// not exactly once. It ends the exchange as an acknowledgement; n counts messages.
	BehaviourPubackQoS2
	// BehaviourPubcompNotFound: a PUBCOMP with reason 0x92 (packet identifier not found)
	// ended a QoS 2 exchange whose PUBREC had accepted the message: it counts as
	// acknowledged; n counts messages.
	BehaviourPubcompNotFound
	// BehaviourSessionNotKept: a client with Clean Session 0 (5.0: Clean Start 0 and a
	// Session Expiry not yet run out since its connection ended) reconnected, and the
	// broker's CONNACK said Session Present 0: the broker did not keep its session (a
	// restart without persistence does that), and with it what was queued for the client.
	BehaviourSessionNotKept
	NumBehaviours // number of behaviours, for arrays indexed by Behaviour
)

var behaviourNames = [NumBehaviours]string{
	"max_qos", "retain_unavailable", "shared_unavailable", "wildcard_unavailable", "granted_qos",
	"closed_qos2_publisher", "answered_as_3_1_1", "puback_for_qos_2",
	"pubcomp_id_not_found", "session_not_kept",
}

// String returns the snake_case name used in results.
func (b Behaviour) String() string {
	if b < NumBehaviours {
		return behaviourNames[b]
	}
	return "unknown"
}

// Unsent says why a scheduled message was never written to its socket, so that every
// scheduled message is accounted for: scheduled = published + unsent.
type Unsent uint8

// Causes of unsent messages.
const (
	UnsentDisconnected Unsent = iota // the publisher had no connection when it was due
	UnsentFlowControl                // the in-flight window (Receive Maximum) stayed full until the end
	UnsentTooLarge                   // larger than the broker's Maximum Packet Size
	UnsentBackPressure               // the socket held more than the queue bound: the broker was not reading
	UnsentNotRead                    // encoded, but still waiting for the socket at the end
	UnsentInterrupted                // due before the run was interrupted, not yet sent
	UnsentBehind                     // due, connected, window open, but the client had not sent it by the end
	NumUnsent                        // number of causes, for arrays indexed by Unsent
)

var unsentNames = [NumUnsent]string{
	"disconnected", "flow_control", "too_large", "back_pressure", "not_read", "interrupted", "behind",
}

// String returns the snake_case name used in results.
func (u Unsent) String() string {
	if u < NumUnsent {
		return unsentNames[u]
	}
	return "unknown"
}

// Hold says what kept a connected or disconnected publisher from sending while its
// messages fell due: each is the broker's doing, not the client's.
type Hold uint8

// Holds of a publisher.
const (
	HoldDisconnected Hold = iota // no connection
	HoldFlowControl              // the in-flight window was full: acknowledgements came late
	HoldBackPressure             // the socket did not take the bytes: the broker did not read
	NumHolds
)

var holdNames = [NumHolds]string{"disconnected", "flow_control", "back_pressure"}

// String returns the snake_case name used in results.
func (h Hold) String() string {
	if h < NumHolds {
		return holdNames[h]
	}
	return "unknown"
}

// PublisherEnd is a publisher's account at the end of publishing (Engine.FinishPublishing).
type PublisherEnd struct {
	Number    uint32 // the publisher number its headers carry
	Receivers int    // copies the broker should deliver of each message
	// TopicReceivers, of a publisher that cycles over topics reaching different
	// receivers, are the copies of a message by its topic (ReceiversOf); read-only.
	TopicReceivers []int
	// Expected are the copies the broker should deliver of the messages it wrote: the
	// receivers its Published calls gave, summed (PublisherEnd's; 0 in InFlightDropped's).
	Expected int64
	// Scheduled is the messages due before the stop (or message_count): published + unsent.
	Scheduled int64
	// InFlight are the sequence numbers written on the open connection and not
	// acknowledged (QoS 1 and 2): no PUBACK (QoS 1) or no PUBREC (QoS 2). Valid only
	// during the call.
	InFlight []uint32
	// QoS is the QoS the publisher writes at (InFlight's: 1 awaits a PUBACK, 2 a PUBREC).
	QoS byte
	// Released are its QoS 2 messages PUBREC'd and PUBREL'd whose PUBCOMP had not come:
	// the broker took them, but their exchange did not end (not in InFlight).
	Released int
}

// ReceiversOf returns the copies the broker should deliver of the publisher's message
// seq: its topic's (TopicReceivers), or Receivers.
func (e *PublisherEnd) ReceiversOf(seq uint32) int {
	if rs := e.TopicReceivers; len(rs) > 0 {
		return rs[seq%uint32(len(rs))]
	}
	return e.Receivers
}

// NopObserver ignores every event. Embed it to implement only the events of interest.
type NopObserver struct{}

// Connected implements Observer.
func (NopObserver) Connected(int, int, time.Duration) {}

// Reconnected implements Observer.
func (NopObserver) Reconnected(int, int, int, time.Duration) {}

// Refused implements Observer.
func (NopObserver) Refused(int, int, int, byte, byte) {}

// Failed implements Observer.
func (NopObserver) Failed(int, int, int, Cause, string) {}

// Dropped implements Observer.
func (NopObserver) Dropped(int, int, Cause, string) {}

// Ping implements Observer.
func (NopObserver) Ping(int, int, time.Duration) {}

// Subscribed implements Observer.
func (NopObserver) Subscribed(int, int, int, byte) {}

// Published implements Observer.
func (NopObserver) Published(int, int, int, byte, int64, int64, time.Duration) {}

// Unsent implements Observer.
func (NopObserver) Unsent(int, int, Unsent, int) {}

// Held implements Observer.
func (NopObserver) Held(int, int, Hold, time.Duration) {}

// InFlightDropped implements Observer.
func (NopObserver) InFlightDropped(int, int, *PublisherEnd) {}

// PublisherEnd implements Observer.
func (NopObserver) PublisherEnd(int, int, *PublisherEnd) {}

// Acked implements Observer.
func (NopObserver) Acked(int, int) {}

// PublishRefused implements Observer.
func (NopObserver) PublishRefused(int, int, int, byte) {}

// ResponseUnsent does nothing.
func (NopObserver) ResponseUnsent(int, int, uint32, bool) {}

// BrokerDisconnect implements Observer.
func (NopObserver) BrokerDisconnect(int, int, byte, []byte) {}

// Behaved implements Observer.
func (NopObserver) Behaved(int, int, Behaviour, byte, byte, int) {}

// Received implements Observer.
func (NopObserver) Received(int, int, Message) {}

var _ Observer = NopObserver{}
