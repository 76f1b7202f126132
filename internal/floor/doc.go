// Package floor is the client's per-message floor: a minimal raw-socket MQTT client that
// makes the reads and writes mqblast's engine makes for the same plan, and nothing else, so
// that the CPU mqblast spends per message can be held against what the system calls alone
// cost on the same host (make bench-floor, which builds its command, internal/cmd/floor).
//
// It runs the engine's kind of loop: one goroutine per loop with its own epoll set,
// client i on loop i%Loops, non-blocking sockets with TCP_NODELAY and SO_TIMESTAMPNS,
// every read one recvmsg(2) of up to 64 KiB with its control data, a sleep in
// epoll_pwait2 until the next due time with a 1 ns timer slack, a pass through the Go
// scheduler every 5 ms, GOMAXPROCS one above the loops, a publish pass at most every
// 200 µs that writes each due publisher's messages in one write, the acknowledgements
// owed for one read in one write, and a keepalive scan every 100 ms. It keeps no MQTT
// state and measures nothing: PUBLISH packets are pre-encoded per publisher (only the
// packet id changes, the payload is constant), an inbound packet is framed by its fixed
// header only, a QoS 1 PUBLISH is answered with a pre-encoded PUBACK (QoS 2: PUBREC, a
// PUBREC with PUBREL, a PUBREL with PUBCOMP), and every other packet is discarded. It
// counts the PUBLISH packets it reads and the messages it writes, in the window, and the
// process's CPU time (rusage) over the window.
//
// Connecting is not part of the floor: each loop connects its clients one after the
// other with blocking system calls (CONNECT, CONNACK, SUBSCRIBE, SUBACK) before its
// sockets go non-blocking into its epoll set.
//
// It supports what a messaging plan's clients do on MQTT 3.1.1 and 5.0 (the 5.0 topic
// alias included), not %rand_N topics, TLS or WebSocket. It is an instrument for the
// benchmark, not a load generator: it reports no latency, no losses and no errors beyond
// a failed set-up.
package floor
