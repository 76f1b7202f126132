// Package netemu is the user-space packet emulator for network profiles on kernels without
// sch_netem (tuning.NetemAvailable says which): it puts a [tuning.Profile] between a broker and
// its clients by joining two network namespaces through itself.
//
// [Start] creates three namespaces, mqb-<id>-b (the broker's), mqb-<id>-c (the client's) and
// mqb-<id>-e (the emulator's), and two veth pairs: mqb0 in the broker namespace (BrokerAddr,
// 10.211.0.1/16) to tob in the emulator namespace, and mqb0 in the client namespace
// (ClientAddrs, 10.211.0.2 and on) to toc. The addresses exist only inside those namespaces.
// One goroutine, on a locked OS thread, bridges Ethernet frames between tob and toc through
// AF_PACKET sockets: each frame read is given a due time and sent on the other side when due.
//
//   - Delay and jitter, per direction: due = max(previous due, arrival + delay + u), u uniform
//     in [-jitter, +jitter] (netem's default distribution), arrival being the kernel's
//     receive stamp (SO_TIMESTAMPNS), so the emulator's own wake-up latency is not added. The
//     max keeps the order of the frames, unlike netem's jitter, which reorders; so each
//     direction is a FIFO sorted by due time and needs no timer wheel. The price: frames
//     closer together than the jitter's spread leave with the latest due time among them, so
//     in a burst the delay is nearer delay + jitter than delay (a sparse frame, such as a
//     ping, sees delay ± jitter, median delay).
//   - Timers: the thread (SCHED_FIFO unless Config.NormalPriority, timer slack 1 ns) sleeps in
//     ppoll(2) until the earliest due frame, early by its average oversleep, or the next
//     arrival; it spins on the clock for a frame due within 20 µs instead of sleeping again.
//     On each wake it reads every frame that is waiting on the sides ppoll reported and
//     sends every frame that is due: a thread wake costs tens of µs of CPU on a VM, so work is
//     batched per wake. Reading, queueing and sending allocate nothing.
//   - Loss is real packet loss below TCP: an IPv4 or IPv6 frame is dropped with the
//     direction's probability, so the endpoints' kernels see a missing segment and retransmit.
//     ARP and IPv6 neighbour discovery frames are delayed like every other frame (so order is
//     kept) but never dropped: a lost ARP stalls a connection for a second, which is no
//     profile's loss. Start also installs permanent neighbour entries and turns IPv6 address
//     generation off on the veths, so neither normally appears.
//   - Offloads (checksum, TSO, GSO, GRO, scatter-gather) are turned off on the four veth ends,
//     so every frame is one wire-sized packet with its checksums filled in: a 64 KiB GSO frame
//     dropped whole would be 45 lost segments, not one.
//
// The thread's CPU time (Stats.CPU) includes what the kernel does on its sends: the veth's
// transmit and the receiving namespace's TCP processing run in its softirq context. In bulk
// a wake carries many frames, at ping-like rates about two wakes carry one, so the CPU per
// frame differs by an order of magnitude between them (make bench-net, TestBenchNet; figures
// in docs/performance.md). recvmmsg/sendmmsg batching measured no better than one recvmsg and
// one write per frame, so the simpler form stays.
//
// The profile can be changed while the link runs ([Link.SetProfile]), so one link serves the
// cells of a study. [Link.Stats] counts frames, bytes, drops (by the profile, by a full queue,
// and by the kernel at the AF_PACKET socket), the frames still queued, and the emulator
// thread's own CPU time; every frame read is sent, dropped or queued ([DirStats]).
//
// The caller runs the broker in the broker namespace and the client in the client namespace:
// [Link.BrokerCommand] and [Link.ClientCommand] return commands under `ip netns exec`, and
// [Link.Listen] and [Link.Dial] open sockets there from this process (a socket belongs to the
// namespace of the thread that created it). [Link.Close] kills what still runs in the
// namespaces and deletes them; [Leftovers] and [Remove] find and delete the namespaces of a
// process that died without closing.
//
// netemu needs Linux, root and ip(8). It imports only tuning (for Profile).
package netemu
