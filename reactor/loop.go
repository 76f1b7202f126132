package reactor

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/dueheap"
	"github.com/mqblast/mqblast/internal/epoll"
	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// Session states.
const (
	stDialing    uint8 = iota // TCP connect in progress
	stConnecting              // TCP up, CONNECT sent, waiting for CONNACK
	stConnected               // CONNACK success
	stClosing                 // closed by us: nothing more is reported about it
	stHandshake               // TCP connect and TLS handshake on a handshake worker
	stUpgrade                 // WebSocket upgrade request sent, waiting for the 101 response
)

// Session flags.
const (
	sfVerdict    = 1 << iota // the connect attempt has its verdict
	sfPollOut                // EPOLLOUT is armed: unsent bytes wait for the socket
	sfDeferred               // EPOLLIN is not armed: the CONNACK is collected by harvest
	sfPersistent             // clean session / clean start 0: the broker may keep its session
	sfTransport              // TLS or WebSocket: loop.tr holds the transport at the slot
	sfHandshake              // a handshake worker has the socket: the loop must not close it
	sfSubPending             // a first connect's subscriptions await their SUBACK
	sfRAP                    // a filter has Retain As Published: RETAIN says how it was published
)

// session is one MQTT client connection, owned by its loop. An idle connected session is
// this struct, its slot and the kernel's socket: 80 bytes of heap.
type session struct {
	io        *connIO     // bytes not yet sent or not yet a whole packet; nil when none
	spec      *ClientSpec // until the CONNACK has started its subscriptions and publisher; nil after
	pub       *pubState   // the client's publisher state, nil if it does not publish
	dialStart int64       // engine clock, ns
	lastWrite int64
	pingSent  int64 // 0: no PINGREQ outstanding
	client    int32
	slot      int32 // index in loop.sessions
	fd        int32
	maxOut    uint32 // 5.0 server Maximum Packet Size (0: none)
	maxIn     uint32 // the client's inbound packet limit: Config.MaxInbound or the CONNECT's smaller one
	wheelAt   uint32 // the wheel's tick it is due to be looked at (0 or past: not in the wheel)
	keepalive uint16 // seconds (0: none)
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
	tr       []*transport // by slot: the transports of TLS and WebSocket sessions (nil: TCP)

	mu    sync.Mutex
	tasks []func() // run on the loop; appended from any goroutine
	shut  bool     // no task is accepted any more
	stop  bool     // under mu: the loop ends after this round

	brokers     []unix.Sockaddr
	targets     []target // by broker: scheme, host, path
	sources     map[netip.Addr]unix.Sockaddr
	nextClient  int // the next client of this loop to dial first (client i is loop i%loops's)
	connecting  int // dials without a verdict
	maxConn     int // cap on connecting
	redials     []redialAt
	cleanNext   map[int32]bool  // clients whose next dial has a clean start (Churn's clean)
	away        map[int32]int64 // persistent clients whose connection ended: engine clock then
	dueRedials  []redialAt      // scratch for redialDue
	wh          wheel           // sessions by the tick of their next timeout or keepalive
	lastPublish int64           // engine clock of the last publish pass
	lastYield   int64           // engine clock the loop last passed through the Go scheduler
	dialGrain   int64           // ns: the dials due within it of now go out now
	pace        *connectPace    // the connect pace dialGrain is for (nil: Config.ConnectRate)
	lastHarvest int64           // engine clock of the last harvest
	pending     []*session      // sessions whose CONNACK harvest collects

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
	heap     dueheap.Heap[*pubState]  // publishers by next due time
	pubs     map[int32]*pubState      // by client: survives reconnects
	specs    map[specKey]*PublishSpec // the publishers' shared specs (sharedSpec)
	topics   []byte                   // the publishers' topics (keepTopic)
	prof     *profile                 // the rate profile the heap's due times follow (nil: none)
	rx       map[int32]*rxState       // by client: QoS 2 ids survive reconnects to a persistent session
	resp     map[int32]*respState     // by client: the responders' (ClientSpec.Respond)
	payload  []byte                   // scratch payload, header written per message
	topic    []byte                   // scratch topic for %rand_N
	tpl      []byte                   // scratch payload rendered from a template
	mark     [payloadtpl.MarkLen]byte // scratch text mark
	vars     payloadtpl.Vars          // scratch template values
	// userMarks are the User Properties of the specs that carry the mark in one, and
	// markVal the mark's value in pub's (that of propsOf).
	userMarks map[*PublishSpec]*userMark
	markVal   []byte
	pub       codec.Publish // scratch packets, reused
	inPub     codec.Publish
	resp1     codec.Publish // a responder's response
	ack       codec.Ack
	suback    codec.Suback
	disc      codec.Disconnect
	// propsOf and propsAlias are the spec and alias flag whose 5.0 properties pub holds.
	propsOf    *PublishSpec
	propsAlias bool
	rxArrival  int64    // arrival() of the current read (0: not worked out yet)
	frames     []byte   // scratch: WebSocket frames of one write
	wire       []byte   // scratch: TLS records of one write, what TLS wrote during a read
	plain      []byte   // scratch: plaintext of one read over TLS
	ctl        []byte   // scratch: WebSocket control frames owed for one read
	keys       maskKeys // WebSocket masking keys

	// warm are the transports whose record layer has its cipher state built, which the
	// sweep of lastSweep looked at (records.go).
	warm      []*secured
	lastSweep int64
	// recErr is the error of the record that ended the records of the read being handled
	// (nil: none); recordEnd takes it.
	recErr error
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
	ep, evfd, err := epoll.New()
	if err != nil {
		return nil, err
	}
	l := &loop{e: e, idx: idx, ep: ep, evfd: evfd, events: make([]unix.EpollEvent, 512),
		rbuf: make([]byte, readBufferSize), sources: map[netip.Addr]unix.Sockaddr{},
		nextClient: idx,
		dialGrain:  int64(dialGrainFor(e.cfg.ConnectRate / float64(e.cfg.Loops))),
		maxConn:    max(1, (e.cfg.MaxConnecting+e.cfg.Loops-1)/e.cfg.Loops),
		out:        make([]byte, 0, maxBatch+4096), payload: make([]byte, e.maxPayload)}
	copy(l.payload[MeasuredSize:], e.cfg.Payload) // message writes only the bytes before it
	for _, b := range e.brokers {
		l.brokers = append(l.brokers, epoll.Sockaddr(b))
	}
	l.targets = e.targets
	l.keys = newMaskKeys()
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
	for {
		now := e.now()
		l.yield(now)
		wake := l.tick(now)
		timeout := int64(-1)
		if wake != never {
			timeout = max(wake-e.now(), 0)
		}
		n, err := epoll.Wait(l.ep, l.events, timeout)
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
			if i&15 == 15 {
				l.midRound()
			}
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

// midRound runs, every 16 events of a long round, what must not wait for its end: the
// publish pass and the yield. A loop that reads a thousand busy sockets in one round would
// otherwise build what falls due meanwhile only after the round, late by the round's length
// (make bench-fanout, 2M msg/s received on two cores: schedule lag p50 1.4 ms, p99 11.8 ms
// with the pass only between rounds; 0.18 and 5.4 ms with it). A clock read costs about
// 25 ns, a socket's read a few µs.
func (l *loop) midRound() {
	now := l.e.now()
	l.yield(now)
	if len(l.heap) > 0 && now >= l.heap[0].nextDue && now >= l.lastPublish+int64(publishGrain) {
		l.publishDue(now)
		l.lastPublish = now
	}
}

// yield passes through the Go scheduler when the loop has not for yieldInterval.
func (l *loop) yield(now int64) {
	if now-l.lastYield > int64(yieldInterval) {
		runtime.Gosched()
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		l.lastYield = now
	}
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

func (l *loop) add(s *session) {
	if n := len(l.free); n > 0 {
		s.slot = l.free[n-1]
		l.free = l.free[:n-1]
		l.sessions[s.slot] = s
	} else {
		s.slot = int32(len(l.sessions))
		l.sessions = append(l.sessions, s)
	}
	l.watch(s)
}

func (l *loop) remove(s *session) {
	if s.slot >= 0 && int(s.slot) < len(l.sessions) && l.sessions[s.slot] == s {
		l.sessions[s.slot] = nil
		if s.flags&sfTransport != 0 {
			l.tr[s.slot] = nil
			s.flags &^= sfTransport
		}
		l.free = append(l.free, s.slot)
		s.slot = -1
	}
}
