package reactor

import (
	"time"

	"github.com/mqblast/mqblast/codec"
)

// Timers: what a loop does when its time comes rather than when a socket is ready: the
// publish passes, the harvest of deferred CONNACKs, and the timeout and keepalive scan.

// tick runs what is due on the loop at now and returns when it next has something due:
// publishers, first dials, reconnects, and every scanInterval the CONNACK, ping and
// keepalive scan.
func (l *loop) tick(now int64) int64 {
	e := l.e
	if e.prof.Load() != l.prof {
		l.syncProfile()
	}
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
		case stUpgrade:
			if now-s.lastWrite > int64(e.cfg.ConnackTimeout) {
				l.fail(s, CauseTimeout, "no WebSocket upgrade response within "+e.cfg.ConnackTimeout.String())
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
