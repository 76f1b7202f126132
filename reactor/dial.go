package reactor

import (
	"errors"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/epoll"
)

// Dialing: the first dials at the connect rate, reconnects with backoff, the TCP connect
// and the CONNECT that follows it.

// A loop dials in batches: the dials due within its grain go out together, enough of them
// (dialBatch at the loop's share of the connect rate) that one wake serves several, and the
// CONNACKs of a batch are collected at the next one (harvest). A thread's sleep and wake
// costs about 45 µs of CPU on the VM this was measured on. make bench-conn (100,000
// connections at 5,000/s, 6 workers of one loop each, so 833 dials/s per loop), CPU per
// connect: a 1 ms grain 115 µs, 5 ms 92 µs (both waking per CONNACK); with harvests and
// yields, 5 ms 57.8 µs and 8 ms 56.0 µs (medians of 6 runs). The grain stays within
// [minDialGrain, maxDialGrain]; connect latency is unaffected, as it runs from each
// socket's own start to the kernel's arrival stamp of its CONNACK. A loop that dials slowly
// (a million connections at 5,000/s from 51 worker processes: under 100 dials a second
// each) still batches 4: each wake after a sleep of 10 ms or more costs a loop far more
// than its dial (the runtime takes the P from a thread that long in a system call, and
// sysmon polls), so fewer, longer sleeps are cheaper than many just under 10 ms. One
// process, one loop, 2,000 connections at 100/s against mqblast sink: 308 and 284 µs of
// CPU per connect with an 8 ms cap, 231 and 209 µs with 50 ms (1,000/s: 63 µs).
const (
	dialBatch    = 4
	minDialGrain = time.Millisecond
	maxDialGrain = 50 * time.Millisecond
)

// dialGrainFor returns the dial grain of a loop dialing perLoop connections a second.
func dialGrainFor(perLoop float64) time.Duration {
	if perLoop <= 0 {
		return minDialGrain
	}
	return min(max(time.Duration(dialBatch/perLoop*float64(time.Second)), minDialGrain), maxDialGrain)
}

// dialDue starts the loop's first dials that are due, client i at the connect phase's start
// plus ConnectDelay plus i/ConnectRate, while fewer than maxConn are without a verdict. It
// returns when the next is due (never while the cap holds: a verdict brings the loop round
// again).
func (l *loop) dialDue(now int64) int64 {
	e := l.e
	start := e.dialStart()
	if start == 0 || e.dialStop.Load() || e.closing.Load() {
		return never
	}
	pc := e.pace.Load()
	if pc != l.pace {
		l.pace = pc
		l.dialGrain = int64(dialGrainFor(pc.rate / float64(len(e.loops))))
	}
	for l.nextClient < e.cfg.Clients {
		due := start
		switch {
		case pc == nil && e.cfg.ConnectRate > 0:
			due += int64(float64(l.nextClient) * float64(time.Second) / e.cfg.ConnectRate)
		case pc != nil:
			due = pc.due(l.nextClient, start)
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

// dialStart returns when the first dial is due (engine ns): the connect phase's start
// plus ConnectDelay; 0 before Connect.
func (e *Engine) dialStart() int64 {
	start := e.connStart.Load()
	if start == 0 || e.cfg.ConnectRate <= 0 {
		return start
	}
	return start + int64(e.cfg.ConnectDelay)
}

// connectPace is the connect schedule after SetConnectRate: client i is dialed at t +
// (i-from)/rate (engine ns; t 0: the connect phase's start), at once with rate 0; none
// while paused (PauseConnect).
type connectPace struct {
	t      int64
	from   float64
	rate   float64
	paused bool
}

// due returns when client i is due, the connect phase having started at start.
func (pc *connectPace) due(i int, start int64) int64 {
	if pc.paused {
		return never
	}
	t := pc.t
	if t == 0 {
		t = start
	}
	if pc.rate <= 0 {
		return t
	}
	return t + int64((float64(i)-pc.from)*float64(time.Second)/pc.rate)
}

// SetConnectRate changes the pace of the first dials still to come to rate connections a
// second (0: as fast as MaxConnecting allows) from now on: the schedule goes on from where
// it is, so that the change makes no burst. Before Connect it replaces Config.ConnectRate.
// rate must be finite and >= 0.
func (e *Engine) SetConnectRate(rate float64) error {
	if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
		return errors.New("reactor: connect rate must be a finite number >= 0 (0: as fast as MaxConnecting allows)")
	}
	e.setPace(&connectPace{rate: rate})
	return nil
}

// PauseConnect stops the first dials still to come from now on, until SetConnectRate
// resumes them from where they stopped (a search steps the connect rate with pauses
// between its steps). Before Connect, the connect phase starts paused.
func (e *Engine) PauseConnect() { e.setPace(&connectPace{paused: true}) }

// ConnectPending returns the first dials started that have no verdict yet (connected,
// refused or failed).
func (e *Engine) ConnectPending() int64 { return max(e.started.Load()-e.verdicts.Load(), 0) }

// setPace makes next the connect pace from now on, going on from where the schedule is.
func (e *Engine) setPace(next *connectPace) {
	e.rates.mu.Lock()
	start := e.dialStart()
	if start != 0 {
		now := e.now()
		pc := e.pace.Load()
		if pc == nil {
			pc = &connectPace{rate: e.cfg.ConnectRate}
		}
		t := pc.t
		if t == 0 {
			t = start
		}
		// Where the schedule is now: the client index due at now.
		pos := float64(e.started.Load())
		if pc.rate > 0 && !pc.paused {
			pos = pc.from + float64(now-t)*pc.rate/float64(time.Second)
		}
		next.t, next.from = now, max(pos, 0)
	}
	e.pace.Store(next)
	e.rates.mu.Unlock()
	for _, l := range e.loops {
		l.wakeup()
	}
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
	if !e.cfg.Reconnect || e.closing.Load() || (e.cfg.ReconnectClient != nil && !e.cfg.ReconnectClient(int(client))) {
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
	if l.cleanNext[int32(i)] {
		spec.CleanStart = true
		delete(l.cleanNext, int32(i))
	}
	s := &session{client: int32(i), spec: &spec, keepalive: uint16(min(spec.Keepalive/time.Second, 65535)), version: spec.Version,
		attempt: uint8(min(attempt, 255)), dialStart: e.now(), fd: -1, slot: -1}
	s.lastWrite = s.dialStart
	s.maxIn = e.inboundLimit(&spec)
	if !spec.CleanStart {
		s.flags |= sfPersistent
	}
	if attempt == 0 && len(spec.Subscriptions) > 0 {
		s.flags |= sfSubPending // until its SUBACK, or its end: the subscribe phase waits for one of them
	}
	if spec.Publish != nil {
		l.publisher(s.client, spec.Publish) // its schedule is accounted for from now on
	}
	l.connecting++
	dst := l.brokers[spec.Broker%len(l.brokers)]
	var src unix.Sockaddr
	if spec.Source.IsValid() {
		if src = l.sources[spec.Source]; src == nil {
			src = epoll.Sockaddr(netip.AddrPortFrom(spec.Source, 0))
			l.sources[spec.Source] = src
		}
	}
	fd, err := openSocket(dst, src, e.portRange)
	if tg := &l.targets[spec.Broker%len(l.targets)]; tg.scheme != schemeTCP {
		if err == nil && tg.scheme == schemeWS {
			l.dialWS(s, fd, dst, tg)
			return
		}
		if err == nil {
			if err = unix.Connect(fd, dst); err == nil || errors.Is(err, unix.EINPROGRESS) {
				l.dialTransport(s, fd, tg)
				return
			}
			_ = unix.Close(fd)
		}
		l.dialFailed(s, err)
		return
	}
	established := false
	if err == nil {
		err = unix.Connect(fd, dst)
		if errors.Is(err, unix.EINPROGRESS) {
			// Often the handshake is already done when connect() returns (on loopback the
			// broker's side of it runs inside the call): then the CONNECT goes out now,
			// and neither a writability event nor SO_ERROR is needed. A write to a socket
			// still connecting fails with EAGAIN; one whose connect failed, with its error.
			l.out = AppendConnect(l.out[:0], s.spec, s.maxIn)
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
	l.e.cfg.Observer.Failed(l.idx, int(s.client), int(s.attempt), cause, ex)
	l.verdict(s)
	l.retry(s)
}

// awaitConnack moves s, whose CONNECT is written, to waiting for the CONNACK: collected by
// harvest unless CONNACKs come without arrival stamps here.
func (l *loop) awaitConnack(s *session) {
	s.state = stConnecting
	l.watch(s)
	if !l.noStamps {
		s.flags |= sfDeferred
		l.pending = append(l.pending, s)
	}
}

// tcpConnected handles the end of s's TCP connect: on success it sends the CONNECT (the
// WebSocket upgrade request on ws://).
func (l *loop) tcpConnected(s *session) {
	if err := socketError(int(s.fd)); err != nil {
		cause, ex := classify(err)
		l.fail(s, cause, ex)
		return
	}
	if s.flags&sfTransport != 0 {
		l.upgrade(s)
		return
	}
	l.awaitConnack(s)
	l.setEvents(s)
	l.write(s, AppendConnect(l.out[:0], s.spec, s.maxIn))
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
