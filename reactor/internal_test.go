package reactor

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestIdleSessionSize guards the memory of an idle connection: the session struct is all
// the heap an idle connected client keeps (80 bytes is its allocation size class).
func TestIdleSessionSize(t *testing.T) {
	if n := unsafe.Sizeof(session{}); n > 80 {
		t.Errorf("session is %d bytes, want <= 80", n)
	}
}

// TestPublisherSize guards the memory of a publisher: its state is what it keeps beside its
// session (its spec is its group's, its topic in the loop's store); 208 bytes is its
// allocation size class.
func TestPublisherSize(t *testing.T) {
	if n := unsafe.Sizeof(pubState{}); n > 208 {
		t.Errorf("pubState is %d bytes, want <= 208", n)
	}
}

func TestDialGrainFor(t *testing.T) {
	check := func(perLoop float64, want time.Duration) {
		t.Helper()
		if got := dialGrainFor(perLoop); got != want {
			t.Errorf("dialGrainFor(%v) = %v, want %v", perLoop, got, want)
		}
	}
	check(0, time.Millisecond)         // as fast as allowed: no batching needed
	check(100_000, time.Millisecond)   // fast: the floor
	check(2500, 1600*time.Microsecond) // 4 dials a batch
	check(1000, 4*time.Millisecond)
	check(100, 40*time.Millisecond) // a slow loop still batches 4
	check(1, 50*time.Millisecond)
}

// TestDueNear: a due time comes back from its low 48 bits when it is less than 2^47 ns
// (39 h) from the receiver's clock, either way; further off it wraps to the other side.
func TestDueNear(t *testing.T) {
	now := time.Now().UnixNano()
	const half = int64(1) << 47
	for _, due := range []int64{now, now - 1, now + 1, now - half, now + half - 1, now - int64(time.Hour)} {
		if got := dueNear(uint64(due)&(1<<48-1), now); got != due {
			t.Errorf("dueNear(%d, now %d) = %d (off by %d)", due, now, got, got-due)
		}
	}
	if got, due := dueNear(uint64(now-half-1)&(1<<48-1), now), now-half-1; got != due+1<<48 {
		t.Errorf("39 h + 1 ns back: %d, want it wrapped to %d", got, due+1<<48)
	}
}

// TestWheel: a loop looks at a session when its deadline comes, not on every tick: idle
// sessions with a 30 s keepalive are looked at for the first time on the ping grid's last
// second at or before it, when each gets its PINGREQ, then for its PINGRESP's timeout; a session that wrote
// since is put back for its new deadline without a PINGREQ; a TCP connect and a CONNACK that
// do not come fail at their timeouts, which come before the keepalives.
func TestWheel(t *testing.T) {
	l := testLoop(t)
	e := l.e
	const n = 200
	now := e.now()
	var peers []int
	var ss []*session
	for range n {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
		s := &session{fd: int32(fds[0]), version: 4, state: stConnected, flags: sfVerdict, keepalive: 30, lastWrite: now}
		l.add(s)
		ss, peers = append(ss, s), append(peers, fds[1])
	}
	if l.wh.n != n {
		t.Fatalf("%d sessions in the wheel, want %d", l.wh.n, n)
	}
	due := now + int64(30*time.Second)
	if at := tickTime(l.wh.next); at > due || at <= due-int64(pingGrid) || at%int64(pingGrid) != 0 {
		t.Errorf("first look at %v, want the last whole second at or before the keepalive %v", time.Duration(at), time.Duration(due))
	}
	pings := func() (got int) {
		buf := make([]byte, 16)
		for _, p := range peers {
			if m, _ := unix.Read(p, buf); m == 2 && buf[0] == 0xc0 {
				got++
			}
		}
		return got
	}
	// A session wrote 10 s later: at the keepalive it is put back, not pinged.
	ss[0].lastWrite = now + int64(10*time.Second)
	l.scan(now + int64(29*time.Second))
	if got := pings(); got != 0 || l.wh.n != n {
		t.Fatalf("before the keepalive: %d PINGREQs, %d in the wheel", got, l.wh.n)
	}
	at := tickTime(l.wh.next)
	l.scan(at)
	if got := pings(); got != n-1 {
		t.Errorf("at the keepalive: %d PINGREQs, want %d", got, n-1)
	}
	if ss[0].pingSent != 0 || ss[1].pingSent == 0 || ss[0].wheelAt <= l.wh.tick || ss[1].wheelAt <= l.wh.tick {
		t.Errorf("after the keepalive: sessions not back in the wheel (ticks %d, %d; now %d)", ss[0].wheelAt, ss[1].wheelAt, l.wh.tick)
	}
	if want := tickAfter(ss[1].pingSent + int64(e.pingTimeout(30*time.Second))); ss[1].wheelAt != want {
		t.Errorf("a pinged session is due at tick %d, want its PINGRESP timeout's %d", ss[1].wheelAt, want)
	}
	l.scan(now + int64(41*time.Second))
	if got := pings(); got != 1 {
		t.Errorf("the session that wrote later: %d PINGREQs at its own keepalive, want 1", got)
	}
	// A dial and a CONNACK that do not come fail at their timeouts (a loop of its own: the
	// scans above ran the wheel 41 s ahead of the engine's clock).
	l = testLoop(t)
	e = l.e
	d := &session{fd: -1, state: stDialing, dialStart: e.now(), flags: sfVerdict}
	c := &session{fd: -1, state: stConnecting, lastWrite: e.now(), flags: sfVerdict}
	l.add(d)
	l.add(c)
	first := min(d.dialStart+int64(e.cfg.DialTimeout), c.lastWrite+int64(e.cfg.ConnackTimeout))
	if at := tickTime(l.wh.next); at <= first || at > first+int64(scanInterval) {
		t.Errorf("next look at %v, want within a tick after the first timeout %v", time.Duration(at), time.Duration(first))
	}
	l.scan(e.now() + int64(max(e.cfg.DialTimeout, e.cfg.ConnackTimeout)) + int64(scanInterval))
	if d.state != stClosing || c.state != stClosing {
		t.Errorf("overdue dial and CONNACK: states %d and %d, want both closed (%d)", d.state, c.state, stClosing)
	}
}

// TestPingGrid: idle sessions whose 30 s keepalives fall due over most of a second are all
// pinged at one tick, the whole second before the first of them (none more than a second
// early), so the loop wakes once for them; sessions with a 5 s keepalive, under the grid's
// threshold, are pinged at their own ticks, never early.
func TestPingGrid(t *testing.T) {
	second := int64(time.Second)
	type peer struct {
		s  *session
		fd int
	}
	add := func(l *loop, ka uint16, lastWrite int64) peer {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
		s := &session{fd: int32(fds[0]), version: 4, state: stConnected, flags: sfVerdict, keepalive: ka, lastWrite: lastWrite}
		l.add(s)
		return peer{s, fds[1]}
	}
	pinged := func(ps []peer) (n int) {
		buf := make([]byte, 16)
		for _, p := range ps {
			if m, _ := unix.Read(p.fd, buf); m == 2 && buf[0] == 0xc0 {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		ka    uint16
		n     int
		every int64 // between the sessions' last writes
		ticks int   // the ticks at which they are pinged
		early bool  // whether a ping may go before its keepalive
	}{{30, 100, int64(9 * time.Millisecond), 1, true}, {5, 10, int64(90 * time.Millisecond), 10, false}} {
		l := testLoop(t)
		base := (l.e.now()/second + 1) * second // a whole second of the engine clock
		var ps []peer
		for i := range c.n { // last writes from base+100 ms to base+991 ms
			ps = append(ps, add(l, c.ka, base+int64(100*time.Millisecond)+int64(i)*c.every))
		}
		ka := int64(c.ka) * second
		var ticks []time.Duration
		for l.wh.next != 0 && tickTime(l.wh.next) < base+ka+2*second {
			at := tickTime(l.wh.next)
			l.scan(at)
			if pinged(ps) > 0 {
				ticks = append(ticks, time.Duration(at-base))
			}
		}
		if len(ticks) != c.ticks || c.early && ticks[0] != time.Duration(ka) {
			t.Errorf("keepalive %d s: pinged at %v after the whole second before the last writes, want %d tick(s)%s",
				c.ka, ticks, c.ticks, map[bool]string{true: " at the keepalive's whole second", false: ""}[c.early])
		}
		for _, p := range ps {
			early := p.s.lastWrite + ka - p.s.pingSent
			if p.s.pingSent == 0 || early > second || !c.early && early > 0 {
				t.Errorf("keepalive %d s: a ping %v early (sent at %d), want at most %v", c.ka, time.Duration(early), p.s.pingSent, map[bool]time.Duration{true: pingGrid}[c.early])
			}
		}
	}
}

// TestClockOnWallSeconds: an engine's clock starts at the last whole second of the wall
// clock, so that the whole seconds of two engines' clocks (their ping grids) are the same
// instants however far apart they start.
func TestClockOnWallSeconds(t *testing.T) {
	var epochs []time.Time
	for range 2 {
		e, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Loops: 1, Observer: NopObserver{}})
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now()
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		if e.epoch.Nanosecond() != 0 || e.epoch.After(before) || before.Sub(e.epoch) >= time.Second {
			t.Errorf("engine clock started at %v, %v before Start: want the last whole second", e.epoch, before.Sub(e.epoch))
		}
		if e.realEpoch != e.epoch.UnixNano() {
			t.Errorf("realEpoch %d, want the epoch's %d", e.realEpoch, e.epoch.UnixNano())
		}
		if d := time.Duration(e.now()) - time.Since(e.epoch); d > time.Millisecond || d < -time.Millisecond {
			t.Errorf("engine clock off the monotonic clock by %v", d)
		}
		epochs = append(epochs, e.epoch)
		_ = e.Stop()
		time.Sleep(300 * time.Millisecond)
	}
	// By the monotonic clock, which the engine clock follows: whole seconds to within the
	// wall clock's slewing (ns).
	if d := epochs[1].Sub(epochs[0]); d.Round(time.Millisecond)%time.Second != 0 {
		t.Errorf("two engines' clocks %v apart, want whole seconds", d)
	}
}
