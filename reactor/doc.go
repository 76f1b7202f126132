// Package reactor moves the bytes: one epoll event loop per core, each a goroutine that
// sleeps in its own epoll set, dials its own clients, runs their MQTT sessions (CONNECT/CONNACK,
// SUBSCRIBE, QoS 0/1/2 flows both ways, PINGREQ every keepalive and a dead-connection
// verdict, DISCONNECT, reconnect with backoff) and their open-loop publish schedule.
//
// # Why its own loops, not gnet's
//
// The loops are this package's own, not an event-loop library's. gnet v2 (which the sink
// uses for its server side) takes an outgoing connection only as a net.Conn
// (Client.Enroll): a Go net.Dialer socket registered with the runtime's poller and waited on
// by a goroutine, then dup'ed, handed to the loop across threads and closed, and it keeps
// the net.Conn's addresses per connection. That costs several times the CPU per connection
// set-up and the RSS per idle connection of a raw non-blocking socket on the same loop
// (docs/performance.md, "Connections", the engine's history), more than the budgets of
// 60 µs per set-up and 768 B per idle connection allow; the loops here are about the code
// gnet would have needed around it anyway.
//
// # Loops, dialing and timers
//
// Client i belongs to loop i%Loops for its whole life, so its publisher state survives
// reconnects. A loop dials its clients at the connect phase's start plus ConnectDelay (a
// worker process's turn among those of its host) plus i/ConnectRate, in
// batches of about four (the dials due within 1-8 ms go out together: a thread's wake is
// dear), at most MaxConnecting/Loops without a verdict: a non-blocking socket (TCP_NODELAY; IP_BIND_ADDRESS_NO_PORT and bind when a
// source address is given; IP_LOCAL_PORT_RANGE where the kernel has it), connect(), and the
// CONNECT written at once when the handshake is already done (on loopback it always is;
// elsewhere the first EPOLLOUT sends it). The source-port capacity is checked before the
// first dial.
//
// # Arrival stamps
//
// Every socket has SO_TIMESTAMPNS and every read is a recvmsg(2) that brings the kernel's
// arrival time of the last packet it took. Connect latency runs from each socket's own
// start to its CONNACK's arrival, a PINGRESP's round trip and a message's latency to
// theirs: what waited in a socket while its loop was busy elsewhere (a dial batch, a
// publish pass, another socket's burst) is not counted against the broker. Messages read
// together carry the last one's stamp, which is still no later than the read.
//
// The loop sleeps in epoll_pwait2 until its next due time with nanosecond resolution and a
// 1 ns timer slack: the earliest publisher of its heap, the next dial or reconnect, or the
// next tick (100 ms) of its timer wheel, which holds each session for its CONNACK, TCP or
// ping timeout or its keepalive, so that a tick looks only at the sessions due in it, not at
// every session (timers.go); keepalives of 10 s or more are pinged on a grid of whole
// seconds, up to a second early, so that the loop wakes once a second for all of them.
// Publishers therefore go
// out within tens of microseconds of their due time rather than on a millisecond tick.
// A round of ready sockets can be long (a thousand busy subscribers at 2M msg/s): every 16
// events the loop reads the clock and makes the publish pass (and its pass through the Go
// scheduler) if one is due, so what falls due waits for at most 16 events, not the round.
// Other goroutines reach a loop only through its task queue (OnLoops), which an eventfd
// wakes.
//
// # Living with the Go scheduler
//
// A loop sleeps in a system call, not in the runtime, so two runtime habits cost a thread
// wake each, and a wake is dear (tens of µs of CPU on a VM): sysmon takes a P whose
// goroutine sits in a system call when no other P is idle (GOMAXPROCS is raised to
// loops+1), and it preempts a goroutine not rescheduled for 10 ms (the loop calls
// runtime.Gosched every 5 ms, also between the events of a long round). The spare P is for
// busy loops: with one, sysmon leaves a sleeping loop's P for 10 ms and polls every 20 µs
// meanwhile after each wake, so a caller that only holds connections lowers GOMAXPROCS to
// the loops (bench's hold). Parking in the
// runtime's poller instead (the epoll set registered there) measured more CPU per connect
// (docs/performance.md, "Connections").
//
// # Hot path
//
// A loop reads each ready socket once into its 64 KiB buffer, frames packets with
// codec.Split straight out of it and decodes them into structs the loop reuses; only the
// tail of a packet that a read cut stays with the connection (connIO). Packets are
// encoded into one scratch buffer per loop and written at once: a publisher's due messages
// in one write, the acknowledgements owed for one read in one write; what the socket does
// not take waits in the connection's connIO for EPOLLOUT. Nothing there locks or
// allocates. An idle connected session is an 80-byte struct and its slot.
//
// # Every scheduled message accounted for
//
// A publisher's state (pubState) exists from its first dial to the end, whatever happens
// to its connections. It is all a publisher keeps (208 bytes): the publishers of a group share
// their loop's one copy of their PublishSpec, and their topics sit in the loop's topic store. Message k of its schedule is due at start + Phase + k/Rate (with Poisson or burst
// arrivals, Phase + offset(k), drawn gaps summed or bursts of BurstSize), and its
// payload starts with the measurement header (HeaderSize bytes: the due time, the run's tag,
// the publisher number, the sequence number), so that latency runs from the due time and
// a receiver tells its run's messages from another's; it takes a
// sequence number only when it is encoded, so a stream carries exactly the numbers its
// publisher sent. A message is published when the kernel has taken its last byte (the
// positions of the messages in a connection's queue are kept until flush writes them); the
// queue is bounded (1 MiB), and what falls due while it is full is not encoded but reported
// unsent (back_pressure). A message due while its publisher has no connection, or after its
// window stayed full until the end, is unsent too (disconnected, flow_control), one over the
// broker's Maximum Packet Size is never sent (too_large), and FinishPublishing accounts for
// the rest (not_read, interrupted, behind) and reports each publisher's messages in flight.
// Time a publisher spends held by the broker (a full window, a socket that does not drain,
// no connection) is reported as a hold and left out of its schedule lag, so that the
// client's lateness and the broker's are told apart. QoS 1/2 messages in flight are kept per
// packet id; with clean session 0 they survive a drop and are re-sent with DUP and their
// packet ids (PUBREL for those PUBREC'd) when the CONNACK says session present
// [MQTT-4.4.0-1], and are dropped and reported otherwise.
//
// # Rate changes inside a run
//
// The scale on every publisher's rate can change inside a run (Engine.SetRate: steps, linear
// ramps, pauses; rate.go): message k is then due when the schedule time τ = ∫ scale dt from
// the start reaches Phase + k/Rate. A change is an immutable profile behind an atomic pointer;
// each loop compares it with its own at every tick and recomputes its publishers' next due
// times from their k (messages already encoded keep theirs), and since τ is continuous no
// change makes a burst or a gap. Counts (unsent, Scheduled, ScheduledBefore) come from the
// same due times, so the accounts stay exact under any profile; without a change the loops
// use the formula above, a nil test per message. Engine.SetConnectRate re-paces the first
// dials still to come from the client due now.
//
// # What a strict broker checks
//
// A QoS 2 packet id the client has answered with PUBREC is remembered until its PUBREL:
// a PUBLISH with it in between, DUP or not, gets PUBREC again and is not delivered again
// [MQTT-4.3.3-10]. The ids live in the loop by client (loop.rx, next to loop.pubs), so they
// survive a reconnect whose CONNACK says the session is present, and are dropped when it
// does not. The 5.0 CONNACK's Server Keep Alive replaces the client's keepalive; its
// Maximum Packet Size (session.maxOut) bounds what the client sends: a SUBSCRIBE over it
// is not sent but reported as refused with 0x95, PUBLISH is the publisher's to skip, and
// Engine.PacketLimited counts the publishing sessions whose largest PUBLISH does not fit.
// The client announces a Topic Alias Maximum only when ClientSpec.Props does; a broker's
// alias over it is a protocol error (DISCONNECT 0x94), an alias within it is resolved
// per connection. The inbound limit (Config.MaxInbound, by default the largest payload
// plus 64 KiB and at least 1 MiB) is announced in a 5.0 CONNECT as Maximum Packet Size; a
// packet over it is the client's own limit (CauseClientLimit, DISCONNECT 0x95), never the
// broker's protocol error. A 5.0 session ended on a broken rule sends DISCONNECT with the
// rule's reason code before it closes.
//
// # What a broker does differently
//
// A 5.0 PUBACK or PUBREC of 0x80 and up refuses its message (Observer.PublishRefused, not
// Acked). A broker's 5.0 DISCONNECT ends the connection there, reported with its reason
// code and string (Observer.BrokerDisconnect) instead of Dropped. A 5.0 CONNACK's Maximum
// QoS and Retain Available bound what the publisher sends (pubState.qos, noRetain), and
// Shared and Wildcard Subscription Available 0 keep a SUBSCRIBE with such filters unsent
// (refused with 0x9E or 0xA2); each is Behaved and counted in Engine.Lacking. A SUBACK that
// grants less than asked, a 3.1.1 publisher closed with QoS 2 messages in flight, and a 5.0
// CONNECT answered with a 3.1.1 CONNACK (reported Refused as 3.1.1's return code) are
// Behaved too, and so is a reconnect of a persistent client answered with Session Present
// 0 while its session should have lived on (the loop keeps when each such client's
// connection ended, until it is back). A first connect's subscriptions are settled by their SUBACK or by the end of
// the connection (Engine.SubscribeSettled), so that nobody waits for a SUBACK that cannot
// come; Engine.SubscribeGranted counts the SUBACKs that granted a filter.
//
// # Transports
//
// Config.Brokers takes host:port and mqtt:// (TCP), mqtts:// (TLS), ws:// and wss:// (MQTT
// over WebSocket, subprotocol mqtt, path /mqtt by default; over TLS for wss). Plain TCP
// carries no transport: its session has no field for one, and its reads and writes pay one
// flag test (sfTransport). A TLS or WebSocket session keeps its transport in loop.tr at
// its slot (transport.go).
//
// The TLS handshake blocks (crypto/tls wants a blocking net.Conn), so a TLS socket goes
// from dial to a bounded pool of handshake workers (Config.HandshakeWorkers, default 4 per
// loop, at least 8; each keeps its thread) and out of its loop's epoll set: the worker waits
// for the TCP connect (poll(2)) and runs the TLS handshake over a blocking wireConn, then
// hands the socket back through the loop's task queue. The loop adds it to its epoll set and
// writes the CONNECT, or on wss:// the WebSocket upgrade request. The upgrade is the loop's
// own, on ws:// straight after the TCP connect like a CONNECT: the request written, the 101
// response read (Sec-WebSocket-Accept checked against the key sent, subprotocol mqtt), then
// the CONNECT in its frame.
//
// From then on the loop carries the connection's records itself. A TLS 1.3 connection with a
// suite internal/tlsrec runs takes the loop's record layer (records.go): the worker's
// configuration clone had a KeyLogWriter that kept the two application traffic secrets in
// the job's memory, and its wireConn handed crypto/tls no byte past the end of the record
// being read (it follows the 5-byte headers through what it read from the socket), so that
// nothing of what follows the handshake is inside the tls.Conn and both sequence numbers are
// 0; what the socket gave past the handshake becomes the connection's first records. The
// job builds a tlsrec.Conn from the secrets and zeroes them. The loop seals a write batch in one go into its scratch (records of up to
// 2^14 bytes), opens a read's records into its plaintext scratch, keeps a record a read cut
// until its rest comes, and sends what the Conn owes (a KeyUpdate answer) at once; 0
// allocations per message. The handshake's tls.Conn reads the same records alongside until
// it has kept a session ticket (a broker sends them first; at the latest until the
// CONNACK), then is dropped with its configuration. A record the Conn refuses ends the connection once the plaintext before it is
// handled, as its own Cause (CauseTLSRecordOverflow ... CauseTLSKeyUpdateStorm); the broker's
// alert is CauseTLS in crypto/tls's words, its close_notify the broker closing. Each loop
// sweeps its warm connections once a second (on its idle wake) and releases the cipher state
// of those that sealed and opened nothing since the last sweep; the next record rebuilds it
// (about 1.5 µs), so an idle connection keeps the Conn's keys and sequence numbers only.
// Engine.ReleaseIdle does the sweep's work at once, before the resident set is read.
//
// Any other TLS connection (TLS 1.2, another suite, Config.TLSRecordLayer
// RecordLayerTLSConn) keeps its tls.Conn, which the loop drives itself: the ciphertext of each
// read is handed to it from memory, wireConn.Read returning a temporary net.Error when it is
// used up (crypto/tls keeps only permanent errors, so the next read goes on where this one
// stopped: pinned by TestTLSOverMemory), and what it writes is collected in the loop's
// scratch buffer for the loop's own write. Handshake.RecordLayer says which path a
// connection took. Handshake time and the worker
// thread's CPU time, and the upgrade's time, are reported apart (HandshakeObserver); connect latency still runs from
// the TCP start to the CONNACK, the handshake included. TLS sessions resume on reconnect:
// each client's own slot of the engine's session cache (or its own key in a cache the
// configuration brings), so that a client resumes its own session and never another
// client's.
//
// WebSocket framing is this package's own (ws.go): the MQTT packets of a write go together
// in one masked binary frame of up to wsFrameMax bytes (a longer packet in one of its own; no
// packet cut across frames), masked as they are copied (a per-loop wyrand draws the masking
// keys, one per frame); the broker's frames are
// read as one byte stream, their payloads moved together in place in the read buffer, a
// header or control payload cut by a read kept in the transport; a ping is answered with a
// pong. A close frame is the broker closing the connection: the bytes before it are handled,
// then it is answered with a close frame echoing its status (RFC 6455 section 5.5.1). A
// frame the broker may not send fails the connection at its header, as websocket_error with
// a close frame of the RFC's status: a text frame (MQTT travels in binary frames only), a
// reserved bit set, a masked frame, a continuation with no message started or a data frame
// inside one, a length over the largest MQTT packet (wsMaxFrame). An upgrade reply that does
// not start as HTTP fails at its first bytes. At the end of a run a session sends its own
// close frame (1000) after its DISCONNECT. The WebSocket data path
// allocates nothing (TestWSReceiveAllocs, TestWSPublishAllocs), an idle WebSocket session
// adds its 48-byte transport and the slot pointer; tls.Conn allocates in its reads (an
// atLeastReader per record read: 2 per read of 50 PUBLISH, TestTLSAllocs), the loop's code
// around it nothing. Positions in connIO count wire bytes on a transport: a publisher's
// messages queued behind a partial write are published when the whole write is taken.
//
// # One Observer method per event
//
// The Observer has a method for each kind of event rather than one method that takes an
// event with its kind. Published, Received and Acked run once per message, and a method
// each hands their values straight to the observer's handler. One Event method with a
// kind was measured against them, the Event reused from the loop: filling it in memory,
// switching on its kind and calling the kind's handler took more instructions on every
// message, on the receive path, the QoS 0 publish path and the QoS 1 publish and
// acknowledgement path (instruction counts under callgrind, which the host's load does
// not move; docs/performance.md). So they stay methods. The other events stay methods
// too: several of them come once per message from some brokers (Behaved for a PUBACK to
// a QoS 2 PUBLISH, PublishRefused, Unsent too_large, Held under flow control), and a
// method's signature says what an event carries where an Event's fields would say it
// only in a comment per kind. An event that a new feature adds and few observers need
// goes into an optional interface beside Observer, as HandshakeObserver does, so that
// Observer and NopObserver do not grow for it.
//
// # What it must not do
//
// It knows nothing of histograms, JSON, flags or output: it reports every event to the
// Observer it is given, on the loop the event happened on, so that an observer can keep one
// unsynchronised recorder per loop (package bench does).
package reactor
