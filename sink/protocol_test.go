package sink_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/sink"
)

// TestMalformedClientsClosed: a client that sends garbage, a bad remaining length, a packet
// before CONNECT, a packet over the Maximum Packet Size, a second CONNECT or a bad topic alias is
// closed (a 5.0 one after a DISCONNECT with the reason), and the sink keeps serving a client
// that was connected all along.
func TestMalformedClientsClosed(t *testing.T) {
	srv := startSink(t, sink.Config{MaxPacketSize: 1024, TopicAliasMaximum: 4})
	sub := connect(t, srv, codec.V311, "survivor")
	sub.subscribe(0, "ok/#")
	big := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("ok/x"), Payload: make([]byte, 2000)}, codec.V5)
	cases := []struct {
		name    string
		connect bool // send CONNECT (5.0) first
		bytes   []byte
		reason  codec.ReasonCode // the DISCONNECT's reason, for a connected client
	}{
		{name: "garbage", bytes: []byte("GET / HTTP/1.1\r\n\r\n")},
		{name: "reserved type", bytes: []byte{0x00, 0x00}},
		{name: "varint of five bytes", bytes: []byte{0x10, 0xff, 0xff, 0xff, 0xff, 0x7f}},
		{name: "publish before connect", bytes: codec.AppendPublish(nil, &codec.Publish{Topic: []byte("ok/x")}, codec.V311)},
		{name: "oversized before connect", bytes: big},
		{name: "oversized", connect: true, bytes: big, reason: codec.ReasonPacketTooLarge},
		{name: "bad remaining length", connect: true, bytes: []byte{0x30, 0x02, 0x00, 0x05}, reason: codec.ReasonMalformedPacket},
		{name: "second connect", connect: true, bytes: codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("x"), CleanStart: true}, codec.V5), reason: codec.ReasonProtocolError},
		{name: "topic alias over maximum", connect: true, reason: codec.ReasonTopicAliasInvalid,
			bytes: codec.AppendPublish(nil, func() *codec.Publish {
				p := &codec.Publish{Topic: []byte("ok/x")}
				p.Props.TopicAlias = 5
				p.Props.Set(codec.PropTopicAlias)
				return p
			}(), codec.V5)},
		{name: "unknown topic alias", connect: true, reason: codec.ReasonTopicAliasInvalid,
			bytes: codec.AppendPublish(nil, func() *codec.Publish {
				p := &codec.Publish{}
				p.Props.TopicAlias = 2
				p.Props.Set(codec.PropTopicAlias)
				return p
			}(), codec.V5)},
	}
	before := srv.Stats()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c *raw
			if tc.connect {
				c = connect(t, srv, codec.V5, "bad-"+tc.name)
			} else {
				c = dial(t, srv, codec.V5)
			}
			c.send(tc.bytes)
			if tc.connect {
				h, body := c.next()
				var d codec.Disconnect
				if h.Type != codec.TypeDisconnect || codec.DecodeDisconnect(body, codec.V5, &d) != nil || d.Reason != tc.reason {
					t.Fatalf("got %v %+v, want DISCONNECT with reason %#x", h.Type, d, tc.reason)
				}
			}
			if !c.closed(5 * time.Second) {
				t.Fatal("the sink did not close the connection")
			}
		})
	}
	pub := connect(t, srv, codec.V5, "good-pub")
	pub.publish("ok/1", 0, "still here")
	sub.expectPublish("ok/1", 0, "still here")
	st := srv.Stats()
	if n := st.Refused - before.Refused; n != 5 {
		t.Errorf("refused %d, want 5 (the clients closed before CONNACK)", n)
	}
	if n := st.ProtocolErrors - before.ProtocolErrors; n != 5 {
		t.Errorf("protocol errors %d, want 5", n)
	}
}

// TestCutEverywhere feeds a connected session's packets cut at every byte: the sink answers
// them all, the same as whole.
func TestCutEverywhere(t *testing.T) {
	srv := startSink(t, sink.Config{TopicAliasMaximum: 2})
	sub := connect(t, srv, codec.V5, "sub")
	sub.subscribe(2, "cut/#")
	var wire []byte
	wire = codec.AppendConnect(wire, &codec.Connect{ClientID: []byte("cutter"), CleanStart: true}, codec.V5)
	p := codec.Publish{Topic: []byte("cut/a"), QoS: 1, ID: 1, Payload: []byte("one")}
	p.Props.TopicAlias = 1
	p.Props.Set(codec.PropTopicAlias)
	wire = codec.AppendPublish(wire, &p, codec.V5)
	p = codec.Publish{QoS: 2, ID: 2, Payload: []byte("two")} // by alias only
	p.Props.TopicAlias = 1
	p.Props.Set(codec.PropTopicAlias)
	wire = codec.AppendPublish(wire, &p, codec.V5)
	wire = codec.AppendPubrel(wire, &codec.Ack{ID: 2}, codec.V5)
	wire = codec.AppendPingreq(wire)
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close() //nolint:errcheck
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &raw{t: t, nc: nc, v: codec.V5}
	for i := range wire {
		c.send(wire[i : i+1])
		if i%7 == 0 {
			time.Sleep(200 * time.Microsecond) // let reads end at many places
		}
	}
	for _, want := range []codec.PacketType{codec.TypeConnack, codec.TypePuback, codec.TypePubrec, codec.TypePubcomp, codec.TypePingresp} {
		if h, _ := c.next(); h.Type != want {
			t.Fatalf("got %v, want %v", h.Type, want)
		}
	}
	got := sub.expectPublish("cut/a", 1, "one")
	sub.ack(codec.TypePuback, got.ID)
	got = sub.expectPublish("cut/a", 2, "two")
	if got.Props.Has(codec.PropTopicAlias) {
		t.Error("a relayed copy carries the publisher's topic alias")
	}
}

// TestSlowSubscriberDropped: a subscriber that does not read has its copies dropped once its
// output reaches MaxOutput, counted as output_full, and another subscriber gets everything.
func TestSlowSubscriberDropped(t *testing.T) {
	srv := startSink(t, sink.Config{MaxOutput: 512 << 10})
	slow := connect(t, srv, codec.V311, "slow")
	slow.subscribe(0, "flood")
	fast := connect(t, srv, codec.V311, "fast")
	fast.subscribe(0, "flood")
	pub := connect(t, srv, codec.V311, "pub")
	payload := string(make([]byte, 1000))
	const n = 20000 // 20 MB: more than the kernel's socket buffers hold for the slow one
	done := make(chan error, 1)
	go func() {
		for i := range n {
			h, _, err := fast.read(10 * time.Second)
			if err != nil || h.Type != codec.TypePublish {
				done <- fmt.Errorf("message %d: %v: %w", i, h.Type, err)
				return
			}
		}
		done <- nil
	}()
	var batch []byte
	for i := range n {
		batch = codec.AppendPublish(batch, &codec.Publish{Topic: []byte("flood"), Payload: []byte(payload)}, codec.V311)
		if i%20 == 19 {
			pub.send(batch)
			batch = batch[:0]
			time.Sleep(200 * time.Microsecond) // 100 MB/s at most: the fast one keeps up
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the fast subscriber: %v (stats %+v)", err, srv.Stats())
	}
	st := srv.Stats()
	if st.Dropped.OutputFull == 0 || st.Dropped.OutputFull+st.Relayed[0] != 2*n {
		t.Errorf("output_full %d + relayed %d, want > 0 and %d", st.Dropped.OutputFull, st.Relayed[0], 2*n)
	}
}

// TestPingDisconnectUnsubscribe covers the remaining flows and Close.
func TestPingDisconnectUnsubscribe(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			srv, err := sink.Start(context.Background(), sink.Config{})
			if err != nil {
				t.Fatal(err)
			}
			c := connect(t, srv, v, "")
			c.subscribe(1, "u/a", "u/b")
			c.send(codec.AppendUnsubscribe(nil, &codec.Unsubscribe{ID: 42, Filters: [][]byte{[]byte("u/a"), []byte("u/none")}}, v))
			h, body := c.next()
			var ua codec.Unsuback
			if h.Type != codec.TypeUnsuback || codec.DecodeUnsuback(body, v, &ua) != nil || ua.ID != 42 {
				t.Fatalf("got %v %+v, want UNSUBACK 42", h.Type, ua)
			}
			if v == codec.V5 && (len(ua.Reasons) != 2 || ua.Reasons[0] != codec.ReasonSuccess || ua.Reasons[1] != codec.ReasonNoSubscriptionExisted) {
				t.Errorf("UNSUBACK reasons %v, want [0x00 0x11]", ua.Reasons)
			}
			pub := connect(t, srv, v, "p")
			pub.publish("u/a", 0, "gone")
			pub.publish("u/b", 0, "kept")
			c.expectPublish("u/b", 0, "kept")
			if st := srv.Stats(); st.Subscriptions != 1 || st.NoSubscribers != 1 {
				t.Errorf("subscriptions %d no_subscribers %d, want 1 and 1", st.Subscriptions, st.NoSubscribers)
			}
			pub.send(codec.AppendDisconnect(nil, &codec.Disconnect{}, v))
			if !pub.closed(5 * time.Second) {
				t.Error("DISCONNECT did not close")
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			if !c.closed(5 * time.Second) {
				t.Error("Close left a connection open")
			}
			if _, err := net.Dial("tcp", srv.Addr()); err == nil {
				t.Error("still listening after Close")
			}
		})
	}
}

// TestListenAddress: a non-loopback address is refused without AllowRemote; a fixed port that
// is taken is refused unless the port is shared.
func TestListenAddress(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "example.com:1883"} {
		if _, err := sink.Start(context.Background(), sink.Config{Addr: addr}); !errors.Is(err, sink.ErrNotLoopback) {
			t.Errorf("%s: got %v, want ErrNotLoopback", addr, err)
		}
	}
	srv := startSink(t, sink.Config{Addr: "127.0.0.1:0"})
	if _, err := sink.Start(context.Background(), sink.Config{Addr: srv.Addr()}); err == nil {
		t.Errorf("a second sink on %s started", srv.Addr())
	}
	six, err := sink.Start(context.Background(), sink.Config{Addr: "[::1]:0"})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer six.Close() //nolint:errcheck
	connect(t, six, codec.V5, "six").ping()
}
