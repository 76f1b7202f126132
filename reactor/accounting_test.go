package reactor_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// acct records the publisher accounting events; tests only.
type acct struct {
	reactor.NopObserver
	mu        sync.Mutex
	published int
	acked     int
	unsent    map[reactor.Unsent]int
	held      map[reactor.Hold]time.Duration
	dropped   int // in flight when a session ended
	scheduled int64
	inFlight  []uint32
	conns     int
	// qos12 are the messages published at QoS 1 or 2; droppedReleased and endReleased the
	// PUBREC'd ones without their PUBCOMP when a session ended and at the end.
	qos12, droppedReleased, endReleased int
}

func newAcct() *acct {
	return &acct{unsent: map[reactor.Unsent]int{}, held: map[reactor.Hold]time.Duration{}}
}

func (o *acct) Connected(int, int, time.Duration) { o.mu.Lock(); o.conns++; o.mu.Unlock() }
func (o *acct) Reconnected(int, int, int, time.Duration) {
	o.mu.Lock()
	o.conns++
	o.mu.Unlock()
}
func (o *acct) Published(_, _, _ int, qos byte, _, _ int64, _ time.Duration) {
	o.mu.Lock()
	o.published++
	if qos > 0 {
		o.qos12++
	}
	o.mu.Unlock()
}
func (o *acct) Acked(int, int) { o.mu.Lock(); o.acked++; o.mu.Unlock() }
func (o *acct) Unsent(_, _ int, c reactor.Unsent, n int) {
	o.mu.Lock()
	o.unsent[c] += n
	o.mu.Unlock()
}
func (o *acct) Held(_, _ int, h reactor.Hold, d time.Duration) {
	o.mu.Lock()
	o.held[h] += d
	o.mu.Unlock()
}
func (o *acct) InFlightDropped(_, _ int, e *reactor.PublisherEnd) {
	o.mu.Lock()
	o.dropped += len(e.InFlight)
	o.droppedReleased += e.Released
	o.mu.Unlock()
}
func (o *acct) PublisherEnd(_, _ int, e *reactor.PublisherEnd) {
	o.mu.Lock()
	o.scheduled += e.Scheduled
	o.inFlight = append(o.inFlight, e.InFlight...)
	o.endReleased += e.Released
	o.mu.Unlock()
}

func (o *acct) unsentTotal() int {
	n := 0
	for _, v := range o.unsent {
		n += v
	}
	return n
}

// publishFor runs publishing for d, then finishes it and disconnects.
func publishFor(t *testing.T, e *reactor.Engine, d time.Duration) {
	t.Helper()
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 1 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	e.StartPublishing(0)
	time.Sleep(d)
	e.StopPublishing()
	time.Sleep(100 * time.Millisecond)
	e.FinishPublishing(false)
	e.Disconnect(time.Second)
}

// TestEngineReceiveMaximumHolds: a 5.0 broker with Receive Maximum 3 that never
// acknowledges gets 3 messages; the rest of the schedule is unsent (flow_control), the 3
// are in flight at the end, and the publisher is held by the broker's flow control.
func TestEngineReceiveMaximumHolds(t *testing.T) {
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		if h.Type == codec.TypeConnect {
			ca := codec.Connack{}
			ca.Props.Set(codec.PropReceiveMaximum)
			ca.Props.ReceiveMaximum = 3
			_, _ = c.Write(codec.AppendConnack(nil, &ca, codec.V5))
		}
		return true
	})
	obs := newAcct()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "p", Version: 5, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("t"), QoS: 1, Rate: 100, PayloadSize: 16, Receivers: 1}}
		}})
	publishFor(t, e, time.Second)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.published != 3 || len(obs.inFlight) != 3 || obs.inFlight[0] != 0 || obs.inFlight[2] != 2 {
		t.Errorf("published %d, in flight at the end %v; want 3 and [0 1 2]", obs.published, obs.inFlight)
	}
	if int64(obs.published+obs.unsentTotal()) != obs.scheduled || obs.scheduled < 90 {
		t.Errorf("scheduled %d != published %d + unsent %v", obs.scheduled, obs.published, obs.unsent)
	}
	if obs.unsent[reactor.UnsentFlowControl] != obs.unsentTotal() {
		t.Errorf("unsent %v: want all flow_control", obs.unsent)
	}
	if obs.held[reactor.HoldFlowControl] < 800*time.Millisecond {
		t.Errorf("held by flow control %v, want about 1 s", obs.held)
	}
}

// TestEngineMaximumPacketSize: a 5.0 broker's Maximum Packet Size of 20 bytes takes no
// PUBLISH of a 16-byte payload on topic "topic" (25 bytes): none is sent [MQTT-3.1.2-24],
// every scheduled message is unsent as too_large.
func TestEngineMaximumPacketSize(t *testing.T) {
	var mu sync.Mutex
	got := 0
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			ca := codec.Connack{}
			ca.Props.Set(codec.PropMaximumPacketSize)
			ca.Props.MaximumPacketSize = 20
			_, _ = c.Write(codec.AppendConnack(nil, &ca, codec.V5))
		case codec.TypePublish:
			mu.Lock()
			got++
			mu.Unlock()
		}
		return true
	})
	obs := newAcct()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "p", Version: 5, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("topic"), NoTopicAlias: true, Rate: 200, PayloadSize: 16, Receivers: 1}}
		}})
	publishFor(t, e, 300*time.Millisecond)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if got != 0 || obs.published != 0 || obs.unsent[reactor.UnsentTooLarge] != int(obs.scheduled) || obs.scheduled < 40 {
		t.Errorf("server got %d, published %d, unsent %v of %d scheduled", got, obs.published, obs.unsent, obs.scheduled)
	}
}

// TestEngineDisconnectedUnsent: the broker closes the publisher's connection after 10
// messages and refuses it from then on: what falls due afterwards is unsent as
// disconnected, and the 10 written are all that was published. With QoS 1 and a persistent
// session, the 10 never acknowledged are reported in flight when the connection ended (the
// re-send never came), and the accounts still add up.
func TestEngineDisconnectedUnsent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		qos   byte
		clean bool
	}{{"qos0-clean", 0, true}, {"qos1-persistent", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, got := closeAfter(t, 10)
			obs := newAcct()
			e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs, Reconnect: true,
				ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
				Client: func(int) reactor.ClientSpec {
					return reactor.ClientSpec{ID: "p", Version: 4, CleanStart: tc.clean, Publish: &reactor.PublishSpec{
						Topic: []byte("t"), QoS: tc.qos, Rate: 100, PayloadSize: 16, Receivers: 1}}
				}})
			publishFor(t, e, time.Second)
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if int64(obs.published+obs.unsentTotal()) != obs.scheduled || obs.scheduled < 90 {
				t.Errorf("scheduled %d != published %d + unsent %v", obs.scheduled, obs.published, obs.unsent)
			}
			if n := got(); obs.published < 10 || obs.published > 12 || n != 10 {
				t.Errorf("published %d (the server read %d before closing)", obs.published, n)
			}
			if obs.unsent[reactor.UnsentDisconnected] < 80 || obs.held[reactor.HoldDisconnected] < 700*time.Millisecond {
				t.Errorf("unsent %v, held %v: want the rest as disconnected", obs.unsent, obs.held)
			}
			if tc.qos == 1 && (obs.dropped != obs.published || obs.acked != 0) {
				t.Errorf("in flight when the connection ended %d, acked %d; want all %d published", obs.dropped, obs.acked, obs.published)
			}
		})
	}
}

// closeAfter starts a broker that accepts one connection, closes it after reading n
// PUBLISH packets and refuses every later connection (CONNACK server unavailable). got says
// how many PUBLISH packets it read.
func closeAfter(t *testing.T, n int) (addr string, got func() int) {
	var mu sync.Mutex
	read := 0
	addr = scriptServer(t, func(k int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			if k > 0 {
				_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{Reason: codec.Reason311ServerUnavailable}, codec.V311))
				return false
			}
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
		case codec.TypePublish:
			mu.Lock()
			defer mu.Unlock()
			read++
			return read < n
		}
		return true
	})
	return addr, func() int {
		mu.Lock()
		defer mu.Unlock()
		return read
	}
}

// TestEnginePersistentSessionResend: a QoS 1 publisher with clean session 0 whose broker
// acknowledges nothing on the first connection and closes it after 5 messages; on the
// second connection the CONNACK says session present, and the client re-sends packet ids
// 1-5 with DUP set and their original sequence numbers before anything new
// [MQTT-4.4.0-1]. Without a session present (third case) nothing is re-sent and the 5 are
// in-flight-dropped.
func TestEnginePersistentSessionResend(t *testing.T) {
	for _, present := range []bool{true, false} {
		t.Run(fmt.Sprintf("session_present=%v", present), func(t *testing.T) {
			type pub struct {
				id  uint16
				dup bool
				seq uint32
			}
			var mu sync.Mutex
			var first, second []pub
			addr := scriptServer(t, func(k int, c net.Conn, _ []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{SessionPresent: k > 0 && present}, codec.V311))
				case codec.TypePublish:
					var p codec.Publish
					if codec.DecodePublish(h, body, codec.V311, &p) != nil {
						return false
					}
					mu.Lock()
					defer mu.Unlock()
					x := pub{p.ID, p.Dup, binary.BigEndian.Uint32(p.Payload[12:16])}
					if k == 0 {
						first = append(first, x)
						return len(first) < 5
					}
					second = append(second, x)
					_, _ = c.Write(codec.AppendPuback(nil, &codec.Ack{ID: p.ID}, codec.V311))
				}
				return true
			})
			obs := newAcct()
			// A window of 5: the first connection carries exactly the 5 the server reads
			// before it closes (with a larger one, a 6th due 20 ms later went out when the
			// server was slow to close on a loaded host, and was in flight too).
			e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs, Reconnect: true,
				ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
				Client: func(int) reactor.ClientSpec {
					return reactor.ClientSpec{ID: "p", Version: 4, CleanStart: false, Publish: &reactor.PublishSpec{
						Topic: []byte("t"), QoS: 1, Rate: 50, PayloadSize: 16, Receivers: 1, MaxInflight: 5}}
				}})
			publishFor(t, e, time.Second)
			mu.Lock()
			defer mu.Unlock()
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if len(first) != 5 || len(second) < 5 {
				t.Fatalf("first connection %v, second %v", first, second)
			}
			for i, x := range first {
				if x.id != uint16(i+1) || x.dup || x.seq != uint32(i) {
					t.Errorf("first connection, message %d: %+v", i, x)
				}
			}
			if present {
				for i, x := range second[:5] {
					if x.id != uint16(i+1) || !x.dup || x.seq != uint32(i) {
						t.Errorf("re-send %d: %+v, want id %d, DUP, sequence %d", i, x, i+1, i)
					}
				}
				if second[5].dup || second[5].seq != 5 {
					t.Errorf("after the re-sends: %+v, want a first send of sequence 5", second[5])
				}
				if obs.dropped != 0 || obs.published != len(first)+len(second)-5 {
					t.Errorf("in-flight dropped %d, published %d", obs.dropped, obs.published)
				}
			} else {
				if second[0].dup || second[0].seq != 5 {
					t.Errorf("without a session: first message %+v, want a first send of sequence 5", second[0])
				}
				if obs.dropped != 5 {
					t.Errorf("in-flight dropped %d, want 5", obs.dropped)
				}
			}
			if int64(obs.published+obs.unsentTotal()) != obs.scheduled {
				t.Errorf("scheduled %d != published %d + unsent %v", obs.scheduled, obs.published, obs.unsent)
			}
		})
	}
}

// TestStopPublishingPaused: the thread that stops publishing is taken off its CPU for
// 50 ms inside StopPublishing (reactor.SetStopGap), as a loaded host does to any thread,
// while 4 QoS 0 publishers at 1,000 msg/s each go on writing. No message due from the
// stop on is written, whenever the loops look at it, so that the accounts hold:
// scheduled = published + unsent, and the stop lies within the call.
func TestStopPublishingPaused(t *testing.T) {
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		if h.Type == codec.TypeConnect {
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
		}
		return true
	})
	const n, rate = 4, 1000
	obs := newAcct()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: n, Observer: obs,
		Client: func(i int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: fmt.Sprintf("p%d", i), Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
				Topic: []byte("t"), Rate: rate, PayloadSize: 16, Receivers: 1,
				Phase: time.Duration(i) * time.Second / (n * rate)}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != n {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	defer reactor.SetStopGap(func() { time.Sleep(50 * time.Millisecond) })()
	e.StartPublishing(0)
	time.Sleep(200 * time.Millisecond)
	stopAccounted(t, e, obs)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.scheduled < n*rate/5 {
		t.Errorf("scheduled %d, want at least %d", obs.scheduled, n*rate/5)
	}
}

// TestStopPublishingAt: the stop set ahead of time (the run's end) holds however late the
// caller's own timer fires: 4 QoS 0 publishers at 1,000 msg/s each, the stop 200 ms after
// the start, and StopPublishing called 200 ms past it: exactly 4 x 200 messages are
// scheduled, and none due after the stop is written. A stop set far ahead gives way to
// StopPublishing (an interrupt), whose accounts hold as without one.
func TestStopPublishingAt(t *testing.T) {
	t.Parallel()
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		if h.Type == codec.TypeConnect {
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
		}
		return true
	})
	const n, rate = 4, 1000
	start := func(t *testing.T) (*reactor.Engine, *acct, time.Time) {
		obs := newAcct()
		e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: n, Observer: obs,
			Client: func(i int) reactor.ClientSpec {
				return reactor.ClientSpec{ID: fmt.Sprintf("%s-%d", t.Name(), i), Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
					Topic: []byte("t"), Rate: rate, PayloadSize: 16, Receivers: 1,
					Phase: time.Duration(i) * time.Second / (n * rate)}}
			}})
		if err := e.Connect(context.Background(), nil); err != nil || e.Open() != n {
			t.Fatalf("connect: %v, open %d", err, e.Open())
		}
		return e, obs, e.StartPublishing(0)
	}
	t.Run("late caller", func(t *testing.T) {
		e, obs, at := start(t)
		end := at.Add(200 * time.Millisecond)
		e.StopPublishingAt(end)
		time.Sleep(time.Until(end) + 200*time.Millisecond)
		e.StopPublishing()
		time.Sleep(100 * time.Millisecond)
		e.FinishPublishing(false)
		e.Disconnect(time.Second)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if want := int64(n * 200); obs.scheduled != want || e.ScheduledBefore(end) != want {
			t.Errorf("scheduled %d (ScheduledBefore the stop %d), want %d", obs.scheduled, e.ScheduledBefore(end), want)
		}
		if int64(obs.published+obs.unsentTotal()) != obs.scheduled {
			t.Errorf("scheduled %d != published %d + unsent %v", obs.scheduled, obs.published, obs.unsent)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		e, obs, at := start(t)
		e.StopPublishingAt(at.Add(time.Hour))
		time.Sleep(200 * time.Millisecond)
		stopAccounted(t, e, obs)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		if obs.scheduled < n*rate/5 || obs.scheduled > n*rate {
			t.Errorf("scheduled %d, want the ~%d due before the interrupt", obs.scheduled, n*rate/5)
		}
	})
}

// stopAccounted stops e's publishing, finishes and disconnects, and checks obs's accounts:
// scheduled = published + unsent, and scheduled between what was due before the call to
// StopPublishing and what was due after it.
func stopAccounted(t *testing.T, e *reactor.Engine, obs *acct) {
	t.Helper()
	lo := time.Now()
	e.StopPublishing()
	hi := time.Now()
	time.Sleep(100 * time.Millisecond)
	e.FinishPublishing(false)
	e.Disconnect(time.Second)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if int64(obs.published+obs.unsentTotal()) != obs.scheduled {
		t.Errorf("scheduled %d != published %d + unsent %v", obs.scheduled, obs.published, obs.unsent)
	}
	if a, b := e.ScheduledBefore(lo), e.ScheduledBefore(hi); obs.scheduled < a || obs.scheduled > b {
		t.Errorf("the publishers' accounts say %d scheduled, ScheduledBefore the call %d, after it %d", obs.scheduled, a, b)
	}
}
