package reactor

import (
	"sync"
	"sync/atomic"
	"time"
)

// Churn is a reconnect storm: it ends the established connections of the clients pick
// selects, all at once, as a network blip does (each socket closed without a DISCONNECT:
// the broker keeps a persistent session, and sends a will), and dials each of them again
// after down (at once when 0) as reconnect attempt 1. Observer.Reconnected reports each that comes back, with
// the latency of its reconnect; Failed one that does not (Config.Reconnect's backoff then
// retries it). A publisher's schedule goes on meanwhile: what falls due while it is away
// is unsent (disconnected); a persistent session's messages in flight are re-sent on
// return, a clean one's dropped (InFlightDropped). With clean the clients reconnect with a
// clean start whatever their ClientSpec says, so that the broker discards their sessions.
// Churn returns, once every loop has ended them, how many connections it ended. pick runs
// on the loops' goroutines. Safe for concurrent use.
func (e *Engine) Churn(pick func(client int) bool, clean bool, down time.Duration) int64 {
	var ended atomic.Int64
	var wg sync.WaitGroup
	for _, l := range e.loops {
		wg.Add(1)
		if !l.execute(func() {
			defer wg.Done()
			ended.Add(l.churn(pick, clean, down))
		}) {
			wg.Done()
		}
	}
	wg.Wait()
	return ended.Load()
}

// churn is Churn on the loop.
func (l *loop) churn(pick func(client int) bool, clean bool, down time.Duration) int64 {
	e := l.e
	if e.closing.Load() {
		return 0
	}
	due := e.now() + int64(down)
	var n int64
	for _, s := range l.sessions {
		if s == nil || s.state != stConnected || !pick(int(s.client)) {
			continue
		}
		e.open.Add(-1)
		l.close(s)
		if clean {
			if l.cleanNext == nil {
				l.cleanNext = map[int32]bool{}
			}
			l.cleanNext[s.client] = true
		}
		l.redials = append(l.redials, redialAt{due: due, client: s.client, attempt: 1})
		n++
	}
	return n
}
