//go:build !race

package reactor

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// TestReceiverAllocs: after warm-up, a read of QoS 2 PUBLISH packets (one of them a DUP
// re-send), their PUBRELs, and PUBLISH packets that set a topic alias and then use it
// allocates nothing, and the alias resolves to the topic it was set to.
func TestReceiverAllocs(t *testing.T) {
	l, s, peer := testSession(t, 5)
	l.rxFor(s.client).aliasMax = 4
	payload := make([]byte, HeaderSize)
	var batch []byte
	for id := uint16(1); id <= 20; id++ {
		p := codec.Publish{QoS: 2, ID: id, Topic: []byte("bench/q2"), Payload: payload}
		batch = codec.AppendPublish(batch, &p, codec.V5)
		p.Dup = true
		batch = codec.AppendPublish(batch, &p, codec.V5)
	}
	for id := uint16(1); id <= 20; id++ {
		batch = codec.AppendPubrel(batch, &codec.Ack{ID: id}, codec.V5)
	}
	set := codec.Publish{Topic: []byte("bench/aliased"), Payload: payload}
	set.Props.Set(codec.PropTopicAlias)
	set.Props.TopicAlias = 3
	batch = codec.AppendPublish(batch, &set, codec.V5)
	use := set
	use.Topic = nil
	for range 10 {
		batch = codec.AppendPublish(batch, &use, codec.V5)
	}
	acks := 40*4 + 20*4 // PUBREC for each PUBLISH, PUBCOMP for each PUBREL
	drain := make([]byte, 64<<10)
	round := func() {
		if _, err := unix.Write(peer, batch); err != nil {
			t.Fatal(err)
		}
		l.read(s)
		if n, err := unix.Read(peer, drain); err != nil || n != acks {
			t.Fatalf("read %d bytes of acknowledgements, want %d: %v", n, acks, err)
		}
	}
	round() // warm-up: the id list and the alias's topic get their arrays
	if got := l.inPub.Topic; !bytes.Equal(got, []byte("bench/aliased")) {
		t.Errorf("aliased PUBLISH has topic %q", got)
	}
	if n := len(l.rx[s.client].qos2); n != 0 {
		t.Errorf("%d QoS 2 ids held after their PUBRELs", n)
	}
	allocs := testing.AllocsPerRun(100, round)
	if s.state != stConnected {
		t.Fatalf("session state %d after the reads", s.state)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per read", allocs)
	}
}

// TestRxConnected: the QoS 2 ids survive a CONNACK with Session Present and are discarded
// without it; aliases never survive.
func TestRxConnected(t *testing.T) {
	l, s, _ := testSession(t, 5)
	l.qos2First(s, 7)
	r := l.rx[s.client]
	r.aliases = [][]byte{[]byte("a")}
	s.spec = &ClientSpec{Version: 5, Keepalive: time.Second}
	l.rxConnected(s, true)
	if len(r.qos2) != 1 || len(r.aliases[0]) != 0 {
		t.Errorf("session present: ids %v, alias 1 %q; want [7] and none", r.qos2, r.aliases[0])
	}
	l.rxConnected(s, false)
	if len(r.qos2) != 0 {
		t.Errorf("session not present: ids %v, want none", r.qos2)
	}
}
