package floor

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/scenario"
)

// TestRunMosquitto runs the floor against a real Mosquitto: every message the publishers
// write is delivered (3.1.1 and 5.0 with its topic alias; QoS 0, 1 and 2, whose flows only
// go on if the floor's pre-encoded answers are right: Mosquitto stops delivering to a
// client that leaves its QoS 1/2 messages unacknowledged and drops one that sends a
// malformed packet), and the window's figures are there.
func TestRunMosquitto(t *testing.T) {
	tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"max_inflight_messages 10"}})
	for _, tc := range []struct{ version, qos int }{{3, 0}, {3, 1}, {3, 2}, {5, 1}} {
		t.Run(fmt.Sprintf("v%d/qos%d", tc.version, tc.qos), func(t *testing.T) {
			t.Parallel()
			s, err := scenario.Resolve("quick-p2p-100")
			if err != nil {
				t.Fatal(err)
			}
			tag := fmt.Sprintf("fl-v%d-q%d", tc.version, tc.qos) // parallel subtests: own ids and topics
			for k, v := range map[string]string{
				"publishers.id_prefix": tag + "-pub-", "subscribers.id_prefix": tag + "-sub-",
				"publishers.topics": tag + "/$clientindex", "subscribers.topics": tag + "/$clientindex",
				"publishers.client_count": "2", "subscribers.client_count": "2",
				"publishers.qos": fmt.Sprint(tc.qos), "subscribers.qos": fmt.Sprint(tc.qos),
				"publishers.protocol_version": fmt.Sprint(tc.version), "subscribers.protocol_version": fmt.Sprint(tc.version),
				"parameters.publish_rate": "200", "parameters.payload_size": "64",
				"parameters.duration_sec": "1.5s", "parameters.warmup_sec": "0.5s",
			} {
				if err := s.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			plan, err := scenario.NewPlan(s)
			if err != nil {
				t.Fatal(err)
			}
			run, err := bench.NewRunner(plan, []string{m.Addr}, 0)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(context.Background(), Config{Engine: run.Engine, Warmup: run.Warmup,
				Duration: run.Duration, Drain: 3 * time.Second}) // QoS 2 through a 10-message window: 1 s left 2 of 600 in flight once in CI
			if err != nil {
				t.Fatal(err)
			}
			// 2 publishers at 200/s for 1.5 s: 600 messages, none due after the window.
			if res.Published != 600 || res.Received != res.Published || res.LostConns != 0 {
				t.Fatalf("published %d (want 600), received %d (want all), lost connections %d (%s)",
					res.Published, res.Received, res.LostConns, res.LostExample)
			}
			// About 400 read in the 1 s window; a loop woken late on a loaded host reads some
			// of them after it.
			if res.WindowS != 1 || res.CPUWindowS <= 0 || res.CPUPerReceivedUS <= 0 {
				t.Fatalf("window: %+v (want 1 s, with its CPU)", res)
			}
			if res.ReceivedWindow < 300 || res.ReceivedWindow > 500 {
				tier.Assert(t).Fatalf("window: %+v (want about 400 received in 1 s, with its CPU)", res)
			}
		})
	}
}

// TestFrames checks the floor's framing against a stream of packets cut at every offset:
// every PUBLISH counted once, each answer owed written once, in order.
func TestFrames(t *testing.T) {
	var stream, want []byte
	pubs := 0
	big := bytes.Repeat([]byte{'x'}, 360) // a two-byte remaining length
	for i := 1; i <= 6; i++ {
		p := codec.Publish{QoS: codec.QoS(i % 3), Topic: []byte("t/1"), Payload: big[:i*60], ID: uint16(i * 0x101)}
		if p.QoS == 0 {
			p.ID = 0
		}
		stream = codec.AppendPublish(stream, &p, codec.V311)
		pubs++
		switch p.QoS {
		case 1:
			want = codec.AppendPuback(want, &codec.Ack{ID: p.ID}, codec.V311)
		case 2:
			want = codec.AppendPubrec(want, &codec.Ack{ID: p.ID}, codec.V311)
		}
	}
	stream = codec.AppendPubrec(stream, &codec.Ack{ID: 7}, codec.V311)
	want = codec.AppendPubrel(want, &codec.Ack{ID: 7}, codec.V311)
	stream = codec.AppendPubrel(stream, &codec.Ack{ID: 8}, codec.V311)
	want = codec.AppendPubcomp(want, &codec.Ack{ID: 8}, codec.V311)
	stream = codec.AppendPuback(stream, &codec.Ack{ID: 9}, codec.V311) // discarded
	stream = codec.AppendPingresp(stream)
	for cut := 0; cut <= len(stream); cut++ {
		l := &loop{}
		var in []byte
		var n int64
		for _, part := range [][]byte{stream[:cut], stream[cut:]} {
			in = append(in, part...)
			used, p, bad := l.frames(in)
			if bad {
				t.Fatalf("cut %d: malformed", cut)
			}
			n += p
			in = in[used:]
		}
		if len(in) != 0 || n != int64(pubs) || !bytes.Equal(l.reply, want) {
			t.Fatalf("cut %d: %d bytes left, %d PUBLISH (want %d), replies % x (want % x)", cut, len(in), n, pubs, l.reply, want)
		}
	}
	if _, _, bad := (&loop{}).frames([]byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}); !bad {
		t.Fatal("a fifth remaining-length byte is not reported malformed")
	}
}
