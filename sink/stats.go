package sink

import (
	"sync/atomic"
	"time"
)

// Stats are a Server's counters since Start. The JSON form is the line `mqblast sink
// --stats-json` writes; Add sums the lines of several processes.
type Stats struct {
	Connections      int64     `json:"connections"`       // open now
	ConnectionsTotal uint64    `json:"connections_total"` // accepted since start
	Connected        uint64    `json:"connected"`         // answered with a successful CONNACK
	Refused          uint64    `json:"refused"`           // closed before a successful CONNACK (malformed, unsupported version, over MaxConnections)
	ProtocolErrors   uint64    `json:"protocol_errors"`   // closed after CONNACK for a malformed or forbidden packet
	HeldOver         uint64    `json:"held_over"`         // closed because their cut packet took the bytes held past Config.MaxHeld
	Subscriptions    int64     `json:"subscriptions"`     // in place now
	PublishIn        [3]uint64 `json:"publish_in"`        // PUBLISH received, by QoS
	NoSubscribers    uint64    `json:"no_subscribers"`    // PUBLISH received that matched no subscription
	Relayed          [3]uint64 `json:"relayed"`           // PUBLISH queued to subscribers, by delivered QoS
	Dropped          Dropped   `json:"dropped"`           // copies not relayed, by cause
	Acked            uint64    `json:"acked"`             // QoS 1/2 deliveries acknowledged (PUBACK, PUBCOMP)
	Unacked          int64     `json:"unacked"`           // QoS 1/2 deliveries in flight now
	BytesIn          uint64    `json:"bytes_in"`          // read and handled, or dropped with their connection
	HeldBytes        int64     `json:"held_bytes"`        // read and held now: packets not yet whole
	BytesOut         uint64    `json:"bytes_out"`
	Writes           uint64    `json:"writes"` // relay batches handed to the socket (one per subscriber per flush)
	// LoopCPU is the CPU time of the event loop's thread (Config.LockOSThread on Linux; zero
	// otherwise), in nanoseconds.
	LoopCPU time.Duration `json:"loop_cpu_ns"`
	// Procs is the number of processes summed into these figures (1 for one Server).
	Procs int `json:"procs"`
	// TLS counts the handshakes and the record layer's ends (a TLS sink only).
	TLS TLSStats `json:"tls,omitzero"`
	// WS counts the WebSocket upgrades and frames (a WebSocket sink only).
	WS WSStats `json:"ws,omitzero"`
}

// WSStats are a WebSocket sink's own counters.
type WSStats struct {
	Upgrades uint64 `json:"upgrades"` // upgrade requests answered 101: the connection speaks frames
	// Refused: upgrade requests answered with an HTTP error and closed (400 malformed, no
	// key or Upgrade header; 404 another path; 405 not a GET; 426 not version 13; 431 a
	// head over 8 KiB).
	Refused uint64 `json:"refused"`
	Pings   uint64 `json:"pings"` // ping frames answered with a pong
	// CloseFrames: close frames from clients, each answered with a close frame.
	CloseFrames uint64 `json:"close_frames"`
	// ProtocolErrors: connections closed (with a close frame 1002, 1003 or 1009) for a frame
	// a client may not send: unmasked, text, a reserved bit or opcode, a fragmented or long
	// control frame, a continuation out of place, a data frame over Config.MaxHeld.
	ProtocolErrors uint64 `json:"protocol_errors"`
}

// TLSStats are a TLS sink's own counters.
type TLSStats struct {
	Handshakes uint64 `json:"handshakes"` // completed: the loop runs the connection's records
	// HandshakeFailures: refused by crypto/tls (no client certificate or one the CA did not
	// sign, TLS 1.2 or older, a bad message), timed out, or closed by the client midway.
	HandshakeFailures uint64 `json:"handshake_failures"`
	// Queued: handshakes that waited for one of MaxHandshakes running ones to end.
	Queued uint64 `json:"queued"`
	// Closed: connections the record layer ended, by reason.
	Closed TLSClosed `json:"closed"`
}

// TLSClosed counts connections ended by the record layer, by reason (tlsrec's Reason*).
type TLSClosed struct {
	CloseNotify    uint64 `json:"close_notify"`
	Alert          uint64 `json:"alert"`
	RecordOverflow uint64 `json:"record_overflow"`
	BadRecordMAC   uint64 `json:"bad_record_mac"`
	Unexpected     uint64 `json:"unexpected_message"`
	DecodeError    uint64 `json:"decode_error"`
	KeyUpdateStorm uint64 `json:"key_update_storm"`
}

func (c *TLSClosed) fields() [7]*uint64 {
	return [7]*uint64{&c.CloseNotify, &c.Alert, &c.RecordOverflow, &c.BadRecordMAC, &c.Unexpected, &c.DecodeError, &c.KeyUpdateStorm}
}

// Total is the sum over the reasons.
func (c TLSClosed) Total() uint64 {
	var n uint64
	for _, f := range c.fields() {
		n += *f
	}
	return n
}

// Dropped counts relayed copies the sink did not send, by cause.
type Dropped struct {
	// OutputFull: the subscriber's unsent output was at Config.MaxOutput (a slow reader).
	OutputFull uint64 `json:"output_full"`
	// TooLarge: the copy was over the subscriber's Maximum Packet Size (5.0 CONNECT).
	TooLarge uint64 `json:"too_large"`
	// ReceiveMaximum: the subscriber already had its Receive Maximum of QoS 1/2 copies unacknowledged.
	ReceiveMaximum uint64 `json:"receive_maximum"`
}

// Total is the sum of every cause.
func (d Dropped) Total() uint64 { return d.OutputFull + d.TooLarge + d.ReceiveMaximum }

// RelayedTotal is the sum of Relayed over the QoS levels.
func (s *Stats) RelayedTotal() uint64 { return s.Relayed[0] + s.Relayed[1] + s.Relayed[2] }

// PublishInTotal is the sum of PublishIn over the QoS levels.
func (s *Stats) PublishInTotal() uint64 { return s.PublishIn[0] + s.PublishIn[1] + s.PublishIn[2] }

// Add adds o to s, as for the processes of one `mqblast sink --procs N`.
func (s *Stats) Add(o *Stats) {
	s.Connections += o.Connections
	s.ConnectionsTotal += o.ConnectionsTotal
	s.Connected += o.Connected
	s.Refused += o.Refused
	s.ProtocolErrors += o.ProtocolErrors
	s.HeldOver += o.HeldOver
	s.Subscriptions += o.Subscriptions
	for q := range 3 {
		s.PublishIn[q] += o.PublishIn[q]
		s.Relayed[q] += o.Relayed[q]
	}
	s.NoSubscribers += o.NoSubscribers
	s.Dropped.OutputFull += o.Dropped.OutputFull
	s.Dropped.TooLarge += o.Dropped.TooLarge
	s.Dropped.ReceiveMaximum += o.Dropped.ReceiveMaximum
	s.Acked += o.Acked
	s.Unacked += o.Unacked
	s.BytesIn += o.BytesIn
	s.HeldBytes += o.HeldBytes
	s.BytesOut += o.BytesOut
	s.Writes += o.Writes
	s.LoopCPU += o.LoopCPU
	s.Procs += o.Procs
	s.TLS.Handshakes += o.TLS.Handshakes
	s.TLS.HandshakeFailures += o.TLS.HandshakeFailures
	s.TLS.Queued += o.TLS.Queued
	s.WS.Upgrades += o.WS.Upgrades
	s.WS.Refused += o.WS.Refused
	s.WS.Pings += o.WS.Pings
	s.WS.CloseFrames += o.WS.CloseFrames
	s.WS.ProtocolErrors += o.WS.ProtocolErrors
	oc := o.TLS.Closed.fields()
	for i, f := range s.TLS.Closed.fields() {
		*f += *oc[i]
	}
}

// counters are the live counters. The loop adds to them once per packet or per read, never
// per copy, so the atomics cost little; Stats reads them from any goroutine.
type counters struct {
	connections      atomic.Int64
	connectionsTotal atomic.Uint64
	connected        atomic.Uint64
	refused          atomic.Uint64
	protocolErrors   atomic.Uint64
	heldOver         atomic.Uint64
	subscriptions    atomic.Int64
	publishIn        [3]atomic.Uint64
	noSubscribers    atomic.Uint64
	relayed          [3]atomic.Uint64
	outputFull       atomic.Uint64
	tooLarge         atomic.Uint64
	receiveMaximum   atomic.Uint64
	acked            atomic.Uint64
	unacked          atomic.Int64
	bytesIn          atomic.Uint64
	heldBytes        atomic.Int64
	bytesOut         atomic.Uint64
	writes           atomic.Uint64
	tlsHandshakes    atomic.Uint64
	tlsFailed        atomic.Uint64
	tlsQueued        atomic.Uint64
	tlsClosed        [7]atomic.Uint64 // by closeReasons
	wsUpgrades       atomic.Uint64
	wsRefused        atomic.Uint64
	wsPings          atomic.Uint64
	wsCloseFrames    atomic.Uint64
	wsProtocolErrors atomic.Uint64
}

func (c *counters) stats() Stats {
	st := Stats{
		Connections:      c.connections.Load(),
		ConnectionsTotal: c.connectionsTotal.Load(),
		Connected:        c.connected.Load(),
		Refused:          c.refused.Load(),
		ProtocolErrors:   c.protocolErrors.Load(),
		HeldOver:         c.heldOver.Load(),
		Subscriptions:    c.subscriptions.Load(),
		NoSubscribers:    c.noSubscribers.Load(),
		Dropped: Dropped{
			OutputFull:     c.outputFull.Load(),
			TooLarge:       c.tooLarge.Load(),
			ReceiveMaximum: c.receiveMaximum.Load(),
		},
		Acked:     c.acked.Load(),
		Unacked:   c.unacked.Load(),
		BytesIn:   c.bytesIn.Load(),
		HeldBytes: c.heldBytes.Load(),
		BytesOut:  c.bytesOut.Load(),
		Writes:    c.writes.Load(),
		Procs:     1,
		TLS:       TLSStats{Handshakes: c.tlsHandshakes.Load(), HandshakeFailures: c.tlsFailed.Load(), Queued: c.tlsQueued.Load()},
		WS: WSStats{Upgrades: c.wsUpgrades.Load(), Refused: c.wsRefused.Load(), Pings: c.wsPings.Load(),
			CloseFrames: c.wsCloseFrames.Load(), ProtocolErrors: c.wsProtocolErrors.Load()},
	}
	for i, f := range st.TLS.Closed.fields() {
		*f = c.tlsClosed[i].Load()
	}
	for q := range 3 {
		st.PublishIn[q] = c.publishIn[q].Load()
		st.Relayed[q] = c.relayed[q].Load()
	}
	return st
}
