package reactor_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/reactor"
)

// countObs counts events; tests only (a real recorder is per loop and lock-free).
type countObs struct {
	reactor.NopObserver
	mu        sync.Mutex
	connected int
	refused   map[byte]int
	failed    map[reactor.Cause]int
	dropped   map[reactor.Cause]int
	pings     int
	reconn    int
	examples  []string
	maxLat    time.Duration
}

func newObs() *countObs {
	return &countObs{refused: map[byte]int{}, failed: map[reactor.Cause]int{}, dropped: map[reactor.Cause]int{}}
}

func (o *countObs) Connected(_, _ int, lat time.Duration) {
	o.mu.Lock()
	o.connected++
	o.maxLat = max(o.maxLat, lat)
	o.mu.Unlock()
}
func (o *countObs) Reconnected(_, _, _ int, _ time.Duration) {
	o.mu.Lock()
	o.reconn++
	o.mu.Unlock()
}
func (o *countObs) Refused(_, _, _ int, _, code byte) { o.mu.Lock(); o.refused[code]++; o.mu.Unlock() }
func (o *countObs) Failed(_, _, _ int, c reactor.Cause, ex string) {
	o.mu.Lock()
	o.failed[c]++
	o.examples = append(o.examples, ex)
	o.mu.Unlock()
}
func (o *countObs) Dropped(_, _ int, c reactor.Cause, ex string) {
	o.mu.Lock()
	o.dropped[c]++
	o.examples = append(o.examples, ex)
	o.mu.Unlock()
}
func (o *countObs) Ping(_, _ int, _ time.Duration) { o.mu.Lock(); o.pings++; o.mu.Unlock() }

func specs(version byte, keepalive time.Duration, user, pass string) func(int) reactor.ClientSpec {
	return func(i int) reactor.ClientSpec {
		return reactor.ClientSpec{ID: fmt.Sprintf("t-%d", i), Version: version, CleanStart: true,
			Keepalive: keepalive, Username: user, Password: pass}
	}
}

func startEngine(t *testing.T, cfg reactor.Config) *reactor.Engine {
	t.Helper()
	e, err := reactor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e
}

// TestEngineHoldsConnections opens 5,000 connections over 4 source addresses to a real
// Mosquitto, holds them with PINGREQ every second, and disconnects them all.
func TestEngineHoldsConnections(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("5,000 connections")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	const n = 5000
	obs := newObs()
	src := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3"),
		netip.MustParseAddr("127.0.0.4"), netip.MustParseAddr("127.0.0.5")}
	spec := specs(4, time.Second, "", "")
	e := startEngine(t, reactor.Config{
		Brokers: []string{m.Addr}, SourceAddrs: len(src), Clients: n,
		Client: func(i int) reactor.ClientSpec {
			s := spec(i)
			s.Source = src[i%len(src)]
			return s
		},
		ConnectRate: 5000, MaxConnecting: 100, Observer: obs,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := e.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.Open(); got != n {
		t.Fatalf("open = %d, want %d (failed %v, refused %v, e.g. %q)", got, n, obs.failed, obs.refused, first(obs.examples))
	}
	time.Sleep(2500 * time.Millisecond) // two keepalive periods
	obs.mu.Lock()
	pings, dropped := obs.pings, len(obs.dropped)
	obs.mu.Unlock()
	if pings < n {
		tm.Errorf("pings answered = %d after 2.5 s at keepalive 1 s, want >= %d", pings, n)
	}
	if dropped != 0 || e.Open() != n {
		tm.Errorf("dropped while held: %v, open %d", obs.dropped, e.Open())
	}
	e.Disconnect(5 * time.Second)
	if e.Open() != 0 {
		t.Errorf("open after Disconnect = %d", e.Open())
	}
	if len(obs.dropped) != 0 {
		t.Errorf("Disconnect counted drops: %v", obs.dropped)
	}
	if obs.connected != n {
		t.Errorf("connected events = %d, want %d", obs.connected, n)
	}
}

// TestEngineRefusedWithReason connects without credentials to a Mosquitto that demands them.
func TestEngineRefusedWithReason(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{Users: map[string]string{"bench": "secret"}})
	for _, c := range []struct {
		name       string
		version    byte
		user, pass string
		wantCode   byte
	}{
		{"v311-anonymous", 4, "", "", 5},          // 3.1.1 not authorized
		{"v5-anonymous", 5, "", "", 0x87},         // 5.0 not authorized
		{"v311-bad-password", 4, "bench", "x", 5}, // Mosquitto answers "not authorized" to both
		{"v5-good-password", 5, "bench", "secret", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := newObs()
			e := startEngine(t, reactor.Config{Brokers: []string{m.Addr}, Clients: 20,
				Client: specs(c.version, 0, c.user, c.pass), Observer: obs})
			if err := e.Connect(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			if c.wantCode == 0 {
				if obs.connected != 20 {
					t.Fatalf("connected = %d, want 20 (refused %v)", obs.connected, obs.refused)
				}
				return
			}
			if obs.connected != 0 || obs.refused[c.wantCode] != 20 {
				t.Fatalf("connected %d, refused %v; want 20 refusals with code 0x%02x", obs.connected, obs.refused, c.wantCode)
			}
			if e.Open() != 0 {
				t.Errorf("refused sessions left open: %d", e.Open())
			}
		})
	}
}

// TestEngineNothingListening dials a port with nothing behind it: every client fails as
// refused, quickly.
func TestEngineNothingListening(t *testing.T) {
	tm := tier.Timing(t)
	port := testbroker.FreePort(t, "127.0.0.1")
	obs := newObs()
	e := startEngine(t, reactor.Config{Brokers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, Clients: 50,
		Client: specs(4, 0, "", ""), Observer: obs})
	start := time.Now()
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 3*time.Second {
		tm.Errorf("50 refused connects took %v", d)
	}
	if obs.failed[reactor.CauseRefused] != 50 {
		t.Fatalf("failed = %v, want 50 refused", obs.failed)
	}
}

// TestEngineCapacityShortfall: too many connections for the source ports is refused before
// any socket opens.
func TestEngineCapacityShortfall(t *testing.T) {
	_, err := reactor.New(reactor.Config{Brokers: []string{"127.0.0.1:1"}, SourceAddrs: 2, Clients: 300,
		Client: specs(4, 0, "", ""), Observer: newObs(), PortLo: 40000, PortHi: 40099})
	if !errors.Is(err, reactor.ErrAddrCapacity) {
		t.Fatalf("err = %v, want ErrAddrCapacity", err)
	}
}

// TestEngineReconnects: with Reconnect on, connections dropped by a broker crash come back
// with backoff once it is up again; without it they stay down.
func TestEngineReconnects(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	const n = 200
	obs := newObs()
	e := startEngine(t, reactor.Config{Brokers: []string{m.Addr}, Clients: n, Client: specs(4, 0, "", ""),
		Observer: obs, Reconnect: true, ReconnectMin: 100 * time.Millisecond, ReconnectMax: 400 * time.Millisecond})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != n {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	m.Kill(t)
	waitFor(t, 3*time.Second, func() bool { return e.Open() == 0 })
	time.Sleep(500 * time.Millisecond) // a few refused attempts back off meanwhile
	m.Restart(t)
	waitFor(t, 5*time.Second, func() bool { return e.Open() == n })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var dropped int
	for _, c := range obs.dropped {
		dropped += c
	}
	if dropped != n || obs.reconn != n || obs.connected != n {
		t.Errorf("dropped %d, reconnected %d, connected %d; want %d each", dropped, obs.reconn, obs.connected, n)
	}
	if obs.failed[reactor.CauseRefused] == 0 {
		t.Errorf("no refused reconnect attempt while the broker was down: %v", obs.failed)
	}
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// TestEngineSubackFailure: a SUBACK refusing a filter is reported with its reason code.
// The broker here is a few lines of codec over a socket, since Mosquitto 2.0 grants every
// subscription.
func TestEngineSubackFailure(t *testing.T) {
	addr, _ := codecServer(t, func(c net.Conn, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V5))
		case codec.TypeSubscribe:
			var sub codec.Subscribe
			if codec.DecodeSubscribe(body, codec.V5, &sub) == nil {
				_, _ = c.Write(codec.AppendSuback(nil, &codec.Suback{ID: sub.ID,
					Reasons: []codec.ReasonCode{codec.ReasonGrantedQoS1, 0x87}}, codec.V5))
			}
		}
		return true
	})
	obs := &subObs{countObs: newObs()}
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "s", Version: 5, CleanStart: true, Subscriptions: []codec.Subscription{
				{Filter: []byte("a/#"), QoS: 1}, {Filter: []byte("b/#"), QoS: 1}}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, func() bool { return e.Subscribed() == 1 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.subFailed != 1 || obs.subCode != 0x87 {
		t.Errorf("failed %d code 0x%02x, want 1 and 0x87", obs.subFailed, obs.subCode)
	}
}

type subObs struct {
	*countObs
	subFailed int
	subCode   byte
}

func (o *subObs) Subscribed(_, _, failed int, code byte) {
	o.mu.Lock()
	o.subFailed += failed
	o.subCode = code
	o.mu.Unlock()
}

// latObs keeps every connect latency.
type latObs struct {
	*countObs
	lats []time.Duration
}

func (o *latObs) Connected(l, c int, lat time.Duration) {
	o.countObs.Connected(l, c, lat)
	o.mu.Lock()
	o.lats = append(o.lats, lat)
	o.mu.Unlock()
}

// TestEngineConnectLatencyFromArrival: at 300 connects a second a loop dials and collects
// CONNACKs every 8 ms, so a CONNACK waits up to 8 ms in the socket before the loop reads
// it. Connect latency must run to the CONNACK's arrival (the kernel's stamp), not to that
// read: Mosquitto on loopback answers within a fraction of a millisecond, while latencies
// to the read would spread over the whole 8 ms (median ~4 ms or more).
func TestEngineConnectLatencyFromArrival(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	const n = 60
	obs := &latObs{countObs: newObs()}
	e := startEngine(t, reactor.Config{Brokers: []string{m.Addr}, Clients: n, Loops: 1, ConnectRate: 300,
		Client: specs(4, 0, "", ""), Observer: obs})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != n {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	slices.Sort(obs.lats)
	if med := obs.lats[len(obs.lats)/2]; med > 2*time.Millisecond {
		tm.Errorf("median connect latency %v, want well under the 8 ms collection period (all: %v)", med, obs.lats)
	}
}

// TestEngineWriteBackpressure: a broker that stops reading makes the socket refuse writes;
// what it does not take waits in the connection (up to the queue bound) and goes out,
// whole and in order, once the broker reads again; what fell due while the queue was full
// is unsent (back_pressure), never counted as published. 2,000 PUBLISH of 16 KiB (32 MiB)
// at 8,000/s against a server that reads nothing for the first 600 ms: far more than
// loopback's socket buffers hold.
func TestEngineWriteBackpressure(t *testing.T) {
	const n, size = 2000, 16 << 10
	var mu sync.Mutex
	count := 0
	var bad error
	addr, ended := codecServer(t, func(c net.Conn, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
			time.Sleep(600 * time.Millisecond) // stop reading while the client publishes
		case codec.TypePublish:
			var p codec.Publish
			if bad = codec.DecodePublish(h, body, codec.V311, &p); bad != nil {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			if seq := binary.BigEndian.Uint32(p.Payload[12:16]); int(seq) != count || len(p.Payload) != size {
				bad = fmt.Errorf("message %d: sequence %d, %d bytes", count, seq, len(p.Payload))
				return false
			}
			count++
		case codec.TypeDisconnect:
			return false
		}
		return true
	})
	obs := newAcct()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		MaxPayload: size, Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "p", Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("t"), Rate: 8000, Count: n, PayloadSize: size, Receivers: 1}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 1 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	e.StartPublishing(0)
	deadline := time.Now().Add(5 * time.Second)
	for e.Behind() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	e.FinishPublishing(false)
	e.Disconnect(time.Second)
	if err := <-ended; err != nil || bad != nil {
		t.Fatalf("server: %v %v", err, bad)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if obs.scheduled != n || obs.published+obs.unsentTotal() != n {
		t.Errorf("scheduled %d, published %d + unsent %v != %d", obs.scheduled, obs.published, obs.unsent, n)
	}
	if count != obs.published {
		t.Errorf("the server read %d messages, the client says it published %d", count, obs.published)
	}
	if obs.unsent[reactor.UnsentBackPressure] == 0 || obs.held[reactor.HoldBackPressure] == 0 {
		t.Errorf("no back-pressure: unsent %v, held %v (the test did not hold the socket full)", obs.unsent, obs.held)
	}
}

// slowObs records receive latencies and holds its loop for hold on the first message, as
// a loop busy with other work would.
type slowObs struct {
	*countObs
	hold time.Duration
	lats []time.Duration
}

func (o *slowObs) Received(_, _ int, m reactor.Message) {
	o.mu.Lock()
	o.lats = append(o.lats, time.Duration(m.Now-m.Due))
	first := len(o.lats) == 1
	o.mu.Unlock()
	if first {
		time.Sleep(o.hold)
	}
}

// TestEngineReceiveLatencyFromArrival: messages that wait in the socket while the loop is
// busy are timed by their arrival (the kernel's stamp), not by when the loop gets to them.
// The server sends three messages 10 ms apart, each due when sent; the loop is held for
// 60 ms by the first. The third then measures ~0.1 ms (read time would give ~40 ms); the
// second, read together with the third, carries the third's stamp: ~10 ms (read time ~50).
func TestEngineReceiveLatencyFromArrival(t *testing.T) {
	tm := tier.Timing(t)
	addr, _ := codecServer(t, func(c net.Conn, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
		case codec.TypeSubscribe:
			var sub codec.Subscribe
			if codec.DecodeSubscribe(body, codec.V311, &sub) != nil {
				return false
			}
			_, _ = c.Write(codec.AppendSuback(nil, &codec.Suback{ID: sub.ID, Reasons: []codec.ReasonCode{0}}, codec.V311))
			for seq := range 3 {
				pl := make([]byte, reactor.HeaderSize)
				reactor.PutHeader(pl, time.Now().UnixNano(), 0, 0, uint32(seq))
				_, _ = c.Write(codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: pl}, codec.V311))
				time.Sleep(10 * time.Millisecond)
			}
		}
		return true
	})
	obs := &slowObs{countObs: newObs(), hold: 60 * time.Millisecond}
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "s", Version: 4, CleanStart: true,
				Subscriptions: []codec.Subscription{{Filter: []byte("t")}}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 1 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	waitFor(t, 3*time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.lats) == 3 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.lats[2] > 5*time.Millisecond || obs.lats[1] > 25*time.Millisecond {
		tm.Errorf("latencies %v: the 2nd and 3rd waited for the busy loop, want them timed by arrival", obs.lats)
	}
}

// codecServer is a broker of a few lines for what Mosquitto cannot be made to do: it
// accepts one connection on loopback and calls handle for every packet it reads, on the
// reading goroutine (so a handle that sleeps stops the reading), until handle returns
// false or the connection ends. The returned channel gets the error that ended it (nil
// when handle did). It returns the server's address.
func codecServer(t *testing.T, handle func(c net.Conn, h codec.Header, body []byte) bool) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	ended := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ended <- err
			return
		}
		defer c.Close() //nolint:errcheck
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		var buf []byte
		tmp := make([]byte, 256<<10)
		for {
			n, err := c.Read(tmp)
			if err != nil {
				ended <- err
				return
			}
			buf = append(buf, tmp[:n]...)
			for {
				h, body, used, err := codec.Split(buf, 1<<20)
				if err != nil {
					ended <- err
					return
				}
				if used == 0 {
					break
				}
				if !handle(c, h, body) {
					ended <- nil
					return
				}
				buf = buf[used:]
			}
		}
	}()
	return ln.Addr().String(), ended
}
