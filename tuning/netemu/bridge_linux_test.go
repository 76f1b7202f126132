package netemu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/tuning"
)

// testBridge runs a bridge between two socket pairs (no namespaces, no root): it returns the
// test's ends, broker side and client side, and stops the bridge when the test ends.
func testBridge(t *testing.T, p tuning.Profile) (b *bridge, broker, client int) {
	t.Helper()
	pair := func() [2]int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		t.Cleanup(func() { unix.Close(fds[1]) })
		return fds
	}
	bp, cp := pair(), pair()
	var prof atomic.Pointer[tuning.Profile]
	prof.Store(&p)
	b, err := newBridge(&prof, bp[0], cp[0], Config{Seed: 7, QueueFrames: 4096, NormalPriority: true})
	if err != nil {
		t.Fatal(err)
	}
	return b, bp[1], cp[1]
}

func runBridge(t *testing.T, b *bridge) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); b.run() }()
	t.Cleanup(func() { b.stop(); <-done; b.close() })
}

// frame is a 64-byte Ethernet frame of ethertype typ carrying seq and the send time.
func frame(typ uint16, seq uint32) []byte {
	f := make([]byte, 64)
	binary.BigEndian.PutUint16(f[12:], typ)
	binary.BigEndian.PutUint32(f[14:], seq)
	binary.BigEndian.PutUint64(f[18:], uint64(nanotime()))
	return f
}

// receive reads frames from fd until none came for quiet, returning their sequence numbers
// and how long each took from its send time.
func receive(t *testing.T, fd int, quiet time.Duration) (seqs []uint32, took []time.Duration) {
	t.Helper()
	buf := make([]byte, 2048)
	tv := unix.NsecToTimeval(int64(quiet))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) {
			// A signal is not quiet: with a receive timeout the kernel fails the read with
			// EINTR instead of restarting it, and the runtime's preemption signal (SIGURG)
			// can reach a thread blocked in it.
			continue
		}
		if err != nil {
			return seqs, took
		}
		if n != 64 {
			t.Fatalf("a frame of %d bytes came out, want 64", n)
		}
		seqs = append(seqs, binary.BigEndian.Uint32(buf[14:]))
		took = append(took, time.Duration(nanotime()-int64(binary.BigEndian.Uint64(buf[18:]))))
	}
}

// TestReceiveInterrupted: a SIGURG that interrupts receive's read does not end the frames.
// The runtime's preemption signal did, in one run of TestBridgeDelayKeepsOrder in about 40.
func TestReceiveInterrupted(t *testing.T) {
	t.Parallel()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	tids := make(chan int, 1)
	got := make(chan []uint32, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		seqs, _ := receive(t, fds[1], 200*time.Millisecond)
		got <- seqs
	}()
	tid := <-tids
	task := "/proc/self/task/" + strconv.Itoa(tid) + "/"
	// settled: the thread has no SIGURG pending, and then is blocked in read(2) of the socket
	// (in this order: a thread still in the read it is about to leave has its signal no
	// longer pending; and once receive returned, the thread may run this test's reads).
	inRead := fmt.Sprintf("%d %#x ", unix.SYS_READ, fds[1])
	settled := func() bool {
		st, err := os.ReadFile(task + "status")
		if err != nil {
			return false
		}
		_, pnd, _ := strings.Cut(string(st), "SigPnd:\t")
		mask, err := strconv.ParseUint(pnd[:min(16, len(pnd))], 16, 64)
		if err != nil || mask&(1<<(unix.SIGURG-1)) != 0 {
			return false
		}
		sc, err := os.ReadFile(task + "syscall")
		return err == nil && strings.HasPrefix(string(sc), inRead)
	}
	wait := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !settled(); time.Sleep(time.Millisecond) {
			select {
			case seqs := <-got:
				t.Fatalf("receive returned %v %s, before any frame came", seqs, what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receiving thread is not blocked in read(2) %s", what)
			}
		}
	}
	wait("at the start")
	if err := unix.Tgkill(unix.Getpid(), tid, unix.SIGURG); err != nil {
		t.Fatal(err)
	}
	wait("after a SIGURG")
	if _, err := unix.Write(fds[0], frame(0x0800, 1)); err != nil {
		t.Fatal(err)
	}
	if seqs := <-got; !slices.Equal(seqs, []uint32{1}) {
		t.Errorf("receive returned %v, want the frame sent after the signal, [1]", seqs)
	}
}

// TestBridgeDelayKeepsOrder sends frames both ways through delay ± jitter as large as the
// delay: each way, every frame arrives, in order, none before the delay minus the jitter,
// and the median near the delay.
func TestBridgeDelayKeepsOrder(t *testing.T) {
	tm := tier.Timing(t)
	p, err := tuning.ParseProfile("up:delay=3ms,up:jitter=1ms,down:delay=1ms,down:jitter=1ms")
	if err != nil {
		t.Fatal(err)
	}
	b, broker, client := testBridge(t, p)
	runBridge(t, b)
	const n = 300
	for _, d := range []struct {
		name     string
		from, to int
		delay    time.Duration
	}{{"up", client, broker, 3 * time.Millisecond}, {"down", broker, client, time.Millisecond}} {
		got := make(chan []time.Duration, 1)
		var seqs []uint32
		go func() {
			var took []time.Duration
			seqs, took = receive(t, d.to, 500*time.Millisecond)
			got <- took
		}()
		for i := range n {
			if _, err := unix.Write(d.from, frame(0x0800, uint32(i))); err != nil {
				t.Fatal(err)
			}
			if i%20 == 19 {
				time.Sleep(500 * time.Microsecond)
			}
		}
		took := <-got
		if len(seqs) != n || !slices.IsSorted(seqs) || seqs[0] != 0 || seqs[n-1] != n-1 {
			t.Fatalf("%s: %d frames came out, want %d in order: %v", d.name, len(seqs), n, seqs)
		}
		slices.Sort(took)
		med := took[len(took)/2]
		t.Logf("%s: delay %v ± 1ms: fastest %v, median %v, slowest %v", d.name, d.delay, took[0], med, took[len(took)-1])
		if took[0] < d.delay-time.Millisecond {
			t.Errorf("%s: a frame came out after %v, before the delay %v minus the jitter", d.name, took[0], d.delay)
		}
		// The median is at least the delay (the order adds to the jitter's spread) and, on a
		// loaded host, within a few ms of it.
		if med < d.delay-200*time.Microsecond {
			t.Errorf("%s: median %v, want about %v", d.name, med, d.delay)
		}
		if med > d.delay+5*time.Millisecond {
			tm.Errorf("%s: median %v, want about %v", d.name, med, d.delay)
		}
	}
	st := b.stats()
	if st.Up.Sent != n || st.Down.Sent != n || st.Up.Lost+st.Down.Lost != 0 {
		t.Errorf("stats %+v, want %d sent each way and none lost", st, n)
	}
}

// TestBridgeLoss drops IPv4 and IPv6 frames with the profile's probability, and never ARP or
// IPv6 neighbour discovery.
func TestBridgeLoss(t *testing.T) {
	p, err := tuning.ParseProfile("up:loss=30%,down:loss=100%")
	if err != nil {
		t.Fatal(err)
	}
	b, broker, client := testBridge(t, p)
	runBridge(t, b)
	const n = 2000
	got := make(chan []uint32, 1)
	go func() { s, _ := receive(t, broker, 300*time.Millisecond); got <- s }()
	for i := range n {
		if _, err := unix.Write(client, frame(0x0800, uint32(i))); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // stay below the socket pair's queue of 512 datagrams
		}
	}
	seqs := <-got
	if lost := n - len(seqs); lost < n*25/100 || lost > n*35/100 || !slices.IsSorted(seqs) {
		t.Errorf("%d of %d IPv4 frames lost at 30 %% loss (want 25-35 %%), in order %v", lost, n, slices.IsSorted(seqs))
	}
	if st := b.stats(); st.Up.Lost != uint64(n-len(seqs)) {
		t.Errorf("Stats.Up.Lost = %d, but %d did not arrive", st.Up.Lost, n-len(seqs))
	}

	// Down is 100 % loss: IPv4 and IPv6 vanish, ARP and neighbour solicitations pass.
	nd := frame(0x86dd, 3)
	nd = append(nd[:14], make([]byte, 50)...)
	binary.BigEndian.PutUint32(nd[14:], 3)
	nd[14+6], nd[14+40] = 58, 135 // next header ICMPv6, type neighbour solicitation (its send time is garbage)
	go func() { s, _ := receive(t, client, 300*time.Millisecond); got <- s }()
	for _, f := range [][]byte{frame(0x0800, 0), frame(0x0806, 1), frame(0x86dd, 2), nd} {
		if _, err := unix.Write(broker, f); err != nil {
			t.Fatal(err)
		}
	}
	if seqs := <-got; !slices.Equal(seqs, []uint32{1, 3}) {
		t.Errorf("at 100 %% loss, frames %v came through, want ARP (1) and neighbour discovery (3) only", seqs)
	}
}

// TestBridgeQueueFull counts frames that find the queue full and drops them.
func TestBridgeQueueFull(t *testing.T) {
	p, _ := tuning.ParseProfile("delay=1s")
	b, _, client := testBridge(t, p)
	b.up.q = newFIFO(16)
	for i := range 20 {
		if _, err := unix.Write(client, frame(0x0800, uint32(i))); err != nil {
			t.Fatal(err)
		}
	}
	b.read(&b.up, &p.Up, nanotime(), realtime()-nanotime())
	if st := b.stats(); st.Up.Frames != 20 || st.Up.Overflow != 4 || b.up.q.n != 16 {
		t.Errorf("stats %+v, queue %d: want 20 frames read, 16 queued, 4 overflowed", st.Up, b.up.q.n)
	}
	b.close()
}

// TestBridgeCountsAtStop: when the emulator stops with frames still waiting for their due
// time, every frame read is in one of the counters: Frames = Sent + Lost + Overflow +
// SendErrors + Queued, with frames in each of them.
func TestBridgeCountsAtStop(t *testing.T) {
	p, err := tuning.ParseProfile("up:delay=200ms,up:loss=20%")
	if err != nil {
		t.Fatal(err)
	}
	b, _, client := testBridge(t, p)
	b.up.q = newFIFO(64)
	done := make(chan struct{})
	go func() { defer close(done); b.run() }()
	send := func(n int, size int) {
		for i := range n {
			f := append(frame(0x0800, uint32(i)), make([]byte, size-64)...)
			if _, err := unix.Write(client, f); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(40, 64)
	time.Sleep(400 * time.Millisecond) // past their due time: sent (or lost)
	send(2, slotSize+100)              // too long for a slot
	send(100, 64)                      // 64 fit in the queue, the rest overflow
	for deadline := time.Now().Add(5 * time.Second); b.stats().Up.Frames < 142 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	b.stop()
	<-done
	st := b.stats().Up
	b.close()
	if sum := st.Sent + st.Lost + st.Overflow + st.SendErrors + st.Queued; st.Frames != 142 || sum != st.Frames {
		t.Errorf("at the stop: %d frames read, %d sent + %d lost + %d overflow + %d send errors + %d queued = %d: want 142 and the sum equal",
			st.Frames, st.Sent, st.Lost, st.Overflow, st.SendErrors, st.Queued, sum)
	}
	if st.Sent == 0 || st.Lost == 0 || st.Overflow == 0 || st.SendErrors != 2 || st.Queued == 0 {
		t.Errorf("stats %+v: want frames sent, lost, overflowed, 2 too long and queued", st)
	}
}
