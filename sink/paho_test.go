package sink_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/mqblast/mqblast/sink"
)

// pahoClient connects a paho.golang (MQTT 5.0) client to srv; received gets its messages.
func pahoClient(t *testing.T, srv *sink.Server, id string, received chan<- *paho.Publish) (*paho.Client, *paho.Connack) {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	c := paho.NewClient(paho.ClientConfig{Conn: nc, ClientID: id,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
			if received != nil {
				received <- pr.Packet
			}
			return true, nil
		}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ca, err := c.Connect(ctx, &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30})
	if err != nil {
		t.Fatalf("paho connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Disconnect(&paho.Disconnect{}) })
	return c, ca
}

// TestPaho runs a second, independent client through the sink: its CONNACK properties,
// SUBACK, and QoS 0, 1 and 2 both ways (paho acknowledges what it receives).
func TestPaho(t *testing.T) {
	srv := startSink(t, sink.Config{ReceiveMaximum: 100, TopicAliasMaximum: 8, MaxPacketSize: 4096})
	got := make(chan *paho.Publish, 16)
	sub, ca := pahoClient(t, srv, "paho-sub", got)
	p := ca.Properties
	if p == nil || p.ReceiveMaximum == nil || *p.ReceiveMaximum != 100 || p.TopicAliasMaximum == nil || *p.TopicAliasMaximum != 8 ||
		p.MaximumPacketSize == nil || *p.MaximumPacketSize != 4096 || p.RetainAvailable {
		t.Fatalf("CONNACK properties %+v", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sa, err := sub.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: "paho/+", QoS: 2}}})
	if err != nil || len(sa.Reasons) != 1 || sa.Reasons[0] != 2 {
		t.Fatalf("SUBACK %+v: %v", sa, err)
	}
	pub, _ := pahoClient(t, srv, "paho-pub", nil)
	for q := range byte(3) {
		if _, err := pub.Publish(ctx, &paho.Publish{Topic: "paho/x", QoS: q, Payload: fmt.Appendf(nil, "q%d", q)}); err != nil {
			t.Fatalf("publish QoS %d: %v", q, err)
		}
		select {
		case m := <-got:
			if m.QoS != q || string(m.Payload) != fmt.Sprintf("q%d", q) || m.Topic != "paho/x" {
				t.Fatalf("got %q QoS %d on %q, want q%d", m.Payload, m.QoS, m.Topic, q)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("QoS %d message not relayed", q)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Acked < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := srv.Stats(); st.Acked != 2 || st.Unacked != 0 || st.PublishIn != [3]uint64{1, 1, 1} {
		t.Errorf("acked %d unacked %d publish_in %v, want 2, 0, [1 1 1]", st.Acked, st.Unacked, st.PublishIn)
	}
}
