package fastbroker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// client is a minimal MQTT client over a net.Conn, enough to drive the server in tests.
type client struct {
	t        testing.TB
	nc       net.Conn
	v        codec.Version
	bytewise bool // write every packet one byte per write, to cut packets at every point
	in       []byte
	used     int
	out      []byte
}

func start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func dial(t testing.TB, s *Server, v codec.Version) *client {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &client{t: t, nc: nc, v: v}
}

// send writes the packets appended to c.out since the last send.
func (c *client) send() {
	c.t.Helper()
	if c.bytewise {
		for i := range c.out {
			if _, err := c.nc.Write(c.out[i : i+1]); err != nil {
				c.t.Fatal(err)
			}
		}
	} else if _, err := c.nc.Write(c.out); err != nil {
		c.t.Fatal(err)
	}
	c.out = c.out[:0]
}

// next returns the next packet from the server; its body aliases c.in until the next call.
func (c *client) next() (codec.Header, []byte) {
	c.t.Helper()
	if err := c.nc.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	for {
		h, body, n, err := codec.Split(c.in[c.used:], 0)
		if err != nil {
			c.t.Fatal(err)
		}
		if n > 0 {
			c.used += n
			return h, body
		}
		c.in = append(c.in[:0], c.in[c.used:]...)
		c.used = 0
		if cap(c.in)-len(c.in) < 4096 {
			c.in = append(c.in, make([]byte, 64<<10)...)[:len(c.in)]
		}
		m, err := c.nc.Read(c.in[len(c.in):cap(c.in)])
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		c.in = c.in[:len(c.in)+m]
	}
}

func (c *client) expect(want codec.PacketType) []byte {
	c.t.Helper()
	h, body := c.next()
	if h.Type != want {
		c.t.Fatalf("got %v, want %v", h.Type, want)
	}
	return body
}

func (c *client) connect(id string) codec.Connack {
	c.t.Helper()
	c.out = codec.AppendConnect(c.out, &codec.Connect{ClientID: []byte(id), CleanStart: true, KeepAlive: 30}, c.v)
	c.send()
	var ack codec.Connack
	if err := codec.DecodeConnack(c.expect(codec.TypeConnack), c.v, &ack); err != nil {
		c.t.Fatal(err)
	}
	if ack.Reason != codec.ReasonSuccess || ack.SessionPresent {
		c.t.Fatalf("CONNACK %+v, want success without a session", ack)
	}
	return ack
}

func (c *client) subscribe(id uint16, qos codec.QoS, filters ...string) []codec.ReasonCode {
	c.t.Helper()
	sub := codec.Subscribe{ID: id}
	for _, f := range filters {
		sub.Filters = append(sub.Filters, codec.Subscription{Filter: []byte(f), QoS: qos})
	}
	c.out = codec.AppendSubscribe(c.out, &sub, c.v)
	c.send()
	var ack codec.Suback
	if err := codec.DecodeSuback(c.expect(codec.TypeSuback), c.v, &ack); err != nil {
		c.t.Fatal(err)
	}
	if ack.ID != id {
		c.t.Fatalf("SUBACK id %d, want %d", ack.ID, id)
	}
	return ack.Reasons
}

func (c *client) ping() {
	c.t.Helper()
	c.out = codec.AppendPingreq(c.out)
	c.send()
	c.expect(codec.TypePingresp)
}

func (c *client) expectAck(typ codec.PacketType, id uint16) {
	c.t.Helper()
	var ack codec.Ack
	if err := codec.DecodePuback(c.expect(typ), c.v, &ack); err != nil {
		c.t.Fatal(err)
	}
	if ack.ID != id || ack.Reason != codec.ReasonSuccess {
		c.t.Fatalf("%v %+v, want id %d success", typ, ack, id)
	}
}

// expectClosed waits for the server to close the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	if err := c.nc.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		c.t.Fatal(err)
	}
	var b [64]byte
	for {
		_, err := c.nc.Read(b[:])
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			c.t.Fatalf("read: %v, want EOF", err)
		}
	}
}

// stamp writes the header mqblast's receivers parse: due time (ns), publisher, sequence.
func stamp(seq uint32, dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(seq)*1000)
	dst = binary.BigEndian.AppendUint32(dst, 7)
	return binary.BigEndian.AppendUint32(dst, seq)
}

// waitStats polls until s's counters equal want: Streamed grows only after a write returns.
func waitStats(t *testing.T, s *Server, want Stats) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Stats %+v, want %+v", s.Stats(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

var versions = []codec.Version{codec.V31, codec.V311, codec.V5}

func TestConnectPing(t *testing.T) {
	s := start(t, Options{})
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			c := dial(t, s, v)
			ack := c.connect("c1")
			if ack.Props.Has(codec.PropAssignedClientID) {
				t.Errorf("assigned a client id to a client that has one")
			}
			c.ping()
			c.ping()
		})
	}
	waitStats(t, s, Stats{Connections: 3})
}

func TestConnectAssignsClientID(t *testing.T) {
	s := start(t, Options{})
	c := dial(t, s, codec.V5)
	ack := c.connect("")
	if len(ack.Props.AssignedClientID) == 0 {
		t.Fatalf("CONNACK %+v has no assigned client id", ack)
	}
}

func TestPublish(t *testing.T) {
	for _, bytewise := range []bool{false, true} {
		for _, v := range versions {
			name := v.String()
			if bytewise {
				name += "/bytewise"
			}
			t.Run(name, func(t *testing.T) {
				s := start(t, Options{})
				c := dial(t, s, v)
				c.bytewise = bytewise
				c.connect("pub")
				for q := codec.QoS(0); q <= 2; q++ {
					pub := codec.Publish{QoS: q, Topic: []byte("a/b"), Payload: []byte("hello")}
					if q > 0 {
						pub.ID = uint16(10 + q)
					}
					c.out = codec.AppendPublish(c.out, &pub, v)
				}
				if !bytewise { // larger than the read buffer: it must grow
					c.out = codec.AppendPublish(c.out, &codec.Publish{Topic: []byte("big"), Payload: make([]byte, 200<<10)}, v)
				}
				c.send()
				c.expectAck(codec.TypePuback, 11)
				c.expectAck(codec.TypePubrec, 12)
				c.out = codec.AppendPubrel(c.out, &codec.Ack{ID: 12}, v)
				c.send()
				c.expectAck(codec.TypePubcomp, 12)
				c.ping()
				want := Stats{Connections: 1, Received: [3]uint64{1, 1, 1}, Acks: 3}
				if !bytewise {
					want.Received[0]++
				}
				if got := s.Stats(); got != want {
					t.Errorf("Stats %+v, want %+v", got, want)
				}
			})
		}
	}
}

func TestSubscribeUnsubscribe(t *testing.T) {
	s := start(t, Options{})
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			c := dial(t, s, v)
			c.bytewise = true
			c.connect("sub")
			got := c.subscribe(3, 2, "a/#", "b/+/c")
			if want := []codec.ReasonCode{codec.ReasonGrantedQoS2, codec.ReasonGrantedQoS2}; !bytes.Equal(reasonBytes(got), reasonBytes(want)) {
				t.Errorf("SUBACK reasons %v, want %v", got, want)
			}
			c.out = codec.AppendUnsubscribe(c.out, &codec.Unsubscribe{ID: 4, Filters: [][]byte{[]byte("a/#"), []byte("b/+/c")}}, v)
			c.send()
			var ack codec.Unsuback
			if err := codec.DecodeUnsuback(c.expect(codec.TypeUnsuback), v, &ack); err != nil {
				t.Fatal(err)
			}
			wantReasons := 0
			if v == codec.V5 {
				wantReasons = 2
			}
			if ack.ID != 4 || len(ack.Reasons) != wantReasons {
				t.Errorf("UNSUBACK %+v, want id 4 and %d reasons", ack, wantReasons)
			}
			c.ping() // nothing is streamed without Options.Stream
		})
	}
}

func reasonBytes(rs []codec.ReasonCode) []byte {
	b := make([]byte, len(rs))
	for i, r := range rs {
		b[i] = byte(r)
	}
	return b
}

func TestStream(t *testing.T) {
	const n = 20000
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			s := start(t, Options{Stream: true, StreamCount: n, Payload: stamp})
			c := dial(t, s, v)
			c.connect("sub")
			if got := c.subscribe(1, 1, "$share/g/bench/#", "other/+"); len(got) != 2 || got[0] != codec.ReasonGrantedQoS1 {
				t.Fatalf("SUBACK reasons %v", got)
			}
			var pub codec.Publish
			var want []byte
			for seq := range uint32(n) {
				h, body := c.next()
				if h.Type != codec.TypePublish {
					t.Fatalf("message %d: got %v, want PUBLISH", seq, h.Type)
				}
				if err := codec.DecodePublish(h, body, v, &pub); err != nil {
					t.Fatal(err)
				}
				want = stamp(seq, want[:0])
				if string(pub.Topic) != "bench/x" || pub.QoS != 0 || !bytes.Equal(pub.Payload, want) {
					t.Fatalf("message %d: topic %q qos %d payload %x, want bench/x qos 0 payload %x", seq, pub.Topic, pub.QoS, pub.Payload, want)
				}
			}
			c.subscribe(2, 0, "more/#") // a second SUBSCRIBE starts no second stream
			c.ping()                    // and the first stream stopped at n
			waitStats(t, s, Stats{Connections: 1, Streamed: n})
		})
	}
}

func TestStreamDefaultPayloadUntilClose(t *testing.T) {
	s := start(t, Options{Stream: true})
	c := dial(t, s, codec.V311)
	c.connect("sub")
	c.subscribe(1, 0, "#")
	var pub codec.Publish
	for range 50000 {
		h, body := c.next()
		if err := codec.DecodePublish(h, body, c.v, &pub); err != nil {
			t.Fatal(err)
		}
		if string(pub.Topic) != "x" || !bytes.Equal(pub.Payload, DefaultPayload) {
			t.Fatalf("topic %q payload %q", pub.Topic, pub.Payload)
		}
	}
	c.out = codec.AppendDisconnect(c.out, &codec.Disconnect{}, c.v)
	c.send()
	for { // the rest of the stream, then EOF
		if err := c.nc.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.nc.Read(c.in[:cap(c.in)]); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	if got := s.Stats().Streamed; got < 50000 {
		t.Errorf("Streamed %d, want at least 50000", got)
	}
}

func TestStreamRate(t *testing.T) {
	const rate, n = 2000.0, 100 // 50 ms
	s := start(t, Options{Stream: true, StreamRate: rate, StreamCount: n})
	c := dial(t, s, codec.V5)
	c.connect("sub")
	t0 := time.Now()
	c.subscribe(1, 0, "r")
	for i := range n {
		h, _ := c.next()
		if h.Type != codec.TypePublish {
			t.Fatalf("message %d: got %v", i, h.Type)
		}
	}
	// Message n-1 is due at (n-1)/rate after the SUBACK.
	if got, min := time.Since(t0), time.Duration(float64(n-1)/rate*float64(time.Second)); got < min {
		t.Errorf("%d messages at %v/s took %v, want at least %v", n, rate, got, min)
	}
	c.ping()
	waitStats(t, s, Stats{Connections: 1, Streamed: n})
}

func TestDisconnect(t *testing.T) {
	s := start(t, Options{})
	c := dial(t, s, codec.V5)
	c.connect("d")
	c.out = codec.AppendDisconnect(c.out, &codec.Disconnect{}, c.v)
	c.send()
	c.expectClosed()
}

func TestProtocolErrorCloses(t *testing.T) {
	cases := []struct {
		name string
		pkts func(v codec.Version) []byte
	}{
		{"publish before connect", func(v codec.Version) []byte {
			return codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t")}, v)
		}},
		{"second connect", func(v codec.Version) []byte {
			b := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("a"), CleanStart: true}, v)
			return append(b, b...)
		}},
		{"reserved type", func(codec.Version) []byte { return []byte{0x00, 0x00} }},
		{"wildcard topic", func(v codec.Version) []byte {
			b := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("a"), CleanStart: true}, v)
			return append(b, 0x30, 0x05, 0x00, 0x01, '#', 'h', 'i')
		}},
	}
	s := start(t, Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s, codec.V311)
			c.out = tc.pkts(c.v)
			c.send()
			c.expectClosed()
		})
	}
}

func TestRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		s, err := Start(addr, Options{})
		if !errors.Is(err, ErrNotLoopback) {
			if s != nil {
				_ = s.Close()
			}
			t.Errorf("Start(%q): %v, want ErrNotLoopback", addr, err)
		}
	}
}

func TestCloseClosesConnections(t *testing.T) {
	s, err := Start("localhost:0", Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, s, codec.V311)
	c.connect("a")
	c.out = codec.AppendSubscribe(c.out, &codec.Subscribe{ID: 1, Filters: []codec.Subscription{{Filter: []byte("s/#")}}}, c.v)
	c.send() // and never read: the stream blocks on a full socket
	idle := dial(t, s, codec.V5)
	idle.connect("b")
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idle.expectClosed()
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestTopicFor(t *testing.T) {
	check := func(filter, want string) {
		t.Helper()
		if got := string(topicFor([]byte(filter))); got != want {
			t.Errorf("topicFor(%q) = %q, want %q", filter, got, want)
		}
	}
	check("bench/#", "bench/x")
	check("bench/+", "bench/x")
	check("+/a/+/b", "x/a/x/b")
	check("#", "x")
	check("a/b", "a/b")
	check("$share/g/bench/#", "bench/x")
	check("$SYS/#", "$SYS/x")
}

// TestBackpressureIdles checks that a stream to a subscriber that stops reading waits in the
// poller instead of spinning: the process stays nearly idle while the socket is full.
func TestBackpressureIdles(t *testing.T) {
	if processCPU() < 0 {
		t.Skip("no process CPU time on this platform")
	}
	s := start(t, Options{Stream: true})
	c := dial(t, s, codec.V311)
	c.connect("slow")
	c.subscribe(1, 0, "s")
	time.Sleep(50 * time.Millisecond) // let the socket buffers fill
	const stall = 300 * time.Millisecond
	cpu0 := processCPU()
	time.Sleep(stall)
	if cpu := processCPU() - cpu0; cpu > stall/5 {
		t.Errorf("used %v of CPU in %v while the subscriber did not read, want under %v", cpu, stall, stall/5)
	}
	// The reader still answers, behind the stream, once the client reads again.
	c.out = codec.AppendPingreq(c.out)
	c.send()
	for {
		h, _ := c.next()
		if h.Type == codec.TypePingresp {
			break
		}
		if h.Type != codec.TypePublish {
			t.Fatalf("got %v, want PUBLISH or PINGRESP", h.Type)
		}
	}
}

// connectedConn returns a conn past CONNECT for v, without a socket: process is pure.
func connectedConn(t testing.TB, v codec.Version) *conn {
	t.Helper()
	c := newConn(&Server{}, nil)
	in := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("a"), CleanStart: true}, v)
	if _, _, err := c.process(in); err != nil || !c.connected {
		t.Fatalf("CONNECT: %v", err)
	}
	c.out = c.out[:0]
	return c
}

// mixedPublishes is a read's worth of client packets: publishes at every QoS, PUBREL, PINGREQ.
func mixedPublishes(v codec.Version) []byte {
	var in []byte
	for i := range 100 {
		p := codec.Publish{QoS: codec.QoS(i % 3), Topic: []byte("bench/1"), Payload: make([]byte, 16)}
		if p.QoS > 0 {
			p.ID = uint16(i + 1)
		}
		in = codec.AppendPublish(in, &p, v)
		if p.QoS == 2 {
			in = codec.AppendPubrel(in, &codec.Ack{ID: p.ID}, v)
		}
	}
	return codec.AppendPingreq(in)
}

// TestProcessCutEverywhere feeds a read's packets cut at every byte: the first part's complete
// packets are used, the rest stays for the next read, and the replies are the same as uncut.
func TestProcessCutEverywhere(t *testing.T) {
	for _, v := range versions {
		in := mixedPublishes(v)
		whole := connectedConn(t, v)
		if _, _, err := whole.process(in); err != nil {
			t.Fatal(err)
		}
		for cut := range len(in) {
			c := connectedConn(t, v)
			used, _, err := c.process(in[:cut])
			if err != nil {
				t.Fatalf("%v cut at %d: %v", v, cut, err)
			}
			rest, _, err := c.process(in[used:])
			if err != nil || used+rest != len(in) {
				t.Fatalf("%v cut at %d: used %d+%d of %d: %v", v, cut, used, rest, len(in), err)
			}
			if string(c.out) != string(whole.out) {
				t.Fatalf("%v cut at %d: replies differ", v, cut)
			}
		}
	}
}
