package reactor_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// behObs records what a broker did differently, beside recObs's events.
type behObs struct {
	*recObs
	acked, refusedMsgs, refusedCopies int
	refusedCode                       byte
	disconnects                       []string // "code(hex) reason"
	behaved                           map[reactor.Behaviour][3]int
}

func newBehObs() *behObs {
	return &behObs{recObs: newRecObs(), behaved: map[reactor.Behaviour][3]int{}}
}

func (o *behObs) Acked(int, int) { o.mu.Lock(); o.acked++; o.mu.Unlock() }
func (o *behObs) PublishRefused(_, _, receivers int, code byte) {
	o.mu.Lock()
	o.refusedMsgs++
	o.refusedCopies += receivers
	o.refusedCode = code
	o.mu.Unlock()
}
func (o *behObs) BrokerDisconnect(_, _ int, code byte, reason []byte) {
	o.mu.Lock()
	o.disconnects = append(o.disconnects, fmt.Sprintf("%02x %s", code, reason))
	o.mu.Unlock()
}
func (o *behObs) Behaved(_, _ int, b reactor.Behaviour, asked, got byte, n int) {
	o.mu.Lock()
	c := o.behaved[b]
	o.behaved[b] = [3]int{int(asked), int(got), c[2] + n}
	o.mu.Unlock()
}

func (o *behObs) Subscribed(_, _, failed int, code byte) {
	o.mu.Lock()
	o.subacks++
	o.subFailed += failed
	if failed > 0 {
		o.subCode = code
	}
	o.mu.Unlock()
}

func (o *behObs) locked(f func()) { o.mu.Lock(); defer o.mu.Unlock(); f() }

// TestPublishRefusedNotAcked: a 5.0 PUBACK 0x87 and a PUBREC 0x97 refuse their messages:
// PublishRefused with the copies the plan expected, never Acked, and the window frees.
func TestPublishRefusedNotAcked(t *testing.T) {
	for _, c := range []struct {
		qos  byte
		code codec.ReasonCode
	}{{1, codec.ReasonNotAuthorized}, {2, codec.ReasonQuotaExceeded}} {
		addr := scriptServer(t, func(_ int, cn net.Conn, _ []byte, h codec.Header, body []byte) bool {
			switch h.Type {
			case codec.TypeConnect:
				_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V5))
			case codec.TypePublish:
				var p codec.Publish
				if codec.DecodePublish(h, body, codec.V5, &p) == nil {
					a := &codec.Ack{ID: p.ID, Reason: c.code}
					if p.QoS == 1 {
						_, _ = cn.Write(codec.AppendPuback(nil, a, codec.V5))
					} else {
						_, _ = cn.Write(codec.AppendPubrec(nil, a, codec.V5))
					}
				}
			}
			return true
		})
		obs := newBehObs()
		e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
			Client: func(int) reactor.ClientSpec {
				return reactor.ClientSpec{ID: "p", Version: 5, CleanStart: true,
					Publish: &reactor.PublishSpec{Topic: []byte("t"), QoS: c.qos, Rate: 1000, Count: 20, PayloadSize: 16,
						Receivers: 3, MaxInflight: 4}}
			}})
		if err := e.Connect(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		e.StartPublishing(0)
		waitFor(t, 3*time.Second, func() bool { n := 0; obs.locked(func() { n = obs.refusedMsgs }); return n == 20 })
		obs.locked(func() {
			if obs.acked != 0 || obs.refusedCopies != 60 || obs.refusedCode != byte(c.code) {
				t.Errorf("QoS %d: acked %d, refused copies %d, code 0x%02x", c.qos, obs.acked, obs.refusedCopies, obs.refusedCode)
			}
		})
	}
}

// TestBrokerDisconnectEndsTheSession: a broker's 5.0 DISCONNECT is reported with its reason
// code and string in place of a drop, once; a SUBACK that does not come is then not waited
// for (SubscribeSettled), and nothing was granted.
func TestBrokerDisconnectEndsTheSession(t *testing.T) {
	addr := scriptServer(t, func(_ int, cn net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V5))
		case codec.TypeSubscribe:
			d := codec.Disconnect{Reason: codec.ReasonSharedSubsNotSupported}
			d.Props.Set(codec.PropReasonString)
			d.Props.ReasonString = []byte("no groups")
			_, _ = cn.Write(codec.AppendDisconnect(nil, &d, codec.V5))
			time.Sleep(50 * time.Millisecond) // the close comes after: the DISCONNECT says why
			return false
		}
		return true
	})
	obs := newBehObs()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "s", Version: 5, CleanStart: true,
				Subscriptions: []codec.Subscription{{Filter: []byte("$share/g/t"), QoS: 1}}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, func() bool { return e.SubscribeSettled() == 1 })
	time.Sleep(100 * time.Millisecond) // the close that follows is not a second drop
	obs.locked(func() {
		if len(obs.disconnects) != 1 || obs.disconnects[0] != "9e no groups" || len(obs.dropped) != 0 {
			t.Errorf("disconnects %q, dropped %v", obs.disconnects, obs.dropped)
		}
	})
	if e.Subscribed() != 0 || e.SubscribeGranted() != 0 || e.Open() != 0 {
		t.Errorf("subscribed %d, granted %d, open %d", e.Subscribed(), e.SubscribeGranted(), e.Open())
	}
}

// TestCapabilities: a 5.0 CONNACK with Maximum QoS 1, Retain Available 0 and Shared
// Subscription Available 0: the QoS 2 retaining publisher sends QoS 1 without retain
// [MQTT-3.2.2-11] [MQTT-3.2.2-14], the shared SUBSCRIBE is not sent (withheld: no SUBACK
// and no refusal reported), each is Behaved, and Lacking counts them; a SUBACK granting
// QoS 0 to a QoS 1 filter is Behaved too.
func TestCapabilities(t *testing.T) {
	var mu sync.Mutex
	var pubs []codec.Publish
	subscribes := 0
	addr := scriptServer(t, func(conn int, cn net.Conn, _ []byte, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			ca := codec.Connack{}
			ca.Props.Set(codec.PropMaximumQoS)
			ca.Props.MaximumQoS = 1
			ca.Props.Set(codec.PropRetainAvailable)
			ca.Props.Set(codec.PropSharedSubAvailable)
			_, _ = cn.Write(codec.AppendConnack(nil, &ca, codec.V5))
		case codec.TypeSubscribe:
			var s codec.Subscribe
			if codec.DecodeSubscribe(body, codec.V5, &s) == nil {
				mu.Lock()
				subscribes++
				mu.Unlock()
				_, _ = cn.Write(codec.AppendSuback(nil, &codec.Suback{ID: s.ID, Reasons: []codec.ReasonCode{0}}, codec.V5))
			}
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, codec.V5, &p) == nil {
				mu.Lock()
				pubs = append(pubs, codec.Publish{QoS: p.QoS, Retain: p.Retain})
				mu.Unlock()
				_, _ = cn.Write(codec.AppendPuback(nil, &codec.Ack{ID: p.ID}, codec.V5))
			}
		}
		return true
	})
	obs := newBehObs()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 3, Observer: obs,
		Client: func(i int) reactor.ClientSpec {
			s := reactor.ClientSpec{ID: string(rune('a' + i)), Version: 5, CleanStart: true}
			switch i {
			case 0:
				s.Publish = &reactor.PublishSpec{Topic: []byte("t"), QoS: 2, Retain: true, Rate: 1000, Count: 10, PayloadSize: 16}
			case 1:
				s.Subscriptions = []codec.Subscription{{Filter: []byte("$share/g/t"), QoS: 1}}
			case 2:
				s.Subscriptions = []codec.Subscription{{Filter: []byte("t"), QoS: 1}}
			}
			return s
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, func() bool { return e.SubscribeSettled() == 2 })
	e.StartPublishing(0)
	waitFor(t, 3*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(pubs) == 10 })
	mu.Lock()
	for _, p := range pubs {
		if p.QoS != 1 || p.Retain {
			t.Errorf("PUBLISH QoS %d retain %v, want QoS 1 without retain", p.QoS, p.Retain)
			break
		}
	}
	if subscribes != 1 {
		t.Errorf("%d SUBSCRIBEs sent, want 1 (not the shared one)", subscribes)
	}
	mu.Unlock()
	if e.Lacking() != 3 || e.SubscribeGranted() != 1 {
		t.Errorf("lacking %d, want 3; granted %d, want 1", e.Lacking(), e.SubscribeGranted())
	}
	obs.locked(func() {
		want := map[reactor.Behaviour][3]int{reactor.BehaviourMaxQoS: {2, 1, 1}, reactor.BehaviourNoRetain: {1, 0, 1},
			reactor.BehaviourNoShared: {1, 0, 1}, reactor.BehaviourGrantedQoS: {1, 0, 1}}
		for b, w := range want {
			if obs.behaved[b] != w {
				t.Errorf("%v: %v, want %v", b, obs.behaved[b], w)
			}
		}
		if obs.subacks != 1 || obs.subFailed != 0 { // the withheld SUBSCRIBE had no SUBACK
			t.Errorf("%d SUBACKs reported, %d filters refused; want 1 SUBACK (the plain filter's) and no refusal", obs.subacks, obs.subFailed)
		}
	})
}

// TestAnswered311: a 3.1.1 CONNACK "unacceptable protocol version" to a 5.0 CONNECT is a
// refusal with 3.1.1's return code, said to be the broker's version, not a protocol error.
func TestAnswered311(t *testing.T) {
	addr := scriptServer(t, func(_ int, cn net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		if h.Type == codec.TypeConnect {
			_, _ = cn.Write([]byte{0x20, 0x02, 0x00, 0x01})
		}
		return false
	})
	obs := newBehObs()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec { return reactor.ClientSpec{ID: "c", Version: 5, CleanStart: true} }})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	obs.locked(func() {
		if obs.refused[1] != 1 || len(obs.failed) != 0 || obs.behaved[reactor.BehaviourAnswered311] != [3]int{5, 1, 1} {
			t.Errorf("refused %v, failed %v, behaved %v", obs.refused, obs.failed, obs.behaved)
		}
	})
}

// TestPubcompNotFoundAcks: a PUBCOMP 0x92 (packet identifier not found) after a PUBREC
// that accepted the message, as mochi 2.7 sends when its own PUBLISH to the client used
// the same id, ends the exchange as an acknowledgement, said as a behaviour, and keeps
// the connection (it was taken for a PUBACK's code, invalid there: a protocol error).
func TestPubcompNotFoundAcks(t *testing.T) {
	addr := scriptServer(t, func(_ int, cn net.Conn, _ []byte, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V5))
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, codec.V5, &p) == nil {
				_, _ = cn.Write(codec.AppendPubrec(nil, &codec.Ack{ID: p.ID}, codec.V5))
			}
		case codec.TypePubrel:
			var a codec.Ack
			if codec.DecodePubrel(body, codec.V5, &a) == nil {
				_, _ = cn.Write(codec.AppendPubcomp(nil, &codec.Ack{ID: a.ID, Reason: codec.ReasonPacketIDNotFound}, codec.V5))
			}
		}
		return true
	})
	obs := newBehObs()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "p", Version: 5, CleanStart: true,
				Publish: &reactor.PublishSpec{Topic: []byte("t"), QoS: 2, Rate: 1000, Count: 20, PayloadSize: 16,
					Receivers: 1, MaxInflight: 4}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	e.StartPublishing(0)
	waitFor(t, 3*time.Second, func() bool { n := 0; obs.locked(func() { n = obs.acked }); return n == 20 })
	obs.locked(func() {
		if b := obs.behaved[reactor.BehaviourPubcompNotFound]; b[2] != 20 || b[1] != 0x92 || obs.refusedMsgs != 0 || len(obs.dropped) != 0 {
			t.Errorf("behaved %v, refused %d, dropped %v", b, obs.refusedMsgs, obs.dropped)
		}
	})
}

// respObs records a responder's unanswered requests.
type respObs struct {
	*recObs
	unsent []uint32 // publisher numbers
}

func (o *respObs) ResponseUnsent(_, _ int, pub uint32, measured bool) {
	o.mu.Lock()
	if measured {
		o.unsent = append(o.unsent, pub)
	}
	o.mu.Unlock()
}

// TestResponderWindow: a responder answers each request (Response Topic and Correlation
// Data) with a PUBLISH to that topic carrying the request's Correlation Data and payload,
// keeps at most the broker's Receive Maximum of them unacknowledged, and reports the
// requests that found its window full, by their publisher; an acknowledgement opens the
// window again.
func TestResponderWindow(t *testing.T) {
	request := func(pub uint32) []byte {
		pl := make([]byte, 20)
		reactor.PutHeader(pl, time.Now().UnixNano(), 0, pub, 7)
		copy(pl[16:], "req!")
		p := codec.Publish{Topic: []byte("req/x"), Payload: pl}
		p.Props.Set(codec.PropResponseTopic)
		p.Props.ResponseTopic = []byte("resp/7")
		p.Props.Set(codec.PropCorrelationData)
		p.Props.CorrelationData = pl[:reactor.HeaderSize]
		return codec.AppendPublish(nil, &p, codec.V5)
	}
	type answer struct {
		topic, corr, payload string
		qos                  byte
		id                   uint16
	}
	answers := make(chan answer, 16)
	addr := scriptServer(t, func(_ int, cn net.Conn, _ []byte, h codec.Header, body []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			ca := codec.Connack{}
			ca.Props.Set(codec.PropReceiveMaximum)
			ca.Props.ReceiveMaximum = 2
			_, _ = cn.Write(codec.AppendConnack(nil, &ca, codec.V5))
		case codec.TypeSubscribe:
			var s codec.Subscribe
			if codec.DecodeSubscribe(body, codec.V5, &s) == nil {
				b := codec.AppendSuback(nil, &codec.Suback{ID: s.ID, Reasons: []codec.ReasonCode{1}}, codec.V5)
				for pub := range uint32(5) { // five requests in one write: the window takes two
					b = append(b, request(pub)...)
				}
				_, _ = cn.Write(b)
			}
		case codec.TypePublish:
			var p codec.Publish
			if codec.DecodePublish(h, body, codec.V5, &p) == nil {
				answers <- answer{string(p.Topic), string(p.Props.CorrelationData), string(p.Payload), byte(p.QoS), p.ID}
				if p.ID == 3 { // the second: acknowledge both, then one more request
					b := codec.AppendPuback(nil, &codec.Ack{ID: 2}, codec.V5)
					b = codec.AppendPuback(b, &codec.Ack{ID: 3}, codec.V5)
					_, _ = cn.Write(append(b, request(9)...))
				}
			}
		}
		return true
	})
	obs := &respObs{recObs: newRecObs()}
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "responder", Version: 5, CleanStart: true, Respond: true, RespondQoS: 1,
				Subscriptions: []codec.Subscription{{Filter: []byte("req/+"), QoS: 1}}}
		}})
	if err := e.Connect(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var got []answer
	for len(got) < 3 {
		select {
		case a := <-answers:
			got = append(got, a)
		case <-time.After(5 * time.Second):
			t.Fatalf("responses %+v, want 3", got)
		}
	}
	for i, a := range got {
		_, pub, seq, ok := reactor.ReadHeader([]byte(a.corr))
		want := []uint32{0, 1, 9}[i]
		if a.topic != "resp/7" || a.qos != 1 || a.id != uint16(i+2) || !ok || pub != want || seq != 7 ||
			a.payload[:16] != a.corr || a.payload[16:] != "req!" {
			t.Errorf("response %d: %+v (publisher %d), want to resp/7 at QoS 1, id %d, the request's correlation data and payload of publisher %d",
				i, a, pub, i+2, want)
		}
	}
	unsent := func() string { obs.mu.Lock(); defer obs.mu.Unlock(); return fmt.Sprint(obs.unsent) }
	waitFor(t, 2*time.Second, func() bool { return unsent() == "[2 3 4]" })
	if u := unsent(); u != "[2 3 4]" {
		t.Errorf("unanswered requests of publishers %s, want [2 3 4] (the window of 2 was full)", u)
	}
}
