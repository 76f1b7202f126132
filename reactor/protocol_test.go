package reactor_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/reactor"
)

// scriptServer is codecServer for more than one connection, one after another or at
// once: it accepts every connection on loopback and calls handle for each packet read on
// it, with the connection's number (0, 1, ... in accept order) and the packet's raw bytes,
// until handle returns false (the server closes that connection) or the connection ends.
func scriptServer(t *testing.T, handle func(conn int, c net.Conn, raw []byte, h codec.Header, body []byte) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(n int, c net.Conn) {
				defer c.Close() //nolint:errcheck
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				var buf []byte
				tmp := make([]byte, 256<<10)
				for {
					k, err := c.Read(tmp)
					if err != nil {
						return
					}
					buf = append(buf, tmp[:k]...)
					for {
						h, body, used, err := codec.Split(buf, 1<<20)
						if err != nil || used == 0 {
							break
						}
						if !handle(n, c, buf[:used:used], h, body) {
							return
						}
						buf = buf[used:]
					}
				}
			}(n, c)
		}
	}()
	return ln.Addr().String()
}

// recObs records what the protocol tests assert: deliveries, SUBACK verdicts, drops.
type recObs struct {
	*countObs
	received  []reactor.Message
	subFailed int
	subCode   byte
	subacks   int
}

func newRecObs() *recObs { return &recObs{countObs: newObs()} }

func (o *recObs) Received(_, _ int, m reactor.Message) {
	o.mu.Lock()
	o.received = append(o.received, m)
	o.mu.Unlock()
}

func (o *recObs) Subscribed(_, _, failed int, code byte) {
	o.mu.Lock()
	o.subacks++
	o.subFailed += failed
	o.subCode = code
	o.mu.Unlock()
}

// seqs returns the sequence numbers delivered, and how many carried DUP.
func (o *recObs) seqs() ([]uint32, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s []uint32
	dups := 0
	for _, m := range o.received {
		s = append(s, m.Seq)
		if m.Dup {
			dups++
		}
	}
	return s, dups
}

// wire collects the raw packets a scripted server read, for the test goroutine.
type wire struct {
	mu   sync.Mutex
	pkts [][]byte
}

func (w *wire) add(raw []byte) {
	w.mu.Lock()
	w.pkts = append(w.pkts, append([]byte(nil), raw...))
	w.mu.Unlock()
}

func (w *wire) all() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.pkts...)
}

func (w *wire) len() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.pkts) }

// measured returns a payload of size bytes (at least the header) carrying seq.
func measured(seq uint32, size int) []byte {
	pl := make([]byte, max(size, reactor.HeaderSize))
	reactor.PutHeader(pl, time.Now().UnixNano(), 0, 0, seq)
	return pl
}

func subscriber(id string, version byte) reactor.ClientSpec {
	return reactor.ClientSpec{ID: id, Version: version, CleanStart: true,
		Subscriptions: []codec.Subscription{{Filter: []byte("t"), QoS: 2}}}
}

func suback(c net.Conn, body []byte, v codec.Version) {
	var sub codec.Subscribe
	if codec.DecodeSubscribe(body, v, &sub) == nil {
		_, _ = c.Write(codec.AppendSuback(nil, &codec.Suback{ID: sub.ID, Reasons: []codec.ReasonCode{2}}, v))
	}
}

// connectOne connects the one client of cfg, observed by obs. It checks the CONNACK, not
// that the session is still open: a scripted broker may end it at once.
func connectOne(t *testing.T, obs *recObs, cfg reactor.Config) *reactor.Engine {
	t.Helper()
	cfg.Observer = obs
	e := startEngine(t, cfg)
	err := e.Connect(context.Background(), nil)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if err != nil || obs.connected != 1 {
		t.Fatalf("connect: %v, connected %d, failed %v", err, obs.connected, obs.failed)
	}
	return e
}

// TestQoS2ReceiverOnce: a QoS 2 PUBLISH whose packet id is still held (no PUBREL yet) is
// acknowledged with PUBREC again and not delivered again, DUP flag or not; PUBREL releases
// the id (PUBCOMP), after which the id starts a new message. In 5.0 a PUBREL for an id the
// client does not hold is answered with PUBCOMP 0x92 (Packet Identifier not found).
func TestQoS2ReceiverOnce(t *testing.T) {
	for _, version := range []byte{4, 5} {
		t.Run(codec.Version(version).String(), func(t *testing.T) {
			v := codec.Version(version)
			want := [][]byte{
				{0x50, 0x02, 0x00, 0x07}, // PUBREC 7: the first PUBLISH, delivered
				{0x50, 0x02, 0x00, 0x07}, // PUBREC 7: its DUP re-send, not delivered
				{0x50, 0x02, 0x00, 0x07}, // PUBREC 7: again without DUP, not delivered
				{0x70, 0x02, 0x00, 0x07}, // PUBCOMP 7: released
				{0x50, 0x02, 0x00, 0x07}, // PUBREC 7: a new message with the id, delivered
			}
			if v == codec.V5 {
				want = append(want, []byte{0x70, 0x03, 0x00, 0x09, 0x92}) // PUBCOMP 9: not found
			}
			var acks wire
			done := make(chan struct{})
			addr := scriptServer(t, func(_ int, c net.Conn, raw []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{}, v))
				case codec.TypeSubscribe:
					suback(c, body, v)
					var b []byte
					b = codec.AppendPublish(b, &codec.Publish{QoS: 2, ID: 7, Topic: []byte("t"), Payload: measured(0, 0)}, v)
					b = codec.AppendPublish(b, &codec.Publish{QoS: 2, ID: 7, Dup: true, Topic: []byte("t"), Payload: measured(0, 0)}, v)
					b = codec.AppendPublish(b, &codec.Publish{QoS: 2, ID: 7, Topic: []byte("t"), Payload: measured(0, 0)}, v)
					b = codec.AppendPubrel(b, &codec.Ack{ID: 7}, v)
					b = codec.AppendPublish(b, &codec.Publish{QoS: 2, ID: 7, Topic: []byte("t"), Payload: measured(1, 0)}, v)
					if v == codec.V5 {
						b = codec.AppendPubrel(b, &codec.Ack{ID: 9}, v)
					}
					_, _ = c.Write(b)
				case codec.TypePubrec, codec.TypePubcomp:
					acks.add(raw)
					if acks.len() == len(want) {
						close(done)
					}
				}
				return true
			})
			obs := newRecObs()
			connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
				Client: func(int) reactor.ClientSpec { return subscriber("s", version) }})
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Fatalf("acknowledgements %x, want %x", acks.all(), want)
			}
			if d := cmp.Diff(want, acks.all()); d != "" {
				t.Errorf("acknowledgements (-want +got):\n%s", d)
			}
			if seqs, dups := obs.seqs(); !cmp.Equal(seqs, []uint32{0, 1}) || dups != 0 {
				t.Errorf("delivered %v (%d with DUP), want [0 1] once each", seqs, dups)
			}
		})
	}
}

// TestQoS2ReceiverAcrossReconnect: a persistent session (clean session off) keeps the QoS 2
// ids it holds across a reconnect when the CONNACK says the session is present, so the
// broker's DUP re-send is not delivered twice; when the session is not present the ids
// are gone, and the re-send is a new message.
func TestQoS2ReceiverAcrossReconnect(t *testing.T) {
	for _, c := range []struct {
		name    string
		present bool
		want    []uint32
	}{
		{"session-present", true, []uint32{0}},
		{"session-not-present", false, []uint32{0, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := codec.V311
			var second wire
			done := make(chan struct{})
			addr := scriptServer(t, func(conn int, cn net.Conn, raw []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{SessionPresent: conn > 0 && c.present}, v))
				case codec.TypeSubscribe:
					suback(cn, body, v)
					_, _ = cn.Write(codec.AppendPublish(nil, &codec.Publish{QoS: 2, ID: 7, Dup: conn > 0,
						Topic: []byte("t"), Payload: measured(0, 0)}, v))
				case codec.TypePubrec:
					if conn == 0 {
						return false // the connection drops before the PUBREL
					}
					second.add(raw)
					_, _ = cn.Write(codec.AppendPubrel(nil, &codec.Ack{ID: 7}, v))
				case codec.TypePubcomp:
					second.add(raw)
					close(done)
					return false
				}
				return true
			})
			obs := newRecObs()
			connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
				Reconnect: true, ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
				Client: func(int) reactor.ClientSpec {
					s := subscriber("p", 4)
					s.CleanStart = false
					return s
				}})
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("no PUBCOMP on the second connection; it read %x", second.all())
			}
			want := [][]byte{{0x50, 0x02, 0x00, 0x07}, {0x70, 0x02, 0x00, 0x07}}
			if d := cmp.Diff(want, second.all()); d != "" {
				t.Errorf("second connection's acknowledgements (-want +got):\n%s", d)
			}
			if seqs, _ := obs.seqs(); !cmp.Equal(seqs, c.want) {
				t.Errorf("delivered %v, want %v", seqs, c.want)
			}
		})
	}
}

// TestServerKeepAlive: a 5.0 CONNACK's Server Keep Alive (1 s) replaces the client's
// keepalive (60 s): the PINGREQ comes after about a second.
func TestServerKeepAlive(t *testing.T) {
	tm := tier.Timing(t)
	var connack time.Time
	got := make(chan time.Duration, 1)
	var ping []byte
	addr := scriptServer(t, func(_ int, c net.Conn, raw []byte, h codec.Header, _ []byte) bool {
		switch h.Type {
		case codec.TypeConnect:
			ca := codec.Connack{}
			ca.Props.Set(codec.PropServerKeepAlive)
			ca.Props.ServerKeepAlive = 1
			connack = time.Now()
			_, _ = c.Write(codec.AppendConnack(nil, &ca, codec.V5))
		case codec.TypePingreq:
			ping = append([]byte(nil), raw...)
			_, _ = c.Write(codec.AppendPingresp(nil))
			got <- time.Since(connack)
		}
		return true
	})
	obs := newRecObs()
	connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
		Client: func(int) reactor.ClientSpec {
			return reactor.ClientSpec{ID: "k", Version: 5, CleanStart: true, Keepalive: 60 * time.Second}
		}})
	select {
	case d := <-got:
		if d < 800*time.Millisecond || d > 1500*time.Millisecond {
			tm.Errorf("PINGREQ %v after the CONNACK, want about 1 s", d)
		}
		if !bytes.Equal(ping, []byte{0xc0, 0x00}) {
			t.Errorf("PINGREQ bytes %x", ping)
		}
	case <-time.After(2 * time.Second):
		tm.Fatal("no PINGREQ within 2 s of a CONNACK with Server Keep Alive 1 s")
	}
	waitFor(t, time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return obs.pings == 1 })
}

// TestServerMaximumPacketSize: the 5.0 CONNACK's Maximum Packet Size bounds what the
// client sends. A SUBSCRIBE over it is not sent but reported as refused (every filter,
// reason 0x95), and a publisher whose largest PUBLISH is over it counts in PacketLimited;
// under it, both go as usual.
func TestServerMaximumPacketSize(t *testing.T) {
	filter := []byte(strings.Repeat("f", 80)) // SUBSCRIBE of 88 bytes
	for _, c := range []struct {
		name      string
		max       uint32
		limited   int64
		subFailed int
	}{
		{"under", 60, 1, 1},  // PUBLISH of 64 B payload and SUBSCRIBE both too large
		{"over", 1000, 0, 0}, // both fit
	} {
		t.Run(c.name, func(t *testing.T) {
			var got wire
			done := make(chan struct{})
			addr := scriptServer(t, func(_ int, cn net.Conn, raw []byte, h codec.Header, body []byte) bool {
				got.add(raw)
				switch h.Type {
				case codec.TypeConnect:
					ca := codec.Connack{}
					ca.Props.Set(codec.PropMaximumPacketSize)
					ca.Props.MaximumPacketSize = c.max
					_, _ = cn.Write(codec.AppendConnack(nil, &ca, codec.V5))
				case codec.TypeSubscribe:
					suback(cn, body, codec.V5)
				case codec.TypeDisconnect:
					close(done)
					return false
				}
				return true
			})
			obs := newRecObs()
			e := connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
				Client: func(int) reactor.ClientSpec {
					return reactor.ClientSpec{ID: "m", Version: 5, CleanStart: true,
						Subscriptions: []codec.Subscription{{Filter: filter, QoS: 1}},
						Publish:       &reactor.PublishSpec{Topic: []byte("t"), QoS: 1, Rate: 1, PayloadSize: 64, Receivers: 1}}
				}})
			waitFor(t, 3*time.Second, func() bool { return e.Subscribed() == 1 })
			e.Disconnect(time.Second)
			<-done
			if n := e.PacketLimited(); n != c.limited {
				t.Errorf("PacketLimited = %d, want %d", n, c.limited)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if obs.subFailed != c.subFailed || (c.subFailed > 0 && obs.subCode != 0x95) {
				t.Errorf("SUBACK verdict: %d failed, code 0x%02x; want %d", obs.subFailed, obs.subCode, c.subFailed)
			}
			var types []codec.PacketType
			for _, p := range got.all() {
				if len(p) > int(c.max) {
					t.Errorf("the client sent a %s of %d bytes over the broker's %d", codec.PacketType(p[0]>>4), len(p), c.max)
				}
				types = append(types, codec.PacketType(p[0]>>4))
			}
			want := []codec.PacketType{codec.TypeConnect, codec.TypeDisconnect}
			if c.subFailed == 0 {
				want = []codec.PacketType{codec.TypeConnect, codec.TypeSubscribe, codec.TypeDisconnect}
			}
			if !cmp.Equal(types, want) {
				t.Errorf("packets %v, want %v", types, want)
			}
		})
	}
}

// TestInboundTopicAlias: the client announces no Topic Alias Maximum unless its CONNECT
// properties do, so a Topic Alias from the broker is then a protocol error (DISCONNECT 0x94,
// dropped as protocol_error naming the alias and the clause); one within the announced
// maximum is resolved, and an empty topic with an alias never set is DISCONNECT 0x82.
func TestInboundTopicAlias(t *testing.T) {
	pub := func(topic string, alias uint16, seq uint32) []byte {
		p := codec.Publish{Topic: []byte(topic), Payload: measured(seq, 0)}
		p.Props.Set(codec.PropTopicAlias)
		p.Props.TopicAlias = alias
		return codec.AppendPublish(nil, &p, codec.V5)
	}
	for _, c := range []struct {
		name     string
		aliasMax uint16 // announced in the CONNECT (0: not announced)
		send     [][]byte
		reason   byte
		example  string
		want     []uint32
	}{
		{"not-announced", 0, [][]byte{pub("t", 1, 0)}, 0x94,
			"PUBLISH with Topic Alias 1 over the client's Topic Alias Maximum 0 [MQTT-3.3.2-11]", nil},
		{"over-maximum", 2, [][]byte{pub("t", 2, 0), pub("t", 3, 1)}, 0x94,
			"PUBLISH with Topic Alias 3 over the client's Topic Alias Maximum 2 [MQTT-3.3.2-11]", []uint32{0}},
		{"resolved-then-unknown", 2, [][]byte{pub("a/b", 2, 0), pub("", 2, 1), pub("", 1, 2)}, 0x82,
			"PUBLISH with an empty topic and Topic Alias 1, which the connection has not set (section 3.3.2.3.4)", []uint32{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var disc []byte
			var connect codec.Connect
			done := make(chan struct{})
			addr := scriptServer(t, func(_ int, cn net.Conn, raw []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					_, _ = codec.DecodeConnect(body, &connect)
					_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{}, codec.V5))
				case codec.TypeSubscribe:
					suback(cn, body, codec.V5)
					_, _ = cn.Write(bytes.Join(c.send, nil))
				case codec.TypeDisconnect:
					disc = append([]byte(nil), raw...)
					close(done)
					return false
				}
				return true
			})
			obs := newRecObs()
			connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1,
				Client: func(int) reactor.ClientSpec {
					s := subscriber("a", 5)
					if c.aliasMax > 0 {
						s.Props = &codec.Properties{TopicAliasMaximum: c.aliasMax}
						s.Props.Set(codec.PropTopicAliasMaximum)
					}
					return s
				}})
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				t.Fatal("no DISCONNECT from the client")
			}
			if connect.Props.Has(codec.PropTopicAliasMaximum) != (c.aliasMax > 0) || connect.Props.TopicAliasMaximum != c.aliasMax {
				t.Errorf("CONNECT Topic Alias Maximum %d (present %v), want %d", connect.Props.TopicAliasMaximum,
					connect.Props.Has(codec.PropTopicAliasMaximum), c.aliasMax)
			}
			if want := []byte{0xe0, 0x01, c.reason}; !bytes.Equal(disc, want) {
				t.Errorf("DISCONNECT %x, want %x", disc, want)
			}
			waitFor(t, time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.dropped) > 0 })
			obs.mu.Lock()
			if obs.dropped[reactor.CauseProtocol] != 1 || first(obs.examples) != c.example {
				t.Errorf("dropped %v, example %q; want 1 protocol_error, %q", obs.dropped, first(obs.examples), c.example)
			}
			obs.mu.Unlock()
			if seqs, _ := obs.seqs(); !cmp.Equal(seqs, c.want) {
				t.Errorf("delivered %v, want %v", seqs, c.want)
			}
		})
	}
}

// TestInboundLimit: the client's inbound limit follows the plan's payload (MaxPayload plus
// headroom), a 5.0 CONNECT announces it as Maximum Packet Size (or the scenario's own,
// smaller one), a 1.5 MiB PUBLISH is delivered to a client whose payload is 1.5 MiB, and a
// packet over the limit ends the connection as the client's own limit
// (client_packet_limit, DISCONNECT 0x95 in 5.0), not as the broker's protocol error.
func TestInboundLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name       string
		version    byte
		maxPayload int
		connectMax uint32 // the scenario's CONNECT Maximum Packet Size (0: none)
		payload    int    // of the PUBLISH the server sends
		announced  uint32 // in the CONNECT (5.0)
		example    string // of the drop ("": delivered)
	}{
		{"1.5MiB-delivered-v311", 4, 3 * mib / 2, 0, 3 * mib / 2, 0, ""},
		{"1.5MiB-delivered-v5", 5, 3 * mib / 2, 0, 3 * mib / 2, 3*mib/2 + 64<<10, ""},
		{"default-1MiB-v5", 5, 0, 0, mib - 100, mib, ""},
		{"2MiB-over-v311", 4, mib, 0, 2 * mib, 0,
			"PUBLISH of 2097162 bytes over the client's inbound limit 1114112 (raise it with --max-packet-size)"},
		{"2MiB-over-v5", 5, mib, 0, 2 * mib, mib + 64<<10,
			"PUBLISH of 2097163 bytes over the client's inbound limit 1114112 (raise it with --max-packet-size)"},
		{"connect-property-smaller-v5", 5, mib, 1000, 1200, 1000,
			"PUBLISH of 1209 bytes over the client's inbound limit 1000 (the Maximum Packet Size of the scenario's CONNECT properties)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := codec.Version(c.version)
			announced := make(chan uint32, 1)
			var acks wire
			done := make(chan struct{})
			addr := scriptServer(t, func(_ int, cn net.Conn, raw []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					var connect codec.Connect
					_, _ = codec.DecodeConnect(body, &connect)
					announced <- connect.Props.MaximumPacketSize
					_, _ = cn.Write(codec.AppendConnack(nil, &codec.Connack{}, v))
				case codec.TypeSubscribe:
					suback(cn, body, v)
					go func() { // big: the reading goes on meanwhile
						_, _ = cn.Write(codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 3, Topic: []byte("t"),
							Payload: measured(5, c.payload)}, v))
					}()
				case codec.TypePuback, codec.TypeDisconnect:
					acks.add(raw)
					close(done)
					return false
				}
				return true
			})
			obs := newRecObs()
			connectOne(t, obs, reactor.Config{Brokers: []string{addr}, Clients: 1, MaxPayload: c.maxPayload,
				Client: func(int) reactor.ClientSpec {
					s := subscriber("big", c.version)
					if c.connectMax > 0 {
						s.Props = &codec.Properties{MaximumPacketSize: c.connectMax}
						s.Props.Set(codec.PropMaximumPacketSize)
					}
					return s
				}})
			if got := <-announced; got != c.announced {
				t.Errorf("CONNECT Maximum Packet Size %d, want %d", got, c.announced)
			}
			if c.version == 4 && c.example != "" { // 3.1.1: no DISCONNECT, the client closes
				waitFor(t, 5*time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.dropped) > 0 })
			} else {
				select {
				case <-done:
				case <-time.After(5 * time.Second):
					t.Fatal("no PUBACK or DISCONNECT from the client")
				}
			}
			if c.example == "" {
				if d := cmp.Diff([][]byte{{0x40, 0x02, 0x00, 0x03}}, acks.all()); d != "" {
					t.Errorf("acknowledgement (-want +got):\n%s", d)
				}
				if seqs, _ := obs.seqs(); !cmp.Equal(seqs, []uint32{5}) {
					t.Errorf("delivered %v, want [5]", seqs)
				}
				return
			}
			if c.version == 5 {
				if d := cmp.Diff([][]byte{{0xe0, 0x01, 0x95}}, acks.all()); d != "" {
					t.Errorf("DISCONNECT (-want +got):\n%s", d)
				}
			}
			waitFor(t, time.Second, func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.dropped) > 0 })
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if obs.dropped[reactor.CauseClientLimit] != 1 || first(obs.examples) != c.example {
				t.Errorf("dropped %v, example %q; want 1 %s, %q", obs.dropped, first(obs.examples), reactor.CauseClientLimit, c.example)
			}
			if len(obs.received) != 0 {
				t.Errorf("delivered %d messages over the limit", len(obs.received))
			}
		})
	}
}
