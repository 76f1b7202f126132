package reactor

import (
	"context"
	"math/rand/v2"
	"sync/atomic"

	"time"

	"github.com/mqblast/mqblast/codec"

	"github.com/panjf2000/gnet/v2"
)

// Session states.
const (
	stConnecting uint8 = iota // TCP up, CONNECT sent, waiting for CONNACK
	stConnected               // CONNACK success
	stClosing                 // we are closing it: its close is not a drop
)

// session is one MQTT client connection. It is owned by its loop from OnOpen on.
type session struct {
	c         gnet.Conn
	spec      *ClientSpec   // until the CONNACK has started its subscriptions and publisher; nil after
	done      chan struct{} // the dialing worker waits on it for the connect verdict
	client    int32
	slot      int32 // index in loop.sessions
	keepalive time.Duration
	version   byte
	attempt   uint8 // 0: first connect; n: n-th reconnect attempt
	state     uint8
	dialStart int64 // engine clock, ns
	lastWrite int64
	pingSent  int64     // 0: no PINGREQ outstanding
	pub       *pubState // the client's publisher state, nil if it does not publish
}

// signal tells the dialing worker that the session has its connect verdict.
func (s *session) signal() {
	if s.done != nil {
		select {
		case s.done <- struct{}{}:
		default:
		}
		s.done = nil
	}
}

// loop is the engine's state for one gnet event loop. Everything in it but tickPending is
// touched only from that loop.
type loop struct {
	e           *Engine
	idx         int
	el          gnet.EventLoop
	sessions    []*session
	free        []int32
	out         []byte // scratch encode buffer; gnet copies what the socket does not take
	reply       []byte // acknowledgements owed for what OnTraffic read, written once at its end
	redials     []redialAt
	connack     codec.Connack
	tickPending atomic.Bool
	busy        atomic.Bool   // the loop has a publish schedule: tick every millisecond
	wake        chan struct{} // tells the ticker that the loop just became busy
	lastScan    int64         // engine clock of the last timeout and keepalive scan

	heap    pubHeap             // publishers by next due time
	pubs    map[int32]*pubState // by client: survives reconnects
	payload []byte              // scratch payload, header written per message
	topic   []byte              // scratch topic for %rand_N
	pub     codec.Publish       // scratch packets, reused
	inPub   codec.Publish
	ack     codec.Ack
	suback  codec.Suback
}

// redialAt is a reconnect attempt waiting for its backoff to pass.
type redialAt struct {
	due     int64 // engine clock
	client  int32
	attempt uint8
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

// handOver passes the reconnects that are due to the redial workers.
func (l *loop) handOver(now int64) {
	kept := l.redials[:0]
	for _, r := range l.redials {
		if r.due <= now && !l.e.closing.Load() {
			select {
			case l.e.redial <- redialJob{client: int(r.client), attempt: int(r.attempt)}:
				continue
			default: // the workers are busy: try again next tick
			}
		}
		if !l.e.closing.Load() {
			kept = append(kept, r)
		}
	}
	l.redials = kept
}

func newLoop(e *Engine, idx int) *loop {
	return &loop{e: e, idx: idx, wake: make(chan struct{}, 1), out: make([]byte, 0, maxBatch+4096), payload: make([]byte, e.maxPayload)}
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

// Run is the loop's timer tick (gnet.Runnable): CONNACK and ping timeouts, keepalive.
func (l *loop) Run(context.Context) error {
	l.tickPending.Store(false)
	l.tick(l.e.now())
	return nil
}

func (l *loop) tick(now int64) {
	e := l.e
	if len(l.heap) > 0 {
		l.publishDue(now)
	}
	l.busy.Store(len(l.heap) > 0 || (len(l.pubs) > 0 && e.pubStart.Load() != 0 && e.pubStop.Load() == 0))
	if now-l.lastScan < int64(scanInterval) {
		return
	}
	l.lastScan = now
	if len(l.redials) > 0 {
		l.handOver(now)
	}
	for _, s := range l.sessions {
		if s == nil {
			continue
		}
		switch s.state {
		case stConnecting:
			if now-s.dialStart > int64(e.cfg.DialTimeout+e.cfg.ConnackTimeout) ||
				now-s.lastWrite > int64(e.cfg.ConnackTimeout) {
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

// write sends b on s (on the loop: gnet writes at once and buffers what the socket does
// not take).
func (l *loop) write(s *session, b []byte) {
	l.out = b[:0]
	_, _ = s.c.Write(b)
	s.lastWrite = l.e.now()
}

// fail ends a session that never got its CONNACK.
func (l *loop) fail(s *session, cause Cause, example string) {
	l.e.cfg.Observer.Failed(l.idx, int(s.client), cause, example)
	s.signal()
	l.close(s)
	l.retry(s)
}

// close closes s without reporting anything more about it.
func (l *loop) close(s *session) {
	s.state = stClosing
	l.remove(s)
	_ = s.c.Close()
}

func (l *loop) disconnectAll() {
	for _, s := range l.sessions {
		if s == nil {
			continue
		}
		if s.state == stConnected {
			l.write(s, codec.AppendDisconnect(l.out[:0], &codec.Disconnect{}, codec.Version(s.version)))
			l.e.open.Add(-1)
		}
		l.close(s)
	}
}

// handler is the gnet event handler of the engine.
type handler struct {
	gnet.BuiltinEventEngine
	e *Engine
}

func (h *handler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s, ok := c.Context().(*session)
	if !ok { // an anchor
		return nil, gnet.None
	}
	e := h.e
	l := e.loops[int(s.client)%len(e.loops)]
	s.c = c
	s.state = stConnecting
	l.add(s)
	e.sessions.Add(1)
	l.write(s, appendConnect(l.out[:0], s.spec))
	return nil, gnet.None
}

func (h *handler) OnClose(c gnet.Conn, err error) gnet.Action {
	s, ok := c.Context().(*session)
	if !ok {
		return gnet.None
	}
	e := h.e
	l := e.loops[int(s.client)%len(e.loops)]
	e.sessions.Add(-1)
	switch s.state {
	case stConnecting:
		ex := "connection closed before CONNACK"
		if err != nil {
			ex = err.Error()
		}
		e.cfg.Observer.Failed(l.idx, int(s.client), CauseClosed, ex)
		s.signal()
		l.retry(s)
	case stConnected:
		e.open.Add(-1)
		cause, ex := CauseClosed, "closed by the broker"
		if err != nil {
			cause, ex = classify(err)
		}
		e.cfg.Observer.Dropped(l.idx, int(s.client), cause, ex)
		l.reconnect(s.client)
	}
	s.state = stClosing
	l.remove(s)
	return gnet.None
}

func (h *handler) OnTraffic(c gnet.Conn) gnet.Action {
	s, ok := c.Context().(*session)
	if !ok {
		_, _ = c.Discard(-1)
		return gnet.None
	}
	l := h.e.loops[int(s.client)%len(h.e.loops)]
	in, _ := c.Peek(-1)
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
	if used > 0 { // Discard(0) would drop a buffered partial packet
		_, _ = c.Discard(used)
	}
	if len(l.reply) > 0 { // one write for every acknowledgement of this batch
		if s.state != stClosing {
			_, _ = c.Write(l.reply)
			s.lastWrite = l.e.now()
		}
		l.reply = l.reply[:0]
	}
	return gnet.None
}

func (l *loop) protocolError(s *session, err error) {
	if s.state == stConnecting {
		l.fail(s, CauseProtocol, err.Error())
		return
	}
	if s.state == stConnected {
		l.e.open.Add(-1)
		l.e.cfg.Observer.Dropped(l.idx, int(s.client), CauseProtocol, err.Error())
		l.close(s)
		l.reconnect(s.client)
		return
	}
	l.close(s)
}

// setBusy switches the loop's ticker to the publishing grain at once.
func (l *loop) setBusy() {
	if !l.busy.Swap(true) {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}
