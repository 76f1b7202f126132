package reactor

import (
	"time"

	"github.com/mqblast/mqblast/codec"
)

// Timers: what a loop does when its time comes rather than when a socket is ready: the
// publish passes, the harvest of deferred CONNACKs, and the timeout and keepalive wheel.

// tick runs what is due on the loop at now and returns when it next has something due:
// publishers, first dials, reconnects, and the sessions whose timeout or keepalive the
// wheel holds for now.
func (l *loop) tick(now int64) int64 {
	e := l.e
	if e.prof.Load() != l.prof {
		l.syncProfile()
	}
	if l.wh.next != 0 && now >= tickTime(l.wh.next) {
		l.scan(now)
	}
	if len(l.warm) > 0 {
		l.sweep(now)
	}
	if len(l.heap) > 0 && now >= l.lastPublish+int64(publishGrain) {
		l.publishDue(now)
		l.lastPublish = now
	}
	if len(l.pending) > 0 && now >= l.lastHarvest+l.dialGrain {
		l.harvest()
		l.lastHarvest = now
	}
	wake := now + int64(idleWake)
	if len(l.redials) > 0 {
		wake = min(wake, l.redialDue(now))
	}
	dial := l.dialDue(now)
	// The wakes for publishers and the wheel are taken after the passes above, which add to
	// them: a harvested CONNACK starts its client's publisher, a dial or a CONNACK puts its
	// session in the wheel. (Taken before the harvest, a reconnected publisher waited for
	// the next idle wake: TestEnginePersistentSessionResend.)
	if len(l.heap) > 0 {
		stop := e.stopAt()
		if d := l.heap[0].nextDue; stop == 0 || d < stop {
			wake = min(wake, max(d, l.lastPublish+int64(publishGrain)))
		}
	}
	if l.wh.next != 0 {
		wake = min(wake, tickTime(l.wh.next))
	}
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

// publishGrain is the shortest time between two publish passes of a loop: a pass sends
// every message due by then, so a loop wakes for its publishers at most 5,000 times a
// second and a fast schedule goes out in batches; a sparse one (due times further apart)
// still goes out at its due time. A thread's sleep and wake costs about 45 µs of CPU on
// the 2-core VM this was measured on (make bench-msg, 2M msg/s, CPU per message: a wake per
// message 820 ns, 100 µs grain 210-260 ns, 200 µs 153-171 ns, the previous 1 ms tick 92 ns
// but messages 0.56 ms late at the median).
const publishGrain = 200 * time.Microsecond

// scanInterval is the wheel's tick: a loop looks at a session whose CONNACK, TCP connect,
// PINGRESP or WebSocket upgrade is due within one scanInterval after its timeout.
const scanInterval = 100 * time.Millisecond

// idleWake bounds a loop's sleep when nothing is due. Each wake after a sleep of more than
// 10 ms costs far more than the loop's own work: the Go runtime's sysmon takes the P from a
// thread blocked that long in a system call and then polls every 20 µs for a while. An
// idle process with two loops spent 10 ms of CPU a second waking every 100 ms, 2.6 ms a
// second waking every second (27 ms every 5 ms: wakes cost, not the sleep).
const idleWake = time.Second

// The timer wheel. A loop does not scan its sessions for timeouts and keepalives: each
// session that may time out or owes a PINGREQ sits in the wheel's bucket for the tick of its
// deadline (session.wheelAt), and the loop looks at a bucket's sessions when its tick
// comes. Scanning every session every 100 ms cost CPU in proportion to the sessions held,
// while they were set up and while they were held (make bench-conn-curve: the client's CPU
// per connection set-up grew with the count and its CPU per held connection-second was
// some 30 times the keepalive floor); the wheel costs one look per session per deadline.
// A deadline that moves later (a write postpones the keepalive) does not move the session:
// it is looked at at its old tick and put back for its new one. A deadline that comes
// earlier (a new state) puts it in the earlier bucket, and the later entry is stale: a
// bucket's entry counts only when its session's wheelAt is the bucket's tick.
const wheelSlots = 1024 // ticks ahead (102.4 s): a later deadline waits in the last one and is put back

type wheel struct {
	buckets [wheelSlots][]int32 // session slots by tick % wheelSlots
	tick    uint32              // the last tick looked at
	next    uint32              // the earliest tick with an entry (0: none)
	n       int                 // entries, stale ones included
}

// pingGrid spaces the ticks at which a loop sends PINGREQs for keepalives of pingGridFrom or
// more: each goes on the last grid tick at or before its due time, up to pingGrid early, so
// that a loop holding thousands of idle sessions wakes for their pings once a second
// instead of on every tick. Each wake of an idle process costs far more than its work: on
// the 2-core VM this was measured on, the Go runtime's sysmon, woken by the first system
// call after a sleep, polls every 20 µs for a millisecond or more (some 60 sleeps and
// wakes), in each of the ~50 worker and ~50 sink processes of a million connections. At
// pingGridFrom (10 s) a ping up to a second early adds at most a tenth to the pings sent.
const (
	pingGrid     = time.Second
	pingGridFrom = 10 * time.Second
	gridTicks    = uint32(pingGrid / scanInterval)
)

// pingTick is the tick of the last grid second at or before due.
func pingTick(due int64) uint32 { return uint32(due/int64(pingGrid)) * gridTicks }

// pingEarly is how early a keepalive's PINGREQ may go: pingGrid on the grid, else 0.
func pingEarly(ka time.Duration) int64 {
	if ka >= pingGridFrom {
		return int64(pingGrid)
	}
	return 0
}

// tickTime is the engine clock at which tick t comes; tickAfter the first tick after d.
func tickTime(t uint32) int64  { return int64(t) * int64(scanInterval) }
func tickAfter(d int64) uint32 { return uint32(d/int64(scanInterval)) + 1 }

// watch puts s in the wheel for its state's deadline, if it has one: its TCP connect, its
// CONNACK or upgrade response, its PINGRESP, its next PINGREQ.
func (l *loop) watch(s *session) {
	if s.slot < 0 {
		return // not added yet: add watches it
	}
	e := l.e
	var t uint32
	switch s.state {
	case stDialing:
		t = tickAfter(s.dialStart + int64(e.cfg.DialTimeout))
	case stConnecting, stUpgrade:
		t = tickAfter(s.lastWrite + int64(e.cfg.ConnackTimeout))
	case stConnected:
		switch {
		case s.keepalive == 0:
			return
		case s.pingSent != 0:
			t = tickAfter(s.pingSent + int64(e.pingTimeout(s.ka())))
		case s.ka() >= pingGridFrom:
			t = pingTick(s.lastWrite + int64(s.ka()))
		default:
			t = tickAfter(s.lastWrite + int64(s.ka()) - 1) // due at lastWrite+ka (>=)
		}
	default:
		return
	}
	w := &l.wh
	if w.n == 0 {
		w.tick = uint32(e.now() / int64(scanInterval))
	}
	t = min(max(t, w.tick+1), w.tick+wheelSlots-1)
	if s.wheelAt > w.tick && s.wheelAt <= t {
		return // it is in the wheel for this tick or an earlier one
	}
	b := &w.buckets[t%wheelSlots]
	*b = append(*b, s.slot)
	s.wheelAt = t
	w.n++
	if w.next == 0 || t < w.next {
		w.next = t
	}
}

// scan looks at the sessions whose tick has come by now: fails those whose TCP connect,
// CONNACK or upgrade is overdue, drops those whose PINGRESP is, sends PINGREQ where a
// keepalive has passed without a write, and puts back those whose deadline moved on.
func (l *loop) scan(now int64) {
	w := &l.wh
	last := uint32(now / int64(scanInterval))
	for w.tick < last && w.n > 0 {
		w.tick++
		b := &w.buckets[w.tick%wheelSlots]
		for _, slot := range *b { // watch puts nothing in this bucket: its ticks are after w.tick
			if int(slot) >= len(l.sessions) {
				continue
			}
			if s := l.sessions[slot]; s != nil && s.wheelAt == w.tick {
				s.wheelAt = 0
				l.check(s, now)
			}
		}
		w.n -= len(*b)
		*b = (*b)[:0]
	}
	w.tick = max(w.tick, last)
	w.next = 0
	for t := w.tick + 1; w.n > 0 && t < w.tick+wheelSlots; t++ {
		if len(w.buckets[t%wheelSlots]) > 0 {
			w.next = t
			break
		}
	}
}

// check acts on s if its deadline has passed, else puts it back in the wheel.
func (l *loop) check(s *session, now int64) {
	e := l.e
	switch s.state {
	case stDialing:
		if now-s.dialStart > int64(e.cfg.DialTimeout) {
			l.fail(s, CauseTimeout, "no TCP connection within "+e.cfg.DialTimeout.String())
			return
		}
	case stConnecting:
		if now-s.lastWrite > int64(e.cfg.ConnackTimeout) {
			ex := "no CONNACK within " + e.cfg.ConnackTimeout.String()
			if s.version == 5 {
				ex += ": the broker may not support MQTT 5.0 (it did not answer the 5.0 CONNECT), or it is too busy to answer; " + hintV311
			}
			l.fail(s, CauseTimeout, ex)
			return
		}
	case stUpgrade:
		if now-s.lastWrite > int64(e.cfg.ConnackTimeout) {
			l.fail(s, CauseTimeout, "no WebSocket upgrade response within "+e.cfg.ConnackTimeout.String())
			return
		}
	case stConnected:
		ka := int64(s.ka())
		if ka <= 0 {
			return
		}
		if s.pingSent != 0 {
			if now-s.pingSent > int64(e.pingTimeout(s.ka())) {
				e.open.Add(-1)
				e.cfg.Observer.Dropped(l.idx, int(s.client), CauseKeepalive,
					"no PINGRESP within "+e.pingTimeout(s.ka()).String())
				l.close(s)
				l.reconnect(s.client)
				return
			}
		} else if now-s.lastWrite >= ka-pingEarly(s.ka()) {
			l.write(s, codec.AppendPingreq(l.out[:0]))
			s.pingSent = now
		}
	default:
		return
	}
	if s.state != stClosing {
		l.watch(s)
	}
}

// ka is s's keepalive.
func (s *session) ka() time.Duration { return time.Duration(s.keepalive) * time.Second }

func (e *Engine) pingTimeout(keepalive time.Duration) time.Duration {
	if e.cfg.PingTimeout > 0 {
		return e.cfg.PingTimeout
	}
	return max(keepalive, 5*time.Second)
}
