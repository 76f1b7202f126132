package floor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/dueheap"
	"github.com/mqblast/mqblast/internal/epoll"
)

// The engine's timing constants (reactor: publishGrain, scanInterval, yieldInterval,
// maxBatch, readBufferSize), so that the floor wakes, reads and writes as it does.
const (
	publishGrain   = int64(200 * time.Microsecond)
	scanInterval   = int64(100 * time.Millisecond)
	yieldInterval  = int64(5 * time.Millisecond)
	maxBatch       = 64 << 10
	readBufferSize = 64 << 10
	never          = int64(1<<63 - 1)
)

// conn is one client connection.
type conn struct {
	fd        int
	slot      int32
	version   byte
	pollOut   bool
	closed    bool
	keepalive int64 // ns (0: none)
	lastWrite int64
	in        []byte // a packet a read cut
	out       []byte // what the socket did not take
	pub       *pub
}

// pub is a publisher: its pre-encoded PUBLISH and its schedule (message k due at
// start + phase + k*interval).
type pub struct {
	c          *conn
	first      []byte // the first message of the connection (the topic with its alias)
	tmpl       []byte // every later one
	firstPidAt int    // offset of the packet id in first (-1: QoS 0)
	pidAt      int    // in tmpl
	sentFirst  bool
	pid        uint16
	phase      int64
	interval   int64
	count      int64 // 0: no limit
	k          int64
	next       int64
	heapIdx    int32
	done       bool
}

// loop is one event loop.
type loop struct {
	f       *floor
	idx     int
	ep      int
	evfd    int
	brokers []unix.Sockaddr
	events  []unix.EpollEvent
	rbuf    []byte
	conns   []*conn
	pubs    []*pub
	heap    dueheap.Heap[*pub]
	out     []byte
	reply   []byte
	msg     struct {
		hdr unix.Msghdr
		iov unix.Iovec
	}
	oob         [64]byte
	lastScan    int64
	lastPublish int64
	begun       bool
	from, to    int64 // the window, engine clock

	received, published int64 // PUBLISH packets read and written
	rxWin, txWin        int64 // of which in the window
	lostN               int64
	lostEx              string
}

func newLoop(f *floor, idx int, brokers []netip.AddrPort) (*loop, error) {
	ep, evfd, err := epoll.New()
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	l := &loop{f: f, idx: idx, ep: ep, evfd: evfd, events: make([]unix.EpollEvent, 512),
		rbuf: make([]byte, readBufferSize), out: make([]byte, 0, maxBatch+4096)}
	for _, b := range brokers { // each loop its own: x/sys/unix encodes into the value on each call
		l.brokers = append(l.brokers, epoll.Sockaddr(b))
	}
	return l, nil
}

// notify wakes the loop through its eventfd.
func (l *loop) notify() {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(l.evfd, one[:])
}

// run is the loop: as the engine's, wait for events or the next due time, handle them.
func (l *loop) run() {
	f := l.f
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	var lastYield int64
	for {
		now := f.now()
		if now-lastYield > yieldInterval {
			runtime.Gosched()
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
			lastYield = now
		}
		wake := l.tick(now)
		timeout := int64(-1)
		if wake != never {
			timeout = max(wake-f.now(), 0)
		}
		n, err := epoll.Wait(l.ep, l.events, timeout)
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.lost(nil, err)
			break
		}
		now = f.now()
		stop := false
		for i := 0; i < n; i++ {
			ev := &l.events[i]
			if ev.Pad < 0 {
				stop = l.control()
				continue
			}
			c := l.conns[ev.Pad]
			if c.closed {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
				l.read(c, now)
			}
			if ev.Events&unix.EPOLLOUT != 0 && !c.closed {
				l.flush(c)
			}
		}
		if stop {
			break
		}
	}
	l.disconnect()
}

// control handles the loop's eventfd: publishing starts, or the run ends (true).
func (l *loop) control() bool {
	var b [8]byte
	_, _ = unix.Read(l.evfd, b[:])
	f := l.f
	if start := f.pubStart.Load(); start != 0 && !l.begun {
		l.begun = true
		l.from, l.to = f.winFrom.Load(), f.winTo.Load()
		for _, p := range l.pubs {
			p.next = start + p.phase
			if !p.c.closed {
				l.heap.Push(p)
			}
		}
	}
	return f.stop.Load()
}

// tick runs what is due: the keepalive scan every scanInterval, a publish pass at most
// every publishGrain. It returns when something is due next.
func (l *loop) tick(now int64) int64 {
	wake := l.lastScan + scanInterval
	if now >= wake {
		l.lastScan = now
		l.scan(now)
		wake = now + scanInterval
	}
	if len(l.heap) > 0 {
		if now >= l.lastPublish+publishGrain {
			l.publishDue(now)
			l.lastPublish = now
		}
		if len(l.heap) > 0 {
			stop := l.f.pubStop.Load()
			if d := l.heap[0].next; stop == 0 || d < stop {
				wake = min(wake, max(d, l.lastPublish+publishGrain))
			}
		}
	}
	return wake
}

// scan sends PINGREQ where a keepalive passed without a write.
func (l *loop) scan(now int64) {
	for _, c := range l.conns {
		if !c.closed && c.keepalive > 0 && now-c.lastWrite >= c.keepalive {
			l.send(c, pingreq[:], now)
		}
	}
}

var pingreq = [2]byte{0xc0, 0x00}

// publishDue writes every message due by now, each publisher's in one write.
func (l *loop) publishDue(now int64) {
	f := l.f
	stop := f.pubStop.Load()
	start := f.pubStart.Load()
	for len(l.heap) > 0 {
		p := l.heap[0]
		if p.next > now || (stop != 0 && p.next >= stop) {
			return
		}
		l.heap.Pop()
		c := p.c
		if c.closed {
			continue
		}
		buf := l.out[:0]
		n := int64(0)
		for p.next <= now && (stop == 0 || p.next < stop) && len(buf) < maxBatch {
			t, at := p.tmpl, p.pidAt
			if !p.sentFirst {
				t, at, p.sentFirst = p.first, p.firstPidAt, true
			}
			o := len(buf)
			buf = append(buf, t...)
			if at >= 0 {
				p.pid++
				if p.pid == 0 {
					p.pid = 1
				}
				buf[o+at], buf[o+at+1] = byte(p.pid>>8), byte(p.pid)
			}
			n++
			p.k++
			p.next = start + p.phase + p.k*p.interval
			if p.count > 0 && p.k >= p.count {
				p.done = true
				break
			}
		}
		l.out = buf[:0]
		if len(buf) > 0 {
			l.send(c, buf, now)
			l.published += n
			if now >= l.from && now < l.to {
				l.txWin += n
			}
		}
		if !p.done && !c.closed {
			l.heap.Push(p)
		}
	}
}

// read takes what the socket has (one recvmsg), answers what needs an answer in one
// write, and keeps a cut packet's tail.
func (l *loop) read(c *conn, now int64) {
	var n int
	var err error
	for {
		n, err = l.recv(c.fd)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EAGAIN) {
		return
	}
	if n <= 0 {
		l.lost(c, err)
		return
	}
	data := l.rbuf[:n]
	pending := len(c.in) > 0
	if pending {
		c.in = append(c.in, data...)
		data = c.in
	}
	used, pubs, bad := l.frames(data)
	if bad {
		l.lost(c, errors.New("malformed remaining length"))
		return
	}
	l.received += pubs
	if now >= l.from && now < l.to {
		l.rxWin += pubs
	}
	if len(l.reply) > 0 {
		l.send(c, l.reply, now)
		l.reply = l.reply[:0]
	}
	switch rest := len(data) - used; {
	case rest == 0 && pending:
		c.in = c.in[:0]
	case rest > 0 && pending:
		c.in = c.in[:copy(c.in, data[used:])]
	case rest > 0:
		c.in = append(c.in[:0], data[used:]...)
	}
}

// frames walks the whole packets at the start of in by their fixed headers, appending
// the answer each needs to l.reply: PUBACK for a QoS 1 PUBLISH, PUBREC for QoS 2, PUBREL
// for a PUBREC, PUBCOMP for a PUBREL (success, no properties: the same four bytes in 3.1.1
// and 5.0). It returns the bytes used, the PUBLISH packets among them, and whether a
// remaining length was malformed.
func (l *loop) frames(in []byte) (used int, pubs int64, bad bool) {
	for {
		rest := in[used:]
		if len(rest) < 2 {
			return used, pubs, false
		}
		rem, hl := 0, 1
		for shift := 0; ; shift += 7 {
			if hl >= len(rest) {
				return used, pubs, false
			}
			if hl == 5 {
				return used, pubs, true
			}
			b := rest[hl]
			hl++
			rem |= int(b&0x7f) << shift
			if b&0x80 == 0 {
				break
			}
		}
		if len(rest) < hl+rem {
			return used, pubs, false
		}
		body := rest[hl : hl+rem]
		var answer byte
		switch rest[0] >> 4 {
		case 3: // PUBLISH
			pubs++
			switch rest[0] >> 1 & 3 {
			case 1:
				answer = 0x40 // PUBACK
			case 2:
				answer = 0x50 // PUBREC
			}
			if answer != 0 && len(body) >= 2 {
				i := 2 + (int(body[0])<<8 | int(body[1]))
				if i+2 <= len(body) {
					l.reply = append(l.reply, answer, 2, body[i], body[i+1])
				}
			}
		case 5: // PUBREC
			if len(body) >= 2 {
				l.reply = append(l.reply, 0x62, 2, body[0], body[1]) // PUBREL
			}
		case 6: // PUBREL
			if len(body) >= 2 {
				l.reply = append(l.reply, 0x70, 2, body[0], body[1]) // PUBCOMP
			}
		}
		used += hl + rem
	}
}

// recv reads what fd has into l.rbuf with recvmsg(2) and its control data (the arrival
// stamp SO_TIMESTAMPNS adds, as the engine asks for; the floor does not look at it).
func (l *loop) recv(fd int) (int, error) {
	m := &l.msg
	m.iov.Base = &l.rbuf[0]
	m.iov.SetLen(len(l.rbuf))
	m.hdr = unix.Msghdr{Iov: &m.iov, Control: &l.oob[0]}
	m.hdr.SetIovlen(1)
	m.hdr.SetControllen(len(l.oob))
	r, _, errno := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdr)), 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// send writes b on c at once; what the socket does not take waits for EPOLLOUT.
func (l *loop) send(c *conn, b []byte, now int64) {
	c.lastWrite = now
	if c.closed || len(b) == 0 {
		return
	}
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return
	}
	var n int
	var err error
	for {
		n, err = unix.Write(c.fd, b)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EAGAIN) {
		n, err = 0, nil
	}
	if err != nil {
		l.lost(c, err)
		return
	}
	if n < len(b) {
		c.out = append(c.out[:0], b[n:]...)
		l.pollOut(c, true)
	}
}

// flush writes what waits in c.out once the socket takes more.
func (l *loop) flush(c *conn) {
	if len(c.out) == 0 {
		l.pollOut(c, false)
		return
	}
	n, err := unix.Write(c.fd, c.out)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
		return
	}
	if err != nil {
		l.lost(c, err)
		return
	}
	c.out = c.out[:copy(c.out, c.out[n:])]
	if len(c.out) == 0 {
		l.pollOut(c, false)
	}
}

func (l *loop) pollOut(c *conn, on bool) {
	if on == c.pollOut {
		return
	}
	c.pollOut = on
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd), Pad: c.slot}
	if on {
		ev.Events |= unix.EPOLLOUT
	}
	_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, c.fd, &ev)
}

// lost counts a connection that failed or that the broker closed (err nil), or a loop
// whose epoll failed (c nil), and closes it.
func (l *loop) lost(c *conn, err error) {
	l.lostN++
	if l.lostEx == "" {
		l.lostEx = "closed by the broker"
		if err != nil {
			l.lostEx = err.Error()
		}
	}
	if c != nil && !c.closed {
		c.closed = true
		_ = unix.Close(c.fd)
	}
}

// disconnect sends DISCONNECT on every open connection and closes the loop.
func (l *loop) disconnect() {
	for _, c := range l.conns {
		if !c.closed && len(c.out) == 0 {
			_, _ = unix.Write(c.fd, []byte{0xe0, 0x00})
		}
	}
	l.closeAll()
}

// closeAll closes every socket of the loop and its epoll. The eventfd stays open until
// Run has waited for every loop (closeEventfd): Run may still wake a loop that has ended.
func (l *loop) closeAll() {
	for _, c := range l.conns {
		if !c.closed {
			c.closed = true
			_ = unix.Close(c.fd)
		}
	}
	_ = unix.Close(l.ep)
}

// closeEventfd closes the loop's eventfd once nothing wakes it any more.
func (l *loop) closeEventfd() { _ = unix.Close(l.evfd) }

// Due and SetIndex make a publisher a dueheap.Item, as the engine's are.
func (p *pub) Due() int64       { return p.next }
func (p *pub) SetIndex(i int32) { p.heapIdx = i }
