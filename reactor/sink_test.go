package reactor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/sink"
)

// recvAcct is acct plus the messages received.
type recvAcct struct {
	*acct
	rmu      sync.Mutex
	received int
}

func (o *recvAcct) Received(int, int, reactor.Message) { o.rmu.Lock(); o.received++; o.rmu.Unlock() }

// TestEngineAgainstSink runs 5.0 publishers and a subscriber through the real sink: its
// CONNACK's Maximum Packet Size is honoured (a message over it is never sent: unsent
// too_large, the sink takes none), Receive Maximum and Topic Alias Maximum are honoured (QoS 1
// with aliases arrives whole, every copy acknowledged), and the accounts add up on both sides.
func TestEngineAgainstSink(t *testing.T) {
	tier.Integration(t)
	srv, err := sink.Start(context.Background(), sink.Config{MaxPacketSize: 128, ReceiveMaximum: 4, TopicAliasMaximum: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close() //nolint:errcheck
	obs := &recvAcct{acct: newAcct()}
	e := startEngine(t, reactor.Config{Brokers: []string{srv.Addr()}, Clients: 3, Loops: 1, Observer: obs,
		Client: func(i int) reactor.ClientSpec {
			switch i {
			case 0:
				return reactor.ClientSpec{ID: "sub", Version: 5, CleanStart: true,
					Subscriptions: []codec.Subscription{{Filter: []byte("s/#"), QoS: 1}}}
			case 1: // fits: 16-byte payload
				return reactor.ClientSpec{ID: "fits", Version: 5, CleanStart: true, Publish: &reactor.PublishSpec{
					Topic: []byte("s/fits"), QoS: 1, Rate: 200, PayloadSize: 16, Receivers: 1}}
			default: // 200-byte payload: over the sink's 128
				return reactor.ClientSpec{ID: "big", Version: 5, CleanStart: true, Publish: &reactor.PublishSpec{
					Topic: []byte("s/big"), QoS: 1, Rate: 200, PayloadSize: 200, Receivers: 1}}
			}
		}})
	if err := e.Connect(context.Background(), nil); err != nil || e.Open() != 3 {
		t.Fatalf("connect: %v, open %d", err, e.Open())
	}
	for deadline := time.Now().Add(5 * time.Second); e.Subscribed() < 1 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	e.StartPublishing(0)
	time.Sleep(400 * time.Millisecond)
	e.StopPublishing()
	time.Sleep(200 * time.Millisecond)
	e.FinishPublishing(false)
	e.Disconnect(time.Second)
	st := srv.Stats()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	obs.rmu.Lock()
	defer obs.rmu.Unlock()
	if obs.published < 40 || st.PublishIn[1] != uint64(obs.published) || obs.acked != obs.published {
		t.Errorf("published %d, acked %d, sink took %v", obs.published, obs.acked, st.PublishIn)
	}
	if obs.unsent[reactor.UnsentTooLarge] < 40 {
		t.Errorf("unsent %v: want the big publisher's messages as too_large", obs.unsent)
	}
	if obs.received != obs.published || st.Relayed[1] != uint64(obs.published) || st.Acked != st.Relayed[1] || st.Dropped.Total() != 0 {
		t.Errorf("received %d of %d; sink relayed %v acked %d dropped %+v", obs.received, obs.published, st.Relayed, st.Acked, st.Dropped)
	}
}
