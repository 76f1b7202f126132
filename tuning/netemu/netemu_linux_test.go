package netemu_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/netemu"
)

// start starts a link with profile, closed when the test ends. Without root or namespaces
// the test is skipped, but fails in CI (CI=true), which runs as root with iproute2.
func start(t testing.TB, profile string) *netemu.Link {
	t.Helper()
	tier.Integration(t)
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("the packet emulator needs root (network namespaces)")
	}
	p, err := tuning.ParseProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := netemu.Start(netemu.Config{Profile: p, Seed: 1})
	if err != nil {
		skip("cannot start the emulator: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		for _, ns := range []string{l.BrokerNS(), l.ClientNS()} {
			if _, err := os.Stat("/run/netns/" + ns); err == nil {
				t.Errorf("Close left namespace %s", ns)
			}
		}
	})
	return l
}

func mustProfile(t testing.TB, s string) tuning.Profile {
	t.Helper()
	p, err := tuning.ParseProfile(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startMosquitto runs Mosquitto in the link's broker namespace on BrokerAddr:1883 (the port
// is free: the namespace is the test's) and returns its address once it accepts.
func startMosquitto(t testing.TB, l *netemu.Link) string {
	t.Helper()
	bin := testbroker.Need(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mosquitto.conf")
	addr := net.JoinHostPort(l.BrokerAddr().String(), "1883")
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`listener 1883 %s
user root
allow_anonymous true
persistence false
set_tcp_nodelay true
log_dest file %s
`, l.BrokerAddr(), filepath.Join(dir, "mosquitto.log"))), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := l.BrokerCommand(context.Background(), bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start mosquitto in %s: %v", l.BrokerNS(), err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := l.Dial(context.Background(), "tcp", addr)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto in %s does not accept on %s: %v", l.BrokerNS(), addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mqttClient is a minimal MQTT 3.1.1 client for QoS 0 round trips: it subscribes to its own
// topic and publishes to it, so every PUBLISH goes to the broker and back.
type mqttClient struct {
	c   net.Conn
	r   *bufio.Reader
	pub []byte
	in  []byte
}

func str(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

func packet(typ byte, body []byte) []byte {
	if len(body) > 127 {
		panic("BUG: test packet too long")
	}
	return append([]byte{typ, byte(len(body))}, body...)
}

func dialMQTT(t testing.TB, l *netemu.Link, addr, id string) *mqttClient {
	t.Helper()
	c, err := l.Dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	m := &mqttClient{c: c, r: bufio.NewReader(c)}
	connect := append(append(str("MQTT"), 4, 0x02, 0, 60), str(id)...)
	topic := "rt/" + id
	subscribe := append(append([]byte{0, 1}, str(topic)...), 0)
	m.pub = packet(0x30, append(str(topic), "0123456789abcdef"...))
	m.in = make([]byte, len(m.pub))
	if _, err := c.Write(append(packet(0x10, connect), packet(0x82, subscribe)...)); err != nil {
		t.Fatal(err)
	}
	ack := make([]byte, 4+5)
	if _, err := io.ReadFull(m.r, ack); err != nil || ack[0] != 0x20 || ack[3] != 0 || ack[4] != 0x90 || ack[8] != 0 {
		t.Fatalf("CONNACK+SUBACK = % x, %v", ack, err)
	}
	return m
}

// roundTrip publishes one QoS 0 message and returns when it came back.
func (m *mqttClient) roundTrip(t testing.TB) time.Duration {
	t.Helper()
	t0 := time.Now()
	if _, err := m.c.Write(m.pub); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(m.r, m.in); err != nil {
		t.Fatal(err)
	}
	d := time.Since(t0)
	if string(m.in) != string(m.pub) {
		t.Fatalf("got % x back, want % x", m.in, m.pub)
	}
	return d
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestRoundTripShift runs QoS 0 round trips through Mosquitto in the broker namespace under
// local, optimal and worst, interleaved in rounds so that drift of the loaded host spreads
// over all three, and wants the median to shift by 2 × delay within ±5 % (less by up to the
// emulator's mean read lag, which a delay hides and the local round trip does not). On a busy host the
// scheduler's wake-up latency of the endpoints (not the emulator's timing, which its counters
// show) can move a median by a few per cent, so a failed measurement is repeated, up to
// three times; a bias of the emulator fails them all.
func TestRoundTripShift(t *testing.T) {
	tm := tier.Timing(t)
	l := start(t, "local")
	m := dialMQTT(t, l, startMosquitto(t, l), "shift")
	var fails []string
	for attempt := 1; attempt <= 3; attempt++ {
		fails = measureShift(t, l, m)
		if len(fails) == 0 {
			break
		}
		t.Logf("attempt %d: %s", attempt, strings.Join(fails, "; "))
	}
	for _, f := range fails {
		tm.Error(f)
	}
	st := l.Stats()
	frames := st.Up.Frames + st.Down.Frames
	t.Logf("emulator: %d frames, %d wakes, CPU %v = %v per frame (ping-like traffic: about two wakes per frame), realtime %v, spin %v, oversleep %v",
		frames, st.Wakes, st.CPU, st.CPUPerFrame(), st.Realtime, st.Spin, st.Oversleep)
	for _, d := range []struct {
		name string
		s    netemu.DirStats
	}{{"up", st.Up}, {"down", st.Down}} {
		t.Logf("%s: %d frames sent, read %v after arrival and sent %v after due on average (at most %v, %v)", d.name, d.s.Sent,
			d.s.ReadLag/time.Duration(max(d.s.Frames, 1)), d.s.Late/time.Duration(max(d.s.Sent, 1)), d.s.MaxReadLag, d.s.MaxLate)
	}
}

// measureShift measures once and returns what is off.
func measureShift(t *testing.T, l *netemu.Link, m *mqttClient) []string {
	profiles := []string{"local", "optimal", "worst"}
	rtts := map[string][]time.Duration{}
	for range 8 {
		for _, name := range profiles {
			if err := l.SetProfile(mustProfile(t, name)); err != nil {
				t.Fatal(err)
			}
			m.roundTrip(t) // the first after a change may wait for frames of the last
			for range 25 {
				rtts[name] = append(rtts[name], m.roundTrip(t))
				// A gap of more than twice the jitter: the client's pure ACK of the last message
				// never holds back the next PUBLISH (due times keep the order).
				time.Sleep(2 * time.Millisecond)
			}
		}
	}
	base := median(rtts["local"])
	// The emulator times a frame from the kernel's receive stamp, so its own lateness in
	// reading a frame adds to the local round trip but hides inside a delay: the shift may fall
	// short of 2 x delay by that much (tens of µs normally; ~0.8 ms in all under -race).
	st := l.Stats()
	hidden := st.Up.ReadLag/time.Duration(max(st.Up.Frames, 1)) + st.Down.ReadLag/time.Duration(max(st.Down.Frames, 1))
	t.Logf("local: median %v over %d round trips; the emulator read frames %v late in all (both ways, mean)", base, len(rtts["local"]), hidden)
	var fails []string
	for _, name := range profiles[1:] {
		p := mustProfile(t, name)
		want := p.Up.Delay + p.Down.Delay
		shift := median(rtts[name]) - base
		t.Logf("%s: median %v, shift %v, want %v (%+.1f %%)", name, median(rtts[name]), shift, want,
			100*(float64(shift)/float64(want)-1))
		if d := shift - want; d < -want/20-hidden || d > want/20 {
			fails = append(fails, fmt.Sprintf("%s: the median round trip shifted by %v, want %v ± 5 %% (less by up to the emulator's read lag %v)", name, shift, want, hidden))
		}
	}
	return fails
}

// counters reads /proc/net/snmp and /proc/net/netstat in the client namespace, keyed
// "Tcp.RetransSegs", "TcpExt.TCPLossProbes" and so on.
func counters(t testing.TB, l *netemu.Link) map[string]int64 {
	t.Helper()
	var b []byte
	err := l.InClient(func() error {
		for _, f := range []string{"/proc/thread-self/net/snmp", "/proc/thread-self/net/netstat"} {
			c, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			b = append(b, c...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	names := map[string][]string{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		group := strings.TrimSuffix(f[0], ":")
		if names[group] == nil {
			names[group] = f[1:]
			continue
		}
		for i, v := range f[1:] {
			if i < len(names[group]) {
				n, _ := strconv.ParseInt(v, 10, 64)
				out[group+"."+names[group][i]] = n
			}
		}
	}
	if _, ok := out["Tcp.RetransSegs"]; !ok {
		t.Fatal("no Tcp RetransSegs in /proc/net/snmp")
	}
	return out
}

// TestLossRetransmits sends bulk data from the client namespace to the broker namespace with
// 1 % loss toward the broker (and some delay, like a network), and wants the client's
// kernel to retransmit 1 % of the segments it sent, within a factor of 1.5: the loss is real
// packet loss below TCP.
func TestLossRetransmits(t *testing.T) {
	tm := tier.Timing(t)
	l := start(t, "delay=500us,up:loss=1%")
	ln, err := l.Listen(context.Background(), "tcp", net.JoinHostPort(l.BrokerAddr().String(), "7000"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A stall of the loaded host can fire a spurious retransmission timeout (the receiver
	// then reports the duplicate: TCPDSACKRecv), so a failed transfer is repeated once.
	var fails []string
	for attempt := 1; attempt <= 2; attempt++ {
		if fails = transferWithLoss(t, l, ln); len(fails) == 0 {
			break
		}
		t.Logf("attempt %d: %s", attempt, strings.Join(fails, "; "))
	}
	for _, f := range fails {
		tm.Error(f)
	}
}

// transferWithLoss sends 24 MiB from the client namespace to ln and returns what is off.
func transferWithLoss(t *testing.T, l *netemu.Link, ln net.Listener) []string {
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		_ = c.Close()
		got <- n
	}()
	before, st0 := counters(t, l), l.Stats()
	c, err := l.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	const size = 24 << 20
	t0 := time.Now()
	buf := make([]byte, 64<<10)
	for sent := 0; sent < size; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Close()
	if n := <-got; n != size {
		t.Fatalf("the receiver got %d bytes, want %d", n, size)
	}
	elapsed := time.Since(t0)
	after, st := counters(t, l), l.Stats()
	out, retrans := after["Tcp.OutSegs"]-before["Tcp.OutSegs"], after["Tcp.RetransSegs"]-before["Tcp.RetransSegs"]
	var ext []string
	for k, v := range after {
		if d := v - before[k]; d != 0 && strings.HasPrefix(k, "TcpExt.") {
			ext = append(ext, fmt.Sprintf("%s=%d", k[len("TcpExt."):], d))
		}
	}
	slices.Sort(ext)
	t.Logf("client TcpExt deltas: %s", strings.Join(ext, " "))
	lostUp, framesUp := st.Up.Lost-st0.Up.Lost, st.Up.Frames-st0.Up.Frames
	ratio := float64(retrans) / float64(out) / 0.01
	t.Logf("%d MiB in %v: client sent %d segments, retransmitted %d (%.3f %% = %.2f × 1 %%); emulator dropped %d of %d frames toward the broker",
		size>>20, elapsed.Round(time.Millisecond), out, retrans, 100*float64(retrans)/float64(out), ratio, lostUp, framesUp)
	f := st.Up.Frames + st.Down.Frames - st0.Up.Frames - st0.Down.Frames
	t.Logf("emulator: %d frames, %d wakes, CPU %v = %v per frame (bulk traffic), kernel drops %d/%d, overflow %d/%d",
		f, st.Wakes-st0.Wakes, st.CPU-st0.CPU, (st.CPU-st0.CPU)/time.Duration(max(f, 1)),
		st.Up.KernelDrops, st.Down.KernelDrops, st.Up.Overflow, st.Down.Overflow)
	var fails []string
	if ratio < 1/1.5 || ratio > 1.5 {
		fails = append(fails, fmt.Sprintf("retransmitted %.3f %% of the segments, want 1 %% within a factor of 1.5", 100*float64(retrans)/float64(out)))
	}
	if lost := float64(lostUp) / float64(framesUp) / 0.01; lost < 1/1.5 || lost > 1.5 {
		fails = append(fails, fmt.Sprintf("the emulator dropped %d of %d frames, want 1 %% within a factor of 1.5", lostUp, framesUp))
	}
	if st.Down.Lost != 0 {
		fails = append(fails, fmt.Sprintf("%d frames lost toward the client, whose loss is 0", st.Down.Lost))
	}
	return fails
}

// TestOrderKept sends UDP datagrams as fast as it can through a jitter as large as the
// delay: they must arrive in the order sent. UDP may still lose a datagram to a full socket
// buffer on a loaded host (the kernel's, not the emulator's doing): a few are allowed and
// logged, a reorder never.
func TestOrderKept(t *testing.T) {
	l := start(t, "delay=1ms,jitter=1ms")
	var pc net.PacketConn
	err := l.InBroker(func() error {
		var err error
		pc, err = net.ListenPacket("udp", net.JoinHostPort(l.BrokerAddr().String(), "7001"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := l.Dial(context.Background(), "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 2000
	type outcome struct {
		got int
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		buf := make([]byte, 64)
		last, got := -1, 0
		for last < n-1 {
			_ = pc.SetReadDeadline(time.Now().Add(2 * time.Second))
			k, _, err := pc.ReadFrom(buf)
			if err != nil { // nothing for 2 s: the rest was lost
				break
			}
			v, _ := strconv.Atoi(string(buf[:k]))
			if v <= last {
				done <- outcome{got, fmt.Errorf("datagram %d arrived after %d: reordered", v, last)}
				return
			}
			last = v
			got++
		}
		done <- outcome{got, nil}
	}()
	for i := range n {
		if _, err := c.Write([]byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			time.Sleep(200 * time.Microsecond) // stay below the veth's backlog (netdev_max_backlog)
		}
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if lost := n - o.got; lost > 0 {
		t.Logf("%d of %d datagrams lost on the way (stats %+v)", lost, n, l.Stats().Up)
		if lost > n/20 {
			t.Errorf("%d of %d datagrams lost: the emulator (no loss configured) is dropping them", lost, n)
		}
	}
	if st := l.Stats(); st.Up.Sent+st.Up.KernelDrops+st.Up.Overflow < n {
		t.Errorf("the emulator forwarded %d frames up and counted %d dropped by the kernel, %d by its queue; want %d in all", st.Up.Sent, st.Up.KernelDrops, st.Up.Overflow, n)
	}
}

// TestCloseAndLeftovers checks that Close kills what runs in the namespaces and removes them,
// and that Leftovers finds the namespaces of a dead process (and not of a live one).
func TestCloseAndLeftovers(t *testing.T) {
	l := start(t, "local")
	sleep := l.BrokerCommand(context.Background(), "sleep", "1000")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	live, err := netemu.Leftovers(false)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(live, l.BrokerNS()) {
		t.Errorf("Leftovers(false) = %v lists the namespace of this live process", live)
	}
	all, _ := netemu.Leftovers(true)
	if !slices.Contains(all, l.BrokerNS()) || !slices.Contains(all, l.ClientNS()) {
		t.Errorf("Leftovers(true) = %v, want %s and %s in it", all, l.BrokerNS(), l.ClientNS())
	}
	dead := "mqb-4999999-c" // above pid_max: never a live process
	if out, err := exec.Command("ip", "netns", "add", dead).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	left, _ := netemu.Leftovers(false)
	if !slices.Contains(left, dead) {
		t.Errorf("Leftovers(false) = %v, want %s in it", left, dead)
	}
	if err := netemu.Remove([]string{dead}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + dead); err == nil {
		t.Errorf("Remove left %s", dead)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- sleep.Wait() }()
	select {
	case err := <-werr:
		if err == nil {
			t.Error("sleep 1000 in the broker namespace ended cleanly; Close should have killed it")
		}
	case <-time.After(5 * time.Second):
		t.Error("Close did not kill the process in the broker namespace")
	}
}
