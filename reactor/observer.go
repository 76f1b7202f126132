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
	NumCauses                       // number of causes, for arrays indexed by Cause
)

var causeNames = [NumCauses]string{
	"refused", "timeout", "address_exhausted", "fd_limit", "unreachable",
	"closed_by_broker", "protocol_error", "keepalive_timeout", "network_error",
	"client_packet_limit",
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
	// version is 3 or 4, a 5.0 reason code (0x80 and up) when it is 5.
	Refused(loop int, client int, version, code byte)
	// Failed reports a connection that was never established; example is one error text.
	Failed(loop int, client int, cause Cause, example string)
	// Dropped reports an established connection lost before the engine closed it.
	Dropped(loop int, client int, cause Cause, example string)
	// Ping reports a PINGREQ round trip.
	Ping(loop int, client int, rtt time.Duration)
	// Subscribed reports a SUBACK: failed of its filters were refused, the last with code.
	Subscribed(loop int, client int, failed int, code byte)
	// Published reports one PUBLISH written; receivers is how many copies the broker should
	// deliver, due its due time (CLOCK_REALTIME ns), lag how late it went out.
	Published(loop int, client int, receivers int, due int64, lag time.Duration)
	// Acked reports the end of a QoS 1 or 2 exchange (PUBACK, PUBCOMP, or a refusing PUBREC).
	Acked(loop int, client int)
	// Received reports one PUBLISH delivered to a client. Called per message: keep it cheap.
	Received(loop int, client int, m Message)
}
