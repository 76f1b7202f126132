package sink_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/sink"
)

// startSink starts a sink on a free loopback port for the test.
func startSink(t testing.TB, cfg sink.Config) *sink.Server {
	t.Helper()
	srv, err := sink.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv
}

// raw is a client built from the codec, speaking one packet at a time.
type raw struct {
	t   testing.TB
	nc  net.Conn
	v   codec.Version
	buf []byte
	id  uint16
}

func dial(t testing.TB, srv *sink.Server, v codec.Version) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: nc, v: v}
}

// connect dials and completes CONNECT/CONNACK.
func connect(t testing.TB, srv *sink.Server, v codec.Version, id string) *raw {
	t.Helper()
	c := dial(t, srv, v)
	c.connect(id)
	return c
}

// connect completes CONNECT/CONNACK as id.
func (c *raw) connect(id string) {
	c.t.Helper()
	c.send(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte(id), CleanStart: true, KeepAlive: 60}, c.v))
	var ca codec.Connack
	h, body := c.next()
	if h.Type != codec.TypeConnack {
		c.t.Fatalf("got %v, want CONNACK", h.Type)
	}
	if err := codec.DecodeConnack(body, c.v, &ca); err != nil || ca.Reason != 0 {
		c.t.Fatalf("CONNACK %+v: %v", ca, err)
	}
}

// publishAcked publishes payload at qos and completes its acknowledgements.
func (c *raw) publishAcked(topic string, qos codec.QoS, payload string) {
	c.t.Helper()
	id := c.publish(topic, qos, payload)
	switch qos {
	case 1:
		c.expectAck(codec.TypePuback, id)
	case 2:
		c.expectAck(codec.TypePubrec, id)
		c.ack(codec.TypePubrel, id)
		c.expectAck(codec.TypePubcomp, id)
	}
}

// receiveAcked reads one PUBLISH of payload at qos (expectPublish) and acknowledges it.
func (c *raw) receiveAcked(topic string, qos codec.QoS, payload string) {
	c.t.Helper()
	p := c.expectPublish(topic, qos, payload)
	switch qos {
	case 1:
		c.ack(codec.TypePuback, p.ID)
	case 2:
		c.ack(codec.TypePubrec, p.ID)
		c.expectAck(codec.TypePubrel, p.ID)
		c.ack(codec.TypePubcomp, p.ID)
	}
}

func (c *raw) send(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one packet; it fails the test after 5 s.
func (c *raw) next() (codec.Header, []byte) {
	c.t.Helper()
	h, body, err := c.read(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return h, body
}

// read reads one packet within d.
func (c *raw) read(d time.Duration) (codec.Header, []byte, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	for {
		h, body, n, err := codec.Split(c.buf, 0)
		if err != nil {
			return h, nil, err
		}
		if n > 0 {
			out := append([]byte(nil), body...)
			c.buf = c.buf[n:]
			return h, out, nil
		}
		var b [64 << 10]byte
		m, err := c.nc.Read(b[:])
		if err != nil {
			return h, nil, err
		}
		c.buf = append(c.buf, b[:m]...)
	}
}

// closed reports whether the server closed the connection within d (after any packets).
func (c *raw) closed(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		_, _, err := c.read(time.Until(deadline))
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return true
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false
		}
		if err != nil {
			return true // reset
		}
	}
	return false
}

func (c *raw) subscribe(qos codec.QoS, filters ...string) []codec.ReasonCode {
	c.t.Helper()
	c.id++
	s := codec.Subscribe{ID: c.id}
	for _, f := range filters {
		s.Filters = append(s.Filters, codec.Subscription{Filter: []byte(f), QoS: qos})
	}
	c.send(codec.AppendSubscribe(nil, &s, c.v))
	h, body := c.next()
	var sa codec.Suback
	if h.Type != codec.TypeSuback {
		c.t.Fatalf("got %v, want SUBACK", h.Type)
	}
	if err := codec.DecodeSuback(body, c.v, &sa); err != nil || sa.ID != c.id {
		c.t.Fatalf("SUBACK %+v: %v", sa, err)
	}
	return sa.Reasons
}

func (c *raw) publish(topic string, qos codec.QoS, payload string) uint16 {
	c.t.Helper()
	p := codec.Publish{Topic: []byte(topic), QoS: qos, Payload: []byte(payload)}
	if qos > 0 {
		c.id++
		p.ID = c.id
	}
	c.send(codec.AppendPublish(nil, &p, c.v))
	return p.ID
}

// expectPublish reads one packet and checks it is a PUBLISH of payload at qos.
func (c *raw) expectPublish(topic string, qos codec.QoS, payload string) codec.Publish {
	c.t.Helper()
	h, body := c.next()
	if h.Type != codec.TypePublish {
		c.t.Fatalf("got %v, want PUBLISH %q", h.Type, payload)
	}
	var p codec.Publish
	if err := codec.DecodePublish(h, body, c.v, &p); err != nil {
		c.t.Fatal(err)
	}
	if string(p.Topic) != topic || p.QoS != qos || string(p.Payload) != payload {
		c.t.Fatalf("got PUBLISH %q qos %d %q, want %q qos %d %q", p.Topic, p.QoS, p.Payload, topic, qos, payload)
	}
	return p
}

// expectNothing checks that no packet arrives within d.
func (c *raw) expectNothing(d time.Duration) {
	c.t.Helper()
	h, _, err := c.read(d)
	if err == nil {
		c.t.Fatalf("got %v, want nothing", h.Type)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		c.t.Fatalf("read: %v", err)
	}
}

// ping round-trips a PINGREQ, so every packet sent before it has been handled.
func (c *raw) ping() {
	c.t.Helper()
	c.send(codec.AppendPingreq(nil))
	for {
		h, _ := c.next()
		if h.Type == codec.TypePingresp {
			return
		}
	}
}

// expectAck reads one acknowledgement of type typ for id.
func (c *raw) expectAck(typ codec.PacketType, id uint16) {
	c.t.Helper()
	h, body := c.next()
	var a codec.Ack
	if h.Type != typ {
		c.t.Fatalf("got %v, want %v", h.Type, typ)
	}
	if err := codec.DecodePuback(body, c.v, &a); err != nil || a.ID != id {
		c.t.Fatalf("%v id %d (want %d): %v", typ, a.ID, id, err)
	}
}

func (c *raw) ack(typ codec.PacketType, id uint16) {
	a := codec.Ack{ID: id}
	switch typ {
	case codec.TypePuback:
		c.send(codec.AppendPuback(nil, &a, c.v))
	case codec.TypePubrec:
		c.send(codec.AppendPubrec(nil, &a, c.v))
	case codec.TypePubrel:
		c.send(codec.AppendPubrel(nil, &a, c.v))
	case codec.TypePubcomp:
		c.send(codec.AppendPubcomp(nil, &a, c.v))
	}
}
