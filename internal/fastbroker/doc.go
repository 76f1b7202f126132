// Package fastbroker is a tiny MQTT server for benchmarking mqblast's own client: it costs so
// little per message that the CPU a benchmark measures is the client's, not the server's.
//
// It is not a broker. It does not route publishes, keep sessions, retain messages or match
// topics. It answers CONNECT (3.1, 3.1.1 and 5.0) with a successful CONNACK, PINGREQ with
// PINGRESP, SUBSCRIBE with a SUBACK granting the requested QoS and UNSUBSCRIBE with UNSUBACK. It
// swallows every incoming PUBLISH, acknowledging QoS 1 with PUBACK and QoS 2 with PUBREC and then
// PUBCOMP. With Options.Stream set it answers a client's first SUBSCRIBE by streaming QoS 0
// PUBLISH packets to it, as fast as the socket takes them or at a fixed rate.
//
// It listens on loopback only and refuses any other address. It is for tests and benchmarks;
// anything else a real broker would check (authentication, keep alive, packet identifiers in
// use, the receive maximum) it does not.
//
// # Cost
//
// Each connection has one reading goroutine, and a subscriber has one more that streams. Both
// block in the runtime's network poller when the socket has nothing to read or no room to write,
// so backpressure costs no CPU. Packets are framed with codec.Split over a reusable buffer that
// keeps partial packets; replies to everything one read delivered are written at once; streamed
// packets are encoded into a reusable buffer and written about 64 KiB at a time. Nothing on the
// per-packet path allocates.
package fastbroker
