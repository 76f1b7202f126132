package reactor_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// pubRecObs records what recObs does and every Published due time.
type pubRecObs struct {
	*recObs
	pmu  sync.Mutex
	dues []int64
}

func (o *pubRecObs) Published(_, _, _ int, _ byte, due, _ int64, _ time.Duration) {
	o.pmu.Lock()
	o.dues = append(o.dues, due)
	o.pmu.Unlock()
}

// TestHeaderCarriesRunTag: a publisher of the run tagged 0xbeef writes its header on the
// wire (the tag at bytes 6-7, the magic, its number, its sequence); the server sends every
// PUBLISH back, and the receiver reads the tag, the publisher, the sequence and the due
// time the publisher reported, to the nanosecond, from the 48 bits the header keeps.
func TestHeaderCarriesRunTag(t *testing.T) {
	const tag, number = 0xbeef, 4711
	v := codec.V311
	var payloads wire
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, v))
		case codec.TypeSubscribe:
			suback(c, body, v)
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, v, &p) != nil {
				return false
			}
			payloads.add(p.Payload)
			p.QoS = 0
			_, _ = c.Write(codec.AppendPublish(nil, &p, v))
		}
		return true
	})
	obs := &pubRecObs{recObs: newRecObs()}
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, RunTag: tag, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			c := subscriber("ps", 4)
			c.Publish = &reactor.PublishSpec{Topic: []byte("t"), Rate: 200, Count: 5, PayloadSize: 24, Number: number, Receivers: 1}
			return c
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, func() bool { return e.Subscribed() == 1 })
	e.StartPublishing(0)
	waitFor(t, 5*time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.received) == 5 })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	obs.pmu.Lock()
	defer obs.pmu.Unlock()
	for i, pl := range payloads.all() {
		run, pub, seq, ok := reactor.ReadHeader(pl)
		if !ok || run != tag || pub != number || seq != uint32(i) || pl[6] != 0xbe || pl[7] != 0xef || pl[8] != 0xb7 ||
			pl[9] != 0 || pl[10] != number>>8 || pl[11] != number&0xff || pl[15] != byte(i) {
			t.Errorf("payload %d: % x: want the tag beef at bytes 6-7, magic b7, publisher %d, sequence %d", i, pl[:16], number, i)
		}
	}
	for i, m := range obs.received {
		if m.Run != tag || m.Publisher != number || m.Seq != uint32(i) || i >= len(obs.dues) || m.Due != obs.dues[i] || m.Sent == 0 {
			t.Errorf("received %d: %+v, want run %#x, publisher %d, seq %d, due %v (as published)", i, m, tag, number, i, obs.dues)
		}
	}
}

// TestHeaderDueNearReceiver: the header keeps the due time's low 48 bits, and the receiver
// takes the value nearest its own clock: due times 30 h back or ahead (a publisher's clock
// that far off) and the few seconds of skew between hosts (a negative latency) come back
// to the nanosecond, with each message's run tag.
func TestHeaderDueNearReceiver(t *testing.T) {
	v := codec.V311
	offsets := []time.Duration{-30 * time.Hour, -5 * time.Second, -time.Millisecond, 2 * time.Second, 30 * time.Hour}
	sent := make(chan []int64, 1)
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, v))
		case codec.TypeSubscribe:
			suback(c, body, v)
			var b []byte
			var dues []int64
			for i, d := range offsets {
				due := time.Now().Add(d).UnixNano() + 123 // not a round number
				dues = append(dues, due)
				pl := make([]byte, reactor.HeaderSize)
				reactor.PutHeader(pl, due, uint16(0xff00+i), 1, uint32(i))
				b = codec.AppendPublish(b, &codec.Publish{Topic: []byte("t"), Payload: pl}, v)
			}
			sent <- dues
			_, _ = c.Write(b)
		}
		return true
	})
	obs := newRecObs()
	connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
		Client: func(int) reactor.ClientSpec { return subscriber("s", 4) }})
	dues := <-sent
	waitFor(t, 3*time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.received) == len(offsets) })
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for i, m := range obs.received {
		if m.Due != dues[i] || m.Run != uint16(0xff00+i) || m.Seq != uint32(i) {
			t.Errorf("message %d (due %v from now): due %d run %#x seq %d, want due %d run %#x", i, offsets[i], m.Due, m.Run, m.Seq,
				dues[i], 0xff00+i)
		}
	}
}
