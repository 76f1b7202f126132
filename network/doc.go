// Package network puts a network profile (delay, jitter and loss each way) between
// mqblast's clients and a broker: tc netem on the path to a broker's address where the
// kernel has sch_netem (Netem), or mqblast's user-space packet emulator (tuning/netemu)
// between two network namespaces, a broker running in one and a command in the other
// (StartEmulator, Emulate). It holds the bodies of the net verbs: show, apply, clear and
// emulate.
//
// It promises that every process it starts is tied to this one (a broker under mqblast's
// guard, which ends its process group when mqblast is gone; a command in the client
// namespace gets SIGTERM), that what it applies is cleared again (also after a failure),
// and that what a crashed run left (namespaces, temporary directories) is found and
// removed by Clear and by the next emulator's start. It changes the host's qdiscs and
// namespaces only when asked, and needs root for it.
//
// It must not print except to the writer it is given, nor exit; it imports none of the
// run's engine (bench, reactor, scenario).
package network
