package sink_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/sink"
)

var versions = []codec.Version{codec.V311, codec.V5}

// TestRelayFilters sends one message per topic and checks which subscribers get it, for exact,
// "+", "#" and "$" topics, in both versions and with a publisher of the other version.
func TestRelayFilters(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			srv := startSink(t, sink.Config{})
			subs := map[string]*raw{}
			for _, f := range []string{"a/b", "a/+", "a/#", "#", "+/b", "a/b/c", "$SYS/#", "+/+/+"} {
				c := connect(t, srv, v, "sub-"+f)
				if rc := c.subscribe(0, f); rc[0] != 0 {
					t.Fatalf("SUBACK %v for %q", rc, f)
				}
				subs[f] = c
			}
			pubV := codec.V5
			if v == codec.V5 {
				pubV = codec.V311
			}
			pub := connect(t, srv, pubV, "pub")
			cases := []struct {
				topic string
				want  []string
			}{
				{"a/b", []string{"a/b", "a/+", "a/#", "#", "+/b"}},
				{"a", []string{"a/#", "#"}}, // [MQTT-4.7.1-2] "a/#" matches "a"
				{"a/c", []string{"a/+", "a/#", "#"}},
				{"a/b/c", []string{"a/#", "#", "a/b/c", "+/+/+"}},
				{"x/b", []string{"#", "+/b"}},
				{"$SYS/x", []string{"$SYS/#"}}, // [MQTT-4.7.2-1] no wildcard match at the first level
				{"a//c", []string{"a/#", "#", "+/+/+"}},
			}
			for _, tc := range cases {
				pub.publish(tc.topic, 0, "m-"+tc.topic)
				pub.ping()
				for _, f := range tc.want {
					subs[f].expectPublish(tc.topic, 0, "m-"+tc.topic)
				}
			}
			for f, c := range subs {
				c.ping() // nothing else arrived before the PINGRESP
				_ = f
			}
			st := srv.Stats()
			if st.PublishIn[0] != uint64(len(cases)) {
				t.Errorf("publish_in %v, want %d at QoS 0", st.PublishIn, len(cases))
			}
		})
	}
}

// TestRelayShared checks that a shared group gets one copy per message, round robin over its
// members, beside a plain subscriber and a second group.
func TestRelayShared(t *testing.T) {
	srv := startSink(t, sink.Config{})
	var g1, g2 []*raw
	for i := range 3 {
		c := connect(t, srv, versions[i%2], fmt.Sprintf("g1-%d", i))
		c.subscribe(0, "$share/g1/s/#")
		g1 = append(g1, c)
	}
	for i := range 2 {
		c := connect(t, srv, codec.V5, fmt.Sprintf("g2-%d", i))
		c.subscribe(0, "$share/g2/s/+")
		g2 = append(g2, c)
	}
	plain := connect(t, srv, codec.V311, "plain")
	plain.subscribe(0, "s/x")
	bad := connect(t, srv, codec.V5, "bad")
	if rc := bad.subscribe(0, "$share//s/x"); rc[0] != codec.ReasonTopicFilterInvalid {
		t.Errorf("SUBACK %v for an empty share name, want 0x8F", rc)
	}
	pub := connect(t, srv, codec.V5, "pub")
	const n = 12
	for i := range n {
		pub.publish("s/x", 0, fmt.Sprint(i))
	}
	pub.ping()
	for i := range n {
		plain.expectPublish("s/x", 0, fmt.Sprint(i))
	}
	for gi, g := range [][]*raw{g1, g2} {
		for m, c := range g {
			for i := m; i < n; i += len(g) { // round robin: member m gets every len(g)-th
				c.expectPublish("s/x", 0, fmt.Sprint(i))
			}
			c.ping()
			_ = gi
		}
	}
	// A member that leaves is no longer chosen.
	g1[0].send(codec.AppendUnsubscribe(nil, &codec.Unsubscribe{ID: 9, Filters: [][]byte{[]byte("$share/g1/s/#")}}, g1[0].v))
	if h, _ := g1[0].next(); h.Type != codec.TypeUnsuback {
		t.Fatalf("got %v, want UNSUBACK", h.Type)
	}
	for i := range 4 {
		pub.publish("s/y", 0, fmt.Sprint(i))
	}
	pub.ping()
	got := 0
	for _, c := range g1[1:] {
		for range 2 {
			h, _ := c.next()
			if h.Type == codec.TypePublish {
				got++
			}
		}
	}
	g1[0].expectNothing(100 * time.Millisecond)
	if got != 4 {
		t.Errorf("remaining members got %d of 4", got)
	}
}

// TestRelayQoS checks delivered QoS = min(published, granted), the acknowledgement flows both
// ways and the in-flight count.
func TestRelayQoS(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			srv := startSink(t, sink.Config{})
			subs := make([]*raw, 3)
			for q := range subs {
				subs[q] = connect(t, srv, v, fmt.Sprintf("sub%d", q))
				if rc := subs[q].subscribe(codec.QoS(q), "q/#"); rc[0] != codec.ReasonCode(q) {
					t.Fatalf("granted %v, want %d", rc, q)
				}
			}
			pub := connect(t, srv, v, "pub")
			for pq := range 3 {
				pub.publishAcked("q/x", codec.QoS(pq), fmt.Sprint("p", pq))
				for sq, c := range subs {
					c.receiveAcked("q/x", codec.QoS(min(pq, sq)), fmt.Sprint("p", pq))
				}
			}
			for _, c := range subs {
				c.ping()
			}
			st := srv.Stats()
			if st.PublishIn != [3]uint64{1, 1, 1} || st.Relayed != [3]uint64{5, 3, 1} {
				t.Errorf("publish_in %v relayed %v, want [1 1 1] and [5 3 1]", st.PublishIn, st.Relayed)
			}
			if st.Acked != 4 || st.Unacked != 0 {
				t.Errorf("acked %d unacked %d, want 4 and 0", st.Acked, st.Unacked)
			}
			// Unacknowledged copies are counted, not resent.
			pub.publish("q/x", 1, "again")
			pub.expectAck(codec.TypePuback, pub.id)
			subs[1].expectPublish("q/x", 1, "again")
			subs[2].expectPublish("q/x", 1, "again")
			subs[1].ping()
			if st := srv.Stats(); st.Unacked != 2 {
				t.Errorf("unacked %d, want 2", st.Unacked)
			}
		})
	}
}

// TestFlushDelayBound: with a FlushDelay, a copy waits at most that long and a sparse one not
// at all: the first message after a quiet spell is written at once, one that follows a
// flush closely waits for the rest of the delay after it.
func TestFlushDelayBound(t *testing.T) {
	tm := tier.Timing(t)
	const delay = 300 * time.Millisecond
	srv := startSink(t, sink.Config{FlushDelay: delay})
	sub := connect(t, srv, codec.V311, "sub")
	sub.subscribe(0, "f/#")
	pub := connect(t, srv, codec.V311, "pub")
	time.Sleep(delay) // quiet: the next copy goes out with the round that brought it

	start := time.Now()
	pub.publish("f/1", 0, "first")
	sub.expectPublish("f/1", 0, "first")
	if d := time.Since(start); d > delay/2 {
		tm.Errorf("first copy after a quiet spell took %v, want well under the %v delay", d, delay)
	}
	pub.publish("f/2", 0, "second") // right after that flush: waits for the delay to pass
	sub.expectPublish("f/2", 0, "second")
	if d := time.Since(start); d < delay*9/10 || d > delay*3 {
		tm.Errorf("second copy %v after the first flush, want about the %v delay", d, delay)
	}
}
