package netemu

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/tuning"
)

// slotSize holds one frame: the veths keep the default 1500-byte MTU, so a frame is at most
// 1514 bytes (1518 with a VLAN tag). A longer one is counted as a send error and dropped.
const slotSize = 2048

// schedFIFO is SCHED_FIFO (sched(7)).
const schedFIFO = 1

// maxReadsPerWake bounds the frames read from one side per wake, so that a flood on one side
// does not hold back the due frames of the other.
const maxReadsPerWake = 256

// fifo is one direction's frames in arrival order, which is also due order (due times never
// decrease), in a ring of fixed slots.
type fifo struct {
	buf      []byte
	lens     []int32
	due      []int64 // monotonic ns
	head, n  int
	lastDue  int64
	capacity int
}

func newFIFO(frames int) fifo {
	return fifo{buf: make([]byte, frames*slotSize), lens: make([]int32, frames), due: make([]int64, frames), capacity: frames}
}

// dirStats are one direction's counters, written by the bridge thread only (queued once
// per read and per send, not per frame).
type dirStats struct {
	frames, bytes, sent, lost, overflow, kernelDrops, sendErrors, queued, lateNs, maxLateNs, readLagNs, maxReadLagNs atomic.Uint64
}

func (d *dirStats) load() DirStats {
	return DirStats{
		Frames: d.frames.Load(), Bytes: d.bytes.Load(), Sent: d.sent.Load(), Lost: d.lost.Load(),
		Overflow: d.overflow.Load(), KernelDrops: d.kernelDrops.Load(), SendErrors: d.sendErrors.Load(), Queued: d.queued.Load(),
		Late: time.Duration(d.lateNs.Load()), MaxLate: time.Duration(d.maxLateNs.Load()),
		ReadLag: time.Duration(d.readLagNs.Load()), MaxReadLag: time.Duration(d.maxReadLagNs.Load()),
	}
}

// direction moves frames read from in to out.
type direction struct {
	in, out int
	q       fifo
	st      dirStats
	up      bool
}

type bridge struct {
	prof     *atomic.Pointer[tuning.Profile]
	fds      [2]int // tob (broker side), toc (client side)
	stopFd   int
	up, down direction
	rng      *rand.Rand
	wakes    atomic.Uint64
	cpuNs    atomic.Int64 // the thread's CPU time once it ended
	spinNs   atomic.Uint64
	overNs   atomic.Int64
	tid      atomic.Int32 // the thread's id while it runs
	normal   bool
	cmsg     [64]byte // control buffer of recvmsg: the receive timestamp
	realtime atomic.Bool
	closed   atomic.Bool
	// oversleep is how much later than asked ppoll returns on timeouts (EWMA, ns).
	oversleep int64
}

// openPackets opens the AF_PACKET sockets on tob and toc in the emulator namespace e.
func openPackets(e string) (broker, client int, err error) {
	fds := [2]int{-1, -1}
	for i, dev := range []string{"tob", "toc"} {
		err := inNS(e, func() error {
			fd, err := packetSocket(dev)
			fds[i] = fd
			return err
		})
		if err != nil {
			if fds[0] >= 0 {
				unix.Close(fds[0])
			}
			return -1, -1, fmt.Errorf("netemu: cannot open an AF_PACKET socket on %s in %s: %w", dev, e, err)
		}
	}
	return fds[0], fds[1], nil
}

// newBridge makes the emulator between the frames of broker's side and client's side (any
// datagram fds: AF_PACKET sockets, or socket pairs in tests), which it owns from now on.
func newBridge(prof *atomic.Pointer[tuning.Profile], broker, client int, cfg Config) (*bridge, error) {
	b := &bridge{prof: prof, fds: [2]int{broker, client}, stopFd: -1, normal: cfg.NormalPriority}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("netemu: eventfd: %w", err)
	}
	b.stopFd = efd
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	b.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	frames := cmp.Or(cfg.QueueFrames, 8192)
	b.up = direction{in: client, out: broker, q: newFIFO(frames), up: true}
	b.down = direction{in: broker, out: client, q: newFIFO(frames)}
	return b, nil
}

// packetSocket opens a blocking AF_PACKET socket bound to dev that sees only the frames dev
// receives (PACKET_IGNORE_OUTGOING: not the ones we send on it), with large buffers.
func packetSocket(dev string) (int, error) {
	ifi, err := net.InterfaceByName(dev)
	if err != nil {
		return -1, err
	}
	proto := htons(unix.ETH_P_ALL)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return -1, err
	}
	for _, o := range []struct{ level, opt, v int }{
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1},
		{unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16 << 20},
		{unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 16 << 20},
	} {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.v); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("setsockopt %d/%d: %w", o.level, o.opt, err)
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (b *bridge) stop() {
	one := uint64(1)
	_, _ = unix.Write(b.stopFd, (*[8]byte)(unsafe.Pointer(&one))[:])
}

func (b *bridge) close() {
	b.closed.Store(true)
	for _, fd := range []int{b.fds[0], b.fds[1], b.stopFd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

func (b *bridge) stats() Stats {
	b.kernelDrops()
	return Stats{Up: b.up.st.load(), Down: b.down.st.load(), Wakes: b.wakes.Load(), Realtime: b.realtime.Load(), CPU: b.cpu(),
		Spin: time.Duration(b.spinNs.Load()), Oversleep: time.Duration(b.overNs.Load())}
}

// kernelDrops adds the drops PACKET_STATISTICS reports (and resets) for each socket.
func (b *bridge) kernelDrops() {
	if b.closed.Load() {
		return // the fds may be another file's by now
	}
	for _, d := range []*direction{&b.up, &b.down} {
		if s, err := unix.GetsockoptTpacketStats(d.in, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			d.st.kernelDrops.Add(uint64(s.Drops))
		}
	}
}

func nanotime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// run is the emulator loop; it returns when stop is called.
func (b *bridge) run() {
	runtime.LockOSThread() // never unlocked: the timer slack below stays with this thread
	// Timer slack defaults to 50 µs, which ppoll would add to every sleep.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if !b.normal {
		// SCHED_FIFO: on a busy host a timer wake waits for the running task's slice
		// otherwise, and frames leave that much late. The thread sleeps between frames and
		// spins at most spinMax, and the kernel's RT throttling bounds it anyway.
		err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: schedFIFO, Priority: 10}, 0)
		b.realtime.Store(err == nil)
	}
	b.tid.Store(int32(unix.Gettid()))
	pfds := []unix.PollFd{
		{Fd: int32(b.up.in), Events: unix.POLLIN},
		{Fd: int32(b.down.in), Events: unix.POLLIN},
		{Fd: int32(b.stopFd), Events: unix.POLLIN},
	}
	var ts unix.Timespec
	readUp, readDown := true, true // which sides may have frames waiting
	for {
		now := nanotime()
		realOffset := clockOffset()
		prof := b.prof.Load()
		if readUp {
			readUp = b.read(&b.up, &prof.Up, now, realOffset)
		}
		if readDown {
			readDown = b.read(&b.down, &prof.Down, now, realOffset)
		}
		next := b.sendDue()
		if readUp || readDown {
			continue // a side had more than maxReadsPerWake waiting
		}
		var tsp *unix.Timespec
		target := int64(0)
		if next != 0 {
			// Wake early by the usual oversleep, so that the median frame leaves on time.
			target = next - b.oversleep
			wait := target - nanotime()
			if wait <= 0 {
				continue
			}
			ts = unix.NsecToTimespec(wait)
			tsp = &ts
		}
		for i := range pfds {
			pfds[i].Revents = 0
		}
		// Through the runtime's syscall path, not a raw one: a goroutine that never enters the
		// scheduler is preempted by signal every 10 ms, and its locked thread then waits for
		// a normal-priority thread to hand the P back (tens of ms on a loaded host).
		n, err := unix.Ppoll(pfds, tsp, nil)
		b.wakes.Add(1)
		if err != nil && err != unix.EINTR {
			panic("BUG: netemu: ppoll: " + err.Error())
		}
		if pfds[2].Revents != 0 {
			b.cpuNs.Store(threadCPU())
			b.tid.Store(0)
			return
		}
		readUp, readDown = pfds[0].Revents != 0, pfds[1].Revents != 0
		if n == 0 && err == nil && target != 0 {
			// Timed out: learn how late the kernel woke us (EWMA, 1/8), within 0 to 200 µs.
			late := nanotime() - target
			b.oversleep += (late - b.oversleep) / 8
			b.oversleep = min(max(b.oversleep, 0), int64(200*time.Microsecond))
			b.overNs.Store(b.oversleep)
		}
	}
}

// sendDue sends the due frames of both directions, spinning on the clock for a frame due
// within spinMax rather than sleeping again (a wake costs more than the spin), and returns
// the due time of the next frame, 0 if none waits.
func (b *bridge) sendDue() int64 {
	for {
		now := nanotime()
		next := b.send(&b.up, now)
		if n := b.send(&b.down, now); n != 0 && (next == 0 || n < next) {
			next = n
		}
		t := nanotime()
		if next == 0 || next-t > int64(spinMax) {
			return next
		}
		for nanotime() < next {
		}
		b.spinNs.Add(uint64(nanotime() - t))
	}
}

// spinMax is the longest the emulator spins on the clock for the next due frame instead of
// sleeping: less than one thread wake (about 45 µs of CPU on this project's VMs).
const spinMax = 20 * time.Microsecond

func realtime() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	return ts.Nano()
}

// clockOffset returns CLOCK_REALTIME minus CLOCK_MONOTONIC. Each reading of the real clock
// is bracketed by two of the monotonic one, and the tightest of three brackets is kept: a
// thread preempted between two readings (a busy host, the hypervisor's steal) would
// otherwise overstate the offset by the preemption, and date the kernel's receive stamps,
// and with them the frames' due times, that much too early.
func clockOffset() int64 {
	best, width := int64(0), int64(math.MaxInt64)
	for range 3 {
		m0 := nanotime()
		r := realtime()
		m1 := nanotime()
		if m1-m0 < width {
			best, width = r-(m0+(m1-m0)/2), m1-m0
		}
	}
	return best
}

// cmsgTimestamp returns the SCM_TIMESTAMPNS stamp in control, 0 if there is none.
func cmsgTimestamp(control []byte) int64 {
	for len(control) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&control[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(control) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && int(h.Len) >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&control[unix.CmsgLen(0)]))
			return ts.Nano()
		}
		control = control[unix.CmsgSpace(int(h.Len)-unix.CmsgLen(0)):]
	}
	return 0
}

// cpu is the emulator thread's CPU time: from /proc/self/task/TID/schedstat while it runs
// (so that the thread itself spends nothing on it), from its last getrusage once it ended.
func (b *bridge) cpu() time.Duration {
	if tid := b.tid.Load(); tid != 0 {
		if c, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(int(tid)) + "/schedstat"); err == nil {
			if f := strings.Fields(string(c)); len(f) > 0 {
				if ns, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return time.Duration(ns)
				}
			}
		}
	}
	return time.Duration(b.cpuNs.Load())
}

func threadCPU() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// read takes every frame waiting on d.in (up to maxReadsPerWake), drops the profile's loss,
// and queues the rest with their due times. It reports whether more may be waiting.
func (b *bridge) read(d *direction, p *tuning.Path, now, realOffset int64) bool {
	q := &d.q
	var scratch [slotSize]byte
	for range maxReadsPerWake {
		var buf []byte
		full := q.n == q.capacity
		if full {
			buf = scratch[:] // read it anyway, to drop it
		} else {
			slot := (q.head + q.n) % q.capacity
			buf = q.buf[slot*slotSize : (slot+1)*slotSize]
		}
		iov := unix.Iovec{Base: &buf[0], Len: uint64(len(buf))}
		msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &b.cmsg[0], Controllen: uint64(len(b.cmsg))}
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(d.in), uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT|unix.MSG_TRUNC)
		if e != 0 {
			d.st.queued.Store(uint64(q.n))
			return false // EAGAIN: nothing more waits
		}
		var arrival int64
		if rt := cmsgTimestamp(b.cmsg[:msg.Controllen]); rt != 0 {
			// The kernel's receive stamp (CLOCK_REALTIME) on the monotonic clock: the delay
			// counts from when the frame came, not from when this thread woke to read it. A
			// frame stamped after the wake's clock reading came while this loop read the
			// ones before it (or the thread was preempted): the clock is read again, since
			// the wake's reading would date it before it came and let it leave early.
			arrival = rt - realOffset
			if arrival > now {
				now = nanotime()
				arrival = min(arrival, now)
			}
			lag := uint64(now - arrival)
			d.st.readLagNs.Add(lag)
			if lag > d.st.maxReadLagNs.Load() {
				d.st.maxReadLagNs.Store(lag)
			}
		} else {
			arrival = nanotime() // no stamp: as read, never as of the wake
		}
		n := int(r)
		d.st.frames.Add(1)
		d.st.bytes.Add(uint64(n))
		if full {
			d.st.overflow.Add(1)
			continue
		}
		if n > len(buf) {
			d.st.sendErrors.Add(1) // larger than a slot: cannot be forwarded whole
			continue
		}
		if p.Loss > 0 && lossable(buf[:n]) && b.rng.Float64() < p.Loss {
			d.st.lost.Add(1)
			continue
		}
		due := arrival + int64(p.Delay)
		if p.Jitter > 0 {
			due += int64(p.Jitter) - b.rng.Int64N(2*int64(p.Jitter)+1)
		}
		if due < q.lastDue {
			due = q.lastDue // keep the order: never leave before the frame ahead
		}
		q.lastDue = due
		slot := (q.head + q.n) % q.capacity
		q.lens[slot] = int32(n)
		q.due[slot] = due
		q.n++
	}
	d.st.queued.Store(uint64(q.n))
	return true
}

// send writes every due frame of d to d.out and returns the due time of the next one, 0 if
// none waits.
func (b *bridge) send(d *direction, now int64) int64 {
	q := &d.q
	for q.n > 0 {
		due := q.due[q.head]
		if due > now {
			d.st.queued.Store(uint64(q.n))
			return due
		}
		buf := q.buf[q.head*slotSize:]
		_, _, e := unix.Syscall(unix.SYS_WRITE, uintptr(d.out), uintptr(unsafe.Pointer(&buf[0])), uintptr(q.lens[q.head]))
		if e != 0 {
			d.st.sendErrors.Add(1)
		} else {
			d.st.sent.Add(1)
			late := uint64(now - due)
			d.st.lateNs.Add(late)
			if late > d.st.maxLateNs.Load() {
				d.st.maxLateNs.Store(late)
			}
		}
		q.head = (q.head + 1) % q.capacity
		q.n--
	}
	d.st.queued.Store(0)
	return 0
}

// lossable reports whether the profile's loss applies to frame: IPv4 and IPv6, except IPv6
// neighbour discovery (ICMPv6 types 133-137). ARP and everything else is never dropped.
func lossable(frame []byte) bool {
	if len(frame) < 14 {
		return false
	}
	switch uint16(frame[12])<<8 | uint16(frame[13]) {
	case 0x0800:
		return true
	case 0x86dd:
		// Next header ICMPv6 (58) straight after the fixed header, type 133-137.
		if len(frame) >= 14+40+1 && frame[14+6] == 58 && frame[14+40] >= 133 && frame[14+40] <= 137 {
			return false
		}
		return true
	}
	return false
}
