package reactor

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// Session states.
const (
	stDialing    uint8 = iota // TCP connect in progress
	stConnecting              // TCP up, CONNECT sent, waiting for CONNACK
	stConnected               // CONNACK success
	stClosing                 // closed by us: nothing more is reported about it
)

// Session flags.
const (
	sfVerdict    = 1 << iota // the connect attempt has its verdict
	sfPollOut                // EPOLLOUT is armed: unsent bytes wait for the socket
	sfDeferred               // EPOLLIN is not armed: the CONNACK is collected by harvest
	sfPersistent             // clean session / clean start 0: the broker may keep its session
)

// session is one MQTT client connection, owned by its loop. An idle connected session is
// this struct, its slot and the kernel's socket: 80 bytes of heap.
type session struct {
	io        *connIO     // bytes not yet sent or not yet a whole packet; nil when none
	spec      *ClientSpec // until the CONNACK has started its subscriptions and publisher; nil after
	pub       *pubState   // the client's publisher state, nil if it does not publish
	keepalive time.Duration
	dialStart int64 // engine clock, ns
	lastWrite int64
	pingSent  int64 // 0: no PINGREQ outstanding
	client    int32
	slot      int32 // index in loop.sessions
	fd        int32
	maxOut    uint32 // 5.0 server Maximum Packet Size (0: none)
	maxIn     uint32 // the client's inbound packet limit: Config.MaxInbound or the CONNECT's smaller one
	version   byte
	attempt   uint8 // 0: first connect; n: n-th reconnect attempt
	state     uint8
	flags     uint8
}

// connIO holds what a socket did not take and what a read left of a packet.
type connIO struct {
	in  []byte
	out []byte
	pos int64 // bytes of the connection's output the kernel has taken (queued.end counts in it)
}

// loop is one event loop: an epoll instance, a goroutine that waits in it, and the
// sessions, publish schedule and dials it owns. Everything in it but mu and what mu
// guards (tasks, shut, stop, writes to evfd) is touched only from that goroutine.
type loop struct {
	e        *Engine
	idx      int
	ep       int // epoll
	evfd     int // eventfd: wakes the loop for tasks; under mu (-1 once closed)
	events   []unix.EpollEvent
	rbuf     []byte // read buffer, shared by the loop's sessions
	sessions []*session
	free     []int32

	mu    sync.Mutex
	tasks []func() // run on the loop; appended from any goroutine
	shut  bool     // no task is accepted any more
	stop  bool     // under mu: the loop ends after this round

	brokers     []unix.Sockaddr
	sources     map[netip.Addr]unix.Sockaddr
	nextClient  int // the next client of this loop to dial first (client i is loop i%loops's)
	connecting  int // dials without a verdict
	maxConn     int // cap on connecting
	redials     []redialAt
	dueRedials  []redialAt // scratch for redialDue
	lastScan    int64      // engine clock of the last timeout and keepalive scan
	lastPublish int64      // engine clock of the last publish pass
	dialGrain   int64      // ns: the dials due within it of now go out now
	lastHarvest int64      // engine clock of the last harvest
	pending     []*session // sessions whose CONNACK harvest collects

	msg struct { // recvmsg's header and vector, reused
		hdr unix.Msghdr
		iov unix.Iovec
	}
	oob      [64]byte // control data of a recvmsg: the arrival stamp
	rxAt     int64    // arrival of what the last recvmsg took (CLOCK_REALTIME ns; 0: unknown)
	noStamps bool     // a CONNACK came without an arrival stamp: do not defer CONNACKs
	out      []byte   // scratch encode buffer
	marks    []queued // scratch: the messages of one publisher's write
	seqs     []uint32 // scratch: sequence numbers in flight, for the observer
	reply    []byte   // acknowledgements owed for what one read brought, written once after it
	connack  codec.Connack
	heap     pubHeap             // publishers by next due time
	pubs     map[int32]*pubState // by client: survives reconnects
	rx       map[int32]*rxState  // by client: QoS 2 ids survive reconnects to a persistent session
	payload  []byte              // scratch payload, header written per message
	topic    []byte              // scratch topic for %rand_N
	pub      codec.Publish       // scratch packets, reused
	inPub    codec.Publish
	ack      codec.Ack
	suback   codec.Suback
}

// redialAt is a reconnect attempt waiting for its backoff to pass.
type redialAt struct {
	due     int64 // engine clock
	client  int32
	attempt uint8
}

// readBufferSize is the loop's read buffer: one read takes up to this much of a socket.
const readBufferSize = 64 << 10

func newLoop(e *Engine, idx int) (*loop, error) {
	ep, evfd, err := newEpoll()
	if err != nil {
		return nil, err
	}
	l := &loop{e: e, idx: idx, ep: ep, evfd: evfd, events: make([]unix.EpollEvent, 512),
		rbuf: make([]byte, readBufferSize), sources: map[netip.Addr]unix.Sockaddr{},
		nextClient: idx,
		dialGrain:  int64(dialGrainFor(e.cfg.ConnectRate / float64(e.cfg.Loops))),
		maxConn:    max(1, (e.cfg.MaxConnecting+e.cfg.Loops-1)/e.cfg.Loops),
		out:        make([]byte, 0, maxBatch+4096), payload: make([]byte, e.maxPayload)}
	for _, b := range e.brokers {
		l.brokers = append(l.brokers, sockaddr(b))
	}
	return l, nil
}

// run is the loop's goroutine: wait for events or the next timer, handle them, repeat.
func (l *loop) run(done func()) {
	defer done()
	// The thread sleeps in epoll_pwait2 until the next due time; a 1 ns timer slack (the
	// default is 50 µs) makes it wake then. Slack is per thread: it is set again after
	// each pass through the scheduler, which may have moved the goroutine to another
	// thread. (Locking the goroutine to its thread instead makes each of those passes a
	// hand-over between two threads: make bench-conn 62-64 µs CPU per connect locked,
	// 53-55 µs not.)
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	e := l.e
	var lastYield int64
	for {
		now := e.now()
		if now-lastYield > int64(yieldInterval) {
			runtime.Gosched()
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			lastYield = now
		}
		wake := l.tick(now)
		timeout := int64(-1)
		if wake != never {
			timeout = max(wake-e.now(), 0)
		}
		n, err := epollWait(l.ep, l.events, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			e.loopFailed(err)
			break
		}
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			if ev.Pad < 0 {
				l.runTasks()
				continue
			}
			l.event(ev.Fd, ev.Pad, ev.Events)
		}
		l.mu.Lock()
		stop := l.stop
		l.mu.Unlock()
		if stop {
			break
		}
	}
	l.shutdown()
}

// yieldInterval is how often a loop passes through the Go scheduler. A goroutine that has
// not been rescheduled for 10 ms is preempted by the runtime's sysmon (a signal that also
// interrupts epoll_pwait2, its P taken away), and each such preemption sets sysmon back to
// polling every 20 µs; a loop that never parks would be preempted every 10 ms.
const yieldInterval = 5 * time.Millisecond

// shutdown closes every socket of the loop and runs the tasks still queued.
func (l *loop) shutdown() {
	for _, s := range l.sessions {
		if s != nil {
			l.close(s)
		}
	}
	l.mu.Lock()
	l.shut = true
	l.mu.Unlock()
	l.runTasks()
	l.mu.Lock() // no notify writes to a closed (or reused) descriptor
	_ = unix.Close(l.evfd)
	l.evfd = -1
	l.mu.Unlock()
	_ = unix.Close(l.ep)
}

// execute queues f to run on the loop and wakes it. It returns false once the loop has shut
// down: f does not run.
func (l *loop) execute(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return false
	}
	l.tasks = append(l.tasks, f)
	l.notify()
	return true
}

// wakeup makes the loop's epoll_wait return.
func (l *loop) wakeup() {
	l.mu.Lock()
	l.notify()
	l.mu.Unlock()
}

// halt makes the loop end after its current round.
func (l *loop) halt() {
	l.mu.Lock()
	l.stop = true
	l.notify()
	l.mu.Unlock()
}

// notify writes the loop's eventfd; l.mu is held.
func (l *loop) notify() {
	if l.evfd < 0 {
		return
	}
	var one [8]byte // the eventfd counter: a uint64 in host order
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(l.evfd, one[:])
}

func (l *loop) runTasks() {
	var b [8]byte
	_, _ = unix.Read(l.evfd, b[:])
	for {
		l.mu.Lock()
		tasks := l.tasks
		l.tasks = nil
		l.mu.Unlock()
		if len(tasks) == 0 {
			return
		}
		for _, f := range tasks {
			f()
		}
	}
}

// event handles epoll's report on one socket.
func (l *loop) event(fd, slot int32, ev uint32) {
	if slot < 0 || int(slot) >= len(l.sessions) {
		return
	}
	s := l.sessions[slot]
	if s == nil || s.fd != fd {
		return // closed earlier in this round
	}
	if s.state == stDialing {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
			l.tcpConnected(s)
		}
		return
	}
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		l.read(s)
	}
	if ev&unix.EPOLLOUT != 0 && s.state != stClosing {
		l.flush(s)
	}
}

// tick runs what is due on the loop at now and returns when it next has something due:
// publishers, first dials, reconnects, and every scanInterval the CONNACK, ping and
// keepalive scan.
func (l *loop) tick(now int64) int64 {
	e := l.e
	wake := l.lastScan + int64(scanInterval)
	if now >= wake {
		l.lastScan = now
		l.scan(now)
		wake = now + int64(scanInterval)
	}
	if len(l.heap) > 0 {
		if now >= l.lastPublish+int64(publishGrain) {
			l.publishDue(now)
			l.lastPublish = now
		}
		if len(l.heap) > 0 {
			stop := e.pubStop.Load()
			if d := l.heap[0].nextDue; stop == 0 || d < stop {
				wake = min(wake, max(d, l.lastPublish+int64(publishGrain)))
			}
		}
	}
	if len(l.pending) > 0 && now >= l.lastHarvest+l.dialGrain {
		l.harvest()
		l.lastHarvest = now
	}
	if len(l.redials) > 0 {
		wake = min(wake, l.redialDue(now))
	}
	dial := l.dialDue(now)
	if len(l.pending) > 0 {
		// The next harvest, moved to the next dial if that comes within a grain of it: one
		// wake for both.
		h := l.lastHarvest + l.dialGrain
		if dial >= h && dial <= h+l.dialGrain {
			h = dial
		}
		wake = min(wake, h)
	}
	return min(wake, dial)
}

// harvest reads the CONNACKs that have arrived for the loop's deferred sessions. A session
// waiting for its CONNACK does not wake the loop (EPOLLIN is not armed): the kernel stamps
// the CONNACK's arrival, so reading it up to a dial grain later changes no figure, and one
// wake per grain serves every dial and CONNACK of the grain instead of one wake per
// CONNACK. A close or error still wakes the loop (EPOLLRDHUP, EPOLLHUP, EPOLLERR).
func (l *loop) harvest() {
	kept := l.pending[:0]
	for _, s := range l.pending {
		if s.state != stConnecting || s.fd < 0 || s.flags&sfDeferred == 0 {
			continue
		}
		l.read(s)
		if s.state == stConnecting && s.flags&sfDeferred != 0 {
			kept = append(kept, s)
		}
	}
	clear(l.pending[len(kept):])
	l.pending = kept
}

// arm makes the loop wake for s's traffic: EPOLLIN, and EPOLLOUT while bytes wait.
func (l *loop) arm(s *session) {
	s.flags &^= sfDeferred
	l.setEvents(s)
}

// setEvents tells epoll what s waits for now.
func (l *loop) setEvents(s *session) {
	ev := eventData(s.fd, s.slot)
	ev.Events = s.epollEvents()
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, int(s.fd), &ev)
}

// epollEvents returns what s waits for: the end of its TCP connect while dialing; then
// closes, its traffic unless its CONNACK is deferred, and room in the socket while bytes
// wait for it.
func (s *session) epollEvents() uint32 {
	if s.state == stDialing {
		return unix.EPOLLOUT | unix.EPOLLIN | unix.EPOLLRDHUP
	}
	ev := uint32(unix.EPOLLRDHUP)
	if s.flags&sfDeferred == 0 {
		ev |= unix.EPOLLIN
	}
	if s.flags&sfPollOut != 0 {
		ev |= unix.EPOLLOUT
	}
	return ev
}

// publishGrain is the shortest time between two publish passes of a loop: a pass sends
// every message due by then, so a loop wakes for its publishers at most 5,000 times a
// second and a fast schedule goes out in batches; a sparse one (due times further apart)
// still goes out at its due time. A thread's sleep and wake costs about 45 µs of CPU on
// the 2-core VM this was measured on (make bench-msg, 2M msg/s, CPU per message: a wake per
// message 820 ns, 100 µs grain 210-260 ns, 200 µs 153-171 ns, the previous 1 ms tick 92 ns
// but messages 0.56 ms late at the median).
const publishGrain = 200 * time.Microsecond

// scanInterval is how often a loop scans its sessions for CONNACK and ping timeouts and
// keepalives (whole seconds).
const scanInterval = 100 * time.Millisecond

// scan fails sessions whose TCP connect or CONNACK is overdue, drops those whose PINGRESP
// is, and sends PINGREQ where a keepalive has passed without a write.
func (l *loop) scan(now int64) {
	e := l.e
	for _, s := range l.sessions {
		if s == nil {
			continue
		}
		switch s.state {
		case stDialing:
			if now-s.dialStart > int64(e.cfg.DialTimeout) {
				l.fail(s, CauseTimeout, "no TCP connection within "+e.cfg.DialTimeout.String())
			}
		case stConnecting:
			if now-s.lastWrite > int64(e.cfg.ConnackTimeout) {
				l.fail(s, CauseTimeout, "no CONNACK within "+e.cfg.ConnackTimeout.String())
			}
		case stConnected:
			ka := int64(s.keepalive)
			if ka <= 0 {
				continue
			}
			if s.pingSent != 0 {
				if now-s.pingSent > int64(e.pingTimeout(s.keepalive)) {
					e.open.Add(-1)
					e.cfg.Observer.Dropped(l.idx, int(s.client), CauseKeepalive,
						"no PINGRESP within "+e.pingTimeout(s.keepalive).String())
					l.close(s)
					l.reconnect(s.client)
				}
				continue
			}
			if now-s.lastWrite >= ka {
				l.write(s, codec.AppendPingreq(l.out[:0]))
				s.pingSent = now
			}
		}
	}
}

func (e *Engine) pingTimeout(keepalive time.Duration) time.Duration {
	if e.cfg.PingTimeout > 0 {
		return e.cfg.PingTimeout
	}
	return max(keepalive, 5*time.Second)
}

// A loop dials in batches: the dials due within its grain go out together, enough of them
// (dialBatch at the loop's share of the connect rate) that one wake serves several, and the
// CONNACKs of a batch are collected at the next one (harvest). A thread's sleep and wake
// costs about 45 µs of CPU on the VM this was measured on. make bench-conn (100,000
// connections at 5,000/s, 6 workers of one loop each, so 833 dials/s per loop), CPU per
// connect: a 1 ms grain 115 µs, 5 ms 92 µs (both waking per CONNACK); with harvests and
// yields, 5 ms 57.8 µs and 8 ms 56.0 µs (medians of 6 runs). The grain stays within
// [minDialGrain, maxDialGrain], below the 10 ms after which the runtime would preempt a
// loop that sleeps through it; connect latency is unaffected, as it runs from each
// socket's own start to the kernel's arrival stamp of its CONNACK.
const (
	dialBatch    = 4
	minDialGrain = time.Millisecond
	maxDialGrain = 8 * time.Millisecond
)

// dialGrainFor returns the dial grain of a loop dialing perLoop connections a second.
func dialGrainFor(perLoop float64) time.Duration {
	if perLoop <= 0 {
		return minDialGrain
	}
	return min(max(time.Duration(dialBatch/perLoop*float64(time.Second)), minDialGrain), maxDialGrain)
}

// dialDue starts the loop's first dials that are due, client i at the connect phase's start
// plus i/ConnectRate, while fewer than maxConn are without a verdict. It returns when the
// next is due (never while the cap holds: a verdict brings the loop round again).
func (l *loop) dialDue(now int64) int64 {
	e := l.e
	start := e.connStart.Load()
	if start == 0 || e.dialStop.Load() || e.closing.Load() {
		return never
	}
	for l.nextClient < e.cfg.Clients {
		due := start
		if e.cfg.ConnectRate > 0 {
			due += int64(float64(l.nextClient) * float64(time.Second) / e.cfg.ConnectRate)
		}
		if due > now+l.dialGrain {
			return due
		}
		if l.connecting >= l.maxConn {
			return never
		}
		i := l.nextClient
		l.nextClient += len(e.loops)
		e.started.Add(1)
		l.dial(i, 0)
	}
	return never
}

// reconnect schedules the first reconnect attempt of a client whose connection dropped.
func (l *loop) reconnect(client int32) { l.schedule(client, 1) }

// retry schedules the next attempt after a failed reconnect attempt of s (not after a
// failed first connect: those are reported, not retried).
func (l *loop) retry(s *session) {
	if s.attempt > 0 {
		l.schedule(s.client, int(s.attempt)+1)
	}
}

func (l *loop) schedule(client int32, attempt int) {
	e := l.e
	if !e.cfg.Reconnect || e.closing.Load() {
		return
	}
	d := e.cfg.ReconnectMin << min(attempt-1, 20)
	if d <= 0 || d > e.cfg.ReconnectMax {
		d = e.cfg.ReconnectMax
	}
	d = d/2 + rand.N(d/2+1) // jitter: half to full, so a storm spreads out
	l.redials = append(l.redials, redialAt{due: e.now() + int64(d), client: client, attempt: uint8(min(attempt, 255))})
}

// redialDue starts the reconnect attempts that are due, within the cap on dials without a
// verdict, and returns when the next one is.
func (l *loop) redialDue(now int64) int64 {
	if l.e.closing.Load() {
		l.redials = l.redials[:0]
		return never
	}
	next := never
	due := l.dueRedials[:0]
	kept := l.redials[:0]
	for _, r := range l.redials {
		if r.due <= now && l.connecting+len(due) < l.maxConn {
			due = append(due, r)
			continue
		}
		if r.due > now {
			next = min(next, r.due)
		}
		kept = append(kept, r)
	}
	l.redials = kept
	for _, r := range due { // a failed dial schedules its next attempt into l.redials
		l.dial(int(r.client), int(r.attempt))
	}
	l.dueRedials = due[:0]
	return next
}

// dial starts the TCP connect of client i. attempt is 0 for the first connect and counts
// reconnect attempts from 1. A failure to even start is that attempt's verdict.
func (l *loop) dial(i, attempt int) {
	e := l.e
	spec := e.cfg.Client(i)
	s := &session{client: int32(i), spec: &spec, keepalive: spec.Keepalive, version: spec.Version,
		attempt: uint8(min(attempt, 255)), dialStart: e.now(), fd: -1, slot: -1}
	s.lastWrite = s.dialStart
	s.maxIn = e.inboundLimit(&spec)
	if !spec.CleanStart {
		s.flags |= sfPersistent
	}
	if spec.Publish != nil {
		l.publisher(s.client, spec.Publish) // its schedule is accounted for from now on
	}
	l.connecting++
	dst := l.brokers[spec.Broker%len(l.brokers)]
	var src unix.Sockaddr
	if spec.Source.IsValid() {
		if src = l.sources[spec.Source]; src == nil {
			src = sockaddr(netip.AddrPortFrom(spec.Source, 0))
			l.sources[spec.Source] = src
		}
	}
	fd, err := openSocket(dst, src, e.portRange)
	established := false
	if err == nil {
		err = unix.Connect(fd, dst)
		if errors.Is(err, unix.EINPROGRESS) {
			// Often the handshake is already done when connect() returns (on loopback the
			// broker's side of it runs inside the call): then the CONNECT goes out now,
			// and neither a writability event nor SO_ERROR is needed. A write to a socket
			// still connecting fails with EAGAIN; one whose connect failed, with its error.
			l.out = appendConnect(l.out[:0], s.spec, s.maxIn)
			var n int
			n, err = unix.Write(fd, l.out)
			switch {
			case errors.Is(err, unix.EAGAIN):
				err = nil
			case err == nil && n == len(l.out):
				established = true
			case err == nil: // a partial write of a fresh socket: cannot happen, but do not guess
				err = unix.EIO
			}
		}
		if err != nil {
			_ = unix.Close(fd)
		}
	}
	if err != nil {
		l.dialFailed(s, err)
		return
	}
	s.fd = int32(fd)
	s.state = stDialing
	if established {
		l.awaitConnack(s)
	}
	l.add(s)
	ev := eventData(s.fd, s.slot)
	ev.Events = s.epollEvents()
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.remove(s)
		_ = unix.Close(fd)
		s.fd, s.state = -1, stClosing // harvest passes over it
		l.dialFailed(s, err)
		return
	}
	e.sessions.Add(1)
}

// dialFailed reports a dial that failed before the loop held its socket.
func (l *loop) dialFailed(s *session, err error) {
	cause, ex := classify(err)
	l.e.cfg.Observer.Failed(l.idx, int(s.client), cause, ex)
	l.verdict(s)
	l.retry(s)
}

// awaitConnack moves s, whose CONNECT is written, to waiting for the CONNACK: collected by
// harvest unless CONNACKs come without arrival stamps here.
func (l *loop) awaitConnack(s *session) {
	s.state = stConnecting
	if !l.noStamps {
		s.flags |= sfDeferred
		l.pending = append(l.pending, s)
	}
}

// tcpConnected handles the end of s's TCP connect: on success it sends the CONNECT.
func (l *loop) tcpConnected(s *session) {
	if err := socketError(int(s.fd)); err != nil {
		cause, ex := classify(err)
		l.fail(s, cause, ex)
		return
	}
	l.awaitConnack(s)
	l.setEvents(s)
	l.write(s, appendConnect(l.out[:0], s.spec, s.maxIn))
}

// verdict counts the end of s's connect attempt once: connected, refused or failed.
func (l *loop) verdict(s *session) {
	if s.flags&sfVerdict != 0 {
		return
	}
	s.flags |= sfVerdict
	l.connecting--
	if s.attempt == 0 {
		l.e.firstVerdict()
	}
}

func (l *loop) add(s *session) {
	if n := len(l.free); n > 0 {
		s.slot = l.free[n-1]
		l.free = l.free[:n-1]
		l.sessions[s.slot] = s
		return
	}
	s.slot = int32(len(l.sessions))
	l.sessions = append(l.sessions, s)
}

func (l *loop) remove(s *session) {
	if s.slot >= 0 && int(s.slot) < len(l.sessions) && l.sessions[s.slot] == s {
		l.sessions[s.slot] = nil
		l.free = append(l.free, s.slot)
		s.slot = -1
	}
}

// read takes what the socket has, handles every whole packet and keeps the rest.
func (l *loop) read(s *session) {
	var n int
	var err error
	for {
		n, err = l.recv(int(s.fd))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if l.rxAt == 0 && n > 0 && s.state == stConnecting {
		l.noStamps = true // CONNACKs must then be read when they arrive
	}
	if errors.Is(err, unix.EAGAIN) {
		return
	}
	if n <= 0 {
		l.lost(s, err)
		return
	}
	data := l.rbuf[:n]
	pending := s.io != nil && len(s.io.in) > 0
	if pending {
		s.io.in = append(s.io.in, data...)
		data = s.io.in
	}
	used := l.traffic(s, data)
	if s.state == stClosing {
		return
	}
	rest := len(data) - used
	switch {
	case rest == 0 && pending:
		s.io.in = s.io.in[:0]
		l.release(s)
	case rest > 0 && pending:
		s.io.in = s.io.in[:copy(s.io.in, data[used:])]
	case rest > 0:
		if s.io == nil {
			s.io = &connIO{}
		}
		s.io.in = append(s.io.in[:0], data[used:]...)
	}
}

// recv reads what fd has into l.rbuf with recvmsg(2), and the arrival time of the last
// packet it took (SO_TIMESTAMPNS) into l.rxAt (0: none). The message header lives in
// the loop, so nothing is allocated.
func (l *loop) recv(fd int) (int, error) {
	m := &l.msg
	m.iov.Base = &l.rbuf[0]
	m.iov.SetLen(len(l.rbuf))
	m.hdr = unix.Msghdr{Iov: &m.iov, Control: &l.oob[0]}
	m.hdr.SetIovlen(1)
	m.hdr.SetControllen(len(l.oob))
	l.rxAt = 0
	r, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	if errno != 0 {
		return 0, errno
	}
	l.rxAt = rxStamp(l.oob[:m.hdr.Controllen])
	return int(r), nil
}

// arrival returns when the bytes being handled reached this host, as CLOCK_REALTIME ns:
// the kernel's stamp of the last packet the read took, or now if there is none or it is
// implausible (the clock was stepped). A loop busy elsewhere thus adds nothing to the
// latency of what waited in its sockets.
func (l *loop) arrival() int64 {
	now := l.e.realEpoch + l.e.now()
	if l.rxAt > 0 && l.rxAt <= now && now-l.rxAt < int64(10*time.Second) {
		return l.rxAt
	}
	return now
}

// traffic handles the whole packets at the start of in and returns the bytes it used.
// The acknowledgements owed for them go out in one write.
func (l *loop) traffic(s *session, in []byte) int {
	used := 0
	for used < len(in) && s.state != stClosing {
		n, err := l.handle(s, in[used:])
		if err != nil {
			l.protocolError(s, err)
			break
		}
		if n == 0 {
			break
		}
		used += n
	}
	if len(l.reply) > 0 {
		if s.state != stClosing {
			l.send(s, l.reply)
		}
		l.reply = l.reply[:0]
	}
	return used
}

// release drops s's buffers once both are empty: an idle connection keeps none. A small
// buffer stays for the next partial packet.
func (l *loop) release(s *session) {
	if io := s.io; io != nil && len(io.in) == 0 && len(io.out) == 0 && cap(io.in)+cap(io.out) > 4096 {
		s.io = nil
	}
}

// write sends b, which was encoded into l.out, on s, and keeps l.out (grown or not) for
// the next packet.
func (l *loop) write(s *session, b []byte) {
	l.out = b[:0]
	l.send(s, b)
}

// send writes b on s at once; what the socket does not take waits in s.io.out for
// EPOLLOUT. It returns the bytes the kernel took now, or -1 when the connection was lost.
func (l *loop) send(s *session, b []byte) int {
	s.lastWrite = l.e.now()
	if s.state == stClosing {
		return -1
	}
	if len(b) == 0 {
		return 0
	}
	if s.io != nil && len(s.io.out) > 0 {
		s.io.out = append(s.io.out, b...)
		return 0
	}
	var n int
	var err error
	for {
		n, err = unix.Write(int(s.fd), b)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		n, err = 0, nil
	}
	if err != nil {
		l.lost(s, err)
		return -1
	}
	if s.io != nil {
		s.io.pos += int64(n)
	}
	if n < len(b) {
		if s.io == nil {
			s.io = &connIO{pos: int64(n)}
		}
		s.io.out = append(s.io.out[:0], b[n:]...)
		l.pollOut(s, true)
	}
	return n
}

// flush writes what waits in s.io.out once the socket takes more.
func (l *loop) flush(s *session) {
	if s.io == nil || len(s.io.out) == 0 {
		l.pollOut(s, false)
		return
	}
	var n int
	var err error
	for {
		n, err = unix.Write(int(s.fd), s.io.out)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EAGAIN {
		return
	}
	if err != nil {
		l.lost(s, err)
		return
	}
	rest := copy(s.io.out, s.io.out[n:])
	s.io.out = s.io.out[:rest]
	s.io.pos += int64(n)
	l.written(s, s.io.pos)
	if rest == 0 && s.state != stClosing {
		l.pollOut(s, false)
		l.release(s)
	}
}

// pollOut arms or disarms EPOLLOUT on s.
func (l *loop) pollOut(s *session, on bool) {
	if on == (s.flags&sfPollOut != 0) {
		return
	}
	if on {
		s.flags |= sfPollOut
	} else {
		s.flags &^= sfPollOut
	}
	l.setEvents(s)
}

// unsent returns the bytes waiting for s's socket.
func (s *session) unsent() int {
	if s.io == nil {
		return 0
	}
	return len(s.io.out)
}

// lost handles a socket that failed or that the broker closed (err nil: end of file).
func (l *loop) lost(s *session, err error) {
	e := l.e
	switch s.state {
	case stDialing, stConnecting:
		cause, ex := CauseClosed, "connection closed before CONNACK"
		if err != nil {
			cause, ex = classify(err)
		}
		l.fail(s, cause, ex)
		return
	case stConnected:
		e.open.Add(-1)
		cause, ex := CauseClosed, "closed by the broker"
		if err != nil {
			cause, ex = classify(err)
		}
		e.cfg.Observer.Dropped(l.idx, int(s.client), cause, ex)
		l.close(s)
		l.reconnect(s.client)
		return
	}
	l.close(s)
}

// fail ends a session that never got its CONNACK.
func (l *loop) fail(s *session, cause Cause, example string) {
	l.e.cfg.Observer.Failed(l.idx, int(s.client), cause, example)
	l.verdict(s)
	l.close(s)
	l.retry(s)
}

// close closes s's socket without reporting anything more about it.
func (l *loop) close(s *session) {
	if s.state == stClosing && s.fd < 0 {
		return
	}
	if s.flags&sfVerdict == 0 && s.state != stClosing {
		s.flags |= sfVerdict // no verdict will come: the engine is closing it
		l.connecting--
	}
	s.state = stClosing
	l.detach(s)
	l.remove(s)
	if s.fd >= 0 {
		_ = unix.Close(int(s.fd)) // leaves the epoll set with it
		s.fd = -1
		l.e.sessions.Add(-1)
	}
	s.io = nil
}

func (l *loop) disconnectAll() {
	for _, s := range l.sessions {
		if s == nil {
			continue
		}
		if s.state == stConnected {
			l.write(s, codec.AppendDisconnect(l.out[:0], &codec.Disconnect{}, codec.Version(s.version)))
			if s.state == stConnected {
				l.e.open.Add(-1)
			}
		}
		l.close(s)
	}
}

// protocolError ends s on a packet that broke a rule (err says which, verdictOf how it is
// reported). A 5.0 session tells the broker why with a DISCONNECT first (section 4.13).
func (l *loop) protocolError(s *session, err error) {
	cause, code := verdictOf(err)
	switch s.state {
	case stConnecting:
		l.fail(s, cause, err.Error())
	case stConnected:
		if codec.Version(s.version) == codec.V5 {
			d := codec.Disconnect{Reason: code}
			if s.maxOut == 0 || codec.SizeDisconnect(&d, codec.V5) <= int(s.maxOut) { // [MQTT-3.2.2-15]
				l.write(s, codec.AppendDisconnect(l.out[:0], &d, codec.V5))
			}
		}
		if s.state != stConnected { // the write failed: lost has reported it
			return
		}
		l.e.open.Add(-1)
		l.e.cfg.Observer.Dropped(l.idx, int(s.client), cause, err.Error())
		l.close(s)
		l.reconnect(s.client)
	default:
		l.close(s)
	}
}
