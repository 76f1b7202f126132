// Package sink is mqblast's server-side instrument: a minimal MQTT 3.1.1 and 5.0 relay that
// costs almost nothing, so that a run against it measures the client host's own ceiling and
// can hold a million connections without a broker cluster (`mqblast sink`, `mqblast run
// --sink`). It is not a broker: no retained messages, no sessions or persistence, no
// authentication, no will messages, no keep-alive enforcement, no subscription identifiers.
// It imports only codec, tuning, internal/child, internal/bytesize, internal/fail and
// internal/tlsrec (and gnet); never bench, reactor or scenario.
//
// It also owns the sink's processes and its verb: Serve runs one and reports its counters
// as Lines, ServeProcs runs several on one port and sums theirs, Run chooses between the
// two and prints the summary (WriteSummary), Main is `mqblast sink` (Flags: the verb's
// settings, checked, and passed on to its children's command line), StartChild starts one
// in a child process for a calibration run (StartChildTLS: over TLS, with a RunCert made for
// the run).
//
// # What it speaks
//
// CONNECT is answered with CONNACK (5.0: Receive Maximum, Topic Alias Maximum and Maximum
// Packet Size from Config, Retain Available 0, Subscription Identifiers Available 0, an
// assigned client identifier when the client sent none); SUBSCRIBE with a SUBACK granting
// the asked QoS; UNSUBSCRIBE with UNSUBACK; PINGREQ with PINGRESP; PUBLISH QoS 1 with PUBACK,
// QoS 2 with PUBREC, PUBREL with PUBCOMP; DISCONNECT closes. A 5.0 client's topic aliases are
// resolved (up to Config.TopicAliasMaximum). Every PUBLISH is relayed, as it arrives, to the
// matching subscriptions of this process: exact, "+", "#" (not "$" topics at the first level),
// and "$share/<group>/<filter>", one member per group, round robin. A client with several
// matching subscriptions gets one copy at the highest of their QoS [MQTT-3.3.5-1]; 5.0
// NoLocal is honoured. A copy goes at min(published QoS, granted QoS), with the publisher's
// 5.0 properties but not its topic alias. QoS 1/2 copies carry a packet identifier per
// subscriber; their PUBACK / PUBREC-PUBREL-PUBCOMP are handled and counted, and nothing is
// ever resent (Stats.Unacked is what is outstanding). A copy over the subscriber's Maximum
// Packet Size or Receive Maximum, or beyond Config.MaxOutput of unsent bytes (a subscriber
// that does not read), is dropped and counted by cause, so that one slow subscriber cannot
// eat the memory.
//
// A malformed packet (a bad fixed header or remaining length, a packet over the Maximum
// Packet Size, a field the codec rejects), a packet before CONNECT, a second CONNECT, AUTH or
// a packet only a server sends closes the connection; a connected 5.0 client first gets a
// DISCONNECT with the codec's reason code. Nothing a client sends can stop the others.
//
// # Why gnet, and how it is used
//
// On the server side, accepting and running event loops is what gnet v2 does well (the
// client keeps its own loops, package reactor: gnet takes outgoing connections only as a
// net.Conn). The sink runs ONE gnet event loop per
// process: the subscription table, the sessions and the relay are then owned by one
// goroutine and nothing locks. More cores go to more processes (`mqblast sink --procs N`,
// SO_REUSEPORT on one port); relaying happens only within each process, so a messaging run
// uses one process. The listener always has SO_REUSEPORT, because only then does gnet accept
// on the event loop itself rather than on a separate thread that hands each connection over;
// without Config.SharePort, Start first checks that nobody else listens on a fixed port.
// Told how many connections to expect (`--connections`), the processes take the port's new
// connections in turns (Config.Turn, Linux): a classic BPF program on the port's
// SO_REUSEPORT group returns the index of the process whose turn it is, in the order they
// began to listen (ServeProcs starts them one after the other), and a process that holds
// its share points the group at the next, the last at the first: what comes after the
// shares (reconnects after a storm) goes round to the processes with room, a full one
// taking one connection as it passes the turn on. One process accepting at the whole rate
// wakes once for many accepts, where fifty sharing it by hash each woke for one or two.
// gnet's package-level goroutine pool (ants), which would wake every mqblast process three
// times a second, is released at init (pool.go): the sink never submits to it.
//
// Buffers: gnet's read buffer (64 KiB) is one per loop; a connection's inbound bytes are
// kept only for a cut packet (gnet's ring buffer, pooled), which is not looked at again
// until the size its fixed header gives has arrived (codec.PacketLen); the bytes so held
// over all connections are bounded by Config.MaxHeld, and the connection whose cut packet
// passes it is closed (a 5.0 client first gets a DISCONNECT Quota exceeded) and counted, so
// that clients sending big packets and never finishing them cannot eat the memory
// (TestHeldBudget). Its outbound buffer only holds what the socket did not take. A session
// keeps a relay buffer only while it has copies waiting, and drops one that grew past 64 KiB.
// An idle connection so costs gnet's conn, its fd map entry and the session, within a budget
// of 1 KiB of RSS (BenchmarkIdleConnectionRSS; figures in docs/performance.md).
//
// Batching: the packets of one read are handled together and the replies go out in one
// write. Relayed copies are appended to each subscriber's buffer, and the buffers are flushed
// (one write per subscriber) by a task on the event loop, which gnet runs after its current
// round of ready sockets: the copies of every PUBLISH that round brought go out in one write
// per subscriber, and a busy sink batches more by itself. Config.FlushDelay spaces the flushes
// at least that far apart: a copy waits at most the delay, none after a quiet spell. A write
// costs some µs (on loopback the kernel delivers and wakes the reader inside it; most of the
// sink's CPU is there), so at high fan-out a few ms cut the sink's and the client's CPU per
// copy, at that cost in latency (BenchmarkFanout). The flush is
// scheduled with one gnet task (a small allocation by gnet) per round, not per message; the
// relay itself allocates nothing once its buffers have grown (TestRelayAllocs).
//
// A busy event loop never parks, so the Go runtime's sysmon would preempt it every 10 ms and
// then poll every 20 µs; the handler passes through the scheduler every 5 ms instead, which
// keeps sysmon's thread nearly asleep (make bench-fanout; docs/performance.md).
//
// # TLS
//
// With Config.TLS (`--tls-cert`, `--tls-key`; LoadTLS) every connection speaks MQTT over TLS
// 1.3. gnet accepts it on the loop as over TCP (turns, MaxConnections and the counters
// unchanged); the loop hands what the socket brings to a goroutine running crypto/tls's
// server handshake over a net.Conn of the sink's own (hsConn), whose writes come back to the
// loop as tasks, in order. At most MaxHandshakes run at once, the others queued in accept
// order with their bytes kept (Stats.TLS.Queued), and each is bounded by HandshakeTimeout
// and by 1 MiB of input (a client sending more before its handshake has ended is closed).
// crypto/tls needs a blocking conn and cannot resume a handshake after a would-block, hence
// the goroutine; it lives only for the handshake. Reads of that conn never go past the end
// of the current record (its 5-byte header gives the length), so crypto/tls stops at the
// handshake's last record; and session tickets are off, so the server sends nothing under
// its traffic key during the handshake: both directions' application records start at
// sequence number 0 when the loop takes over. The traffic secrets
// (CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0) come from a KeyLogWriter on the
// connection's clone of the configuration, kept in memory only, copied into the record layer
// and cleared; they are never written or logged.
//
// After the handshake the loop opens the records itself (internal/tlsrec, Server side) into
// one plaintext buffer of the loop and handles the MQTT packets in it as over TCP; a cut
// record stays in gnet's buffer and a cut packet's plaintext in the session, both counted as
// held (MaxHeld). Replies and relayed copies are sealed into one write each. A record-layer
// error (a bad MAC, an alert, close_notify, a record over 2^14+256 bytes, a KeyUpdate
// storm) closes the connection and is counted by reason (Stats.TLS.Closed); a KeyUpdate
// the client asks to be answered is sent before the next records. A connection with no
// subscription whose read carried no PUBLISH (a CONNECT, a PINGREQ) drops its cipher state
// and keeps its keys and sequence numbers only, rebuilt when it next speaks.
//
// TLS 1.2 and older are refused with the protocol_version alert: the loop runs the 1.3
// record layer only. With Config.TLS.ClientCAs (`--tls-client-ca`) every client must present
// a certificate one of those CAs signed; a client without one, or with another CA's, is
// refused by crypto/tls with its alert (certificate required, unknown certificate
// authority), a failed handshake and a refused connection in the counters.
//
// # WebSocket
//
// With Config.WS (`--ws`) every connection speaks MQTT over WebSocket (RFC 6455; over TLS
// with Config.TLS: wss), in ws.go. Its first bytes are the HTTP/1.1 upgrade request, kept in
// gnet's buffer (or the TLS plaintext) until its head is whole (at most 8 KiB): a GET of
// Config.WSPath with the headers RFC 6455 asks is answered 101 (subprotocol "mqtt" echoed
// when offered), anything else with its HTTP error, and closed. Then the frames sit between
// the bytes (gnet's, or the record layer's plaintext) and the relay: the loop unmasks the
// payloads of the client's data frames into one buffer of the loop, or after a cut packet's
// bytes in the session (counted as held, MaxHeld), and handles the MQTT packets in it as
// over TCP; a data frame's payload is taken as far as it came, its masking key rotated to
// where the next read resumes, so what waits in gnet's buffer is at most a cut frame header
// or control frame (139 bytes). A ping is answered with a pong, a close frame with a close
// frame; a frame a client may not send closes the connection with a close frame (1002,
// 1003, 1009), counted. The replies of one read go out in one unmasked binary frame, after
// the pongs; a flush frames each subscriber's copies in one, copied once into the loop's
// frame buffer (then sealed over TLS). A connection the sink closes (err nil in OnClose: a
// DISCONNECT, an error, shutdown) first gets a close frame and, over TLS, a close_notify.
//
// # Counters
//
// Stats: connections open, accepted, connected, refused (closed before a successful CONNACK),
// closed for protocol errors and closed over Config.MaxHeld; subscriptions; PUBLISH in by
// QoS and those that matched nothing; copies relayed by QoS and dropped by cause;
// acknowledged and outstanding QoS 1/2 copies; bytes in (every byte read: handled, or
// dropped with its connection) and held now for packets not yet whole; bytes out; relay
// writes; with Config.LockOSThread, the loop thread's CPU; over TLS, handshakes completed,
// failed and queued, and connections the record layer closed, by reason; over WebSocket,
// upgrades made and refused, pings answered, close frames received and frame errors.
// The loop adds to them per packet or per read, not per copy; Stats reads them from any
// goroutine. Stats.Add sums processes (`mqblast sink --procs N --stats-json`).
package sink
