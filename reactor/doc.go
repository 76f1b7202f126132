// Package reactor moves the bytes: one gnet v2 client engine with one event loop per core,
// paced dialing from a bounded pool of goroutines (IP_BIND_ADDRESS_NO_PORT and, where the
// kernel has it, IP_LOCAL_PORT_RANGE on every socket; a source-port capacity check before the
// first dial), per-connection MQTT sessions (CONNECT/CONNACK, SUBSCRIBE, QoS 0/1/2 flows both
// ways, PINGREQ every keepalive and a dead-connection verdict, DISCONNECT, reconnect with
// backoff) and the open-loop publish schedule.
//
// # Loops and timers
//
// gnet's OnTick runs on one loop only, so every loop gets an anchor connection (one end of a
// Unix socket pair) that tells the engine the loop's gnet.EventLoop; a ticker goroutine per
// loop runs the loop's timers on it with EventLoop.Execute: every millisecond while the loop
// has a publish schedule (a heap of publishers by next due time), every 100 ms otherwise;
// timeouts, keepalive and due reconnects are scanned every 100 ms. A client's loop is fixed (client index modulo loops), so its
// publisher state survives reconnects.
//
// # Hot path
//
// Packets are framed with codec.Split straight out of gnet's inbound buffer and decoded into
// structs the loop reuses; packets are encoded into one scratch buffer per loop and written
// at once (gnet keeps what the socket does not take): a publisher's due messages in one
// write per tick, the acknowledgements owed for one read in one write. Nothing there locks or allocates.
//
// # What it must not do
//
// It knows nothing of histograms, JSON, flags or output: it reports every event to the
// Observer it is given, on the loop the event happened on, so that an observer can keep one
// unsynchronised recorder per loop (package bench does).
package reactor
