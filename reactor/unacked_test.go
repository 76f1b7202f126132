package reactor_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// TestEngineUnacknowledgedByStep: QoS 1/2 publishers with clean sessions whose broker
// never ends their exchanges: it answers no PUBLISH (QoS 1: no PUBACK; QoS 2: no PUBREC),
// or answers PUBREC and never the PUBREL (QoS 2: no PUBCOMP), and closes the connection
// after 5 such messages, refusing every later one. Every message written at QoS 1 or 2 is
// reported unacknowledged by the step that did not come, when the session ended: written
// and unanswered in InFlight at the publisher's QoS, PUBREC'd in Released; none acked.
func TestEngineUnacknowledgedByStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		qos    byte
		pubrec bool
	}{{"qos1-no-puback", 1, false}, {"qos2-no-pubrec", 2, false}, {"qos2-no-pubcomp", 2, true}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			n := 0
			addr := scriptServer(t, func(k int, c net.Conn, _ []byte, h codec.Header, body []byte) bool {
				switch h.Type {
				case codec.TypeConnect:
					code := codec.ReasonCode(0)
					if k > 0 {
						code = codec.Reason311ServerUnavailable
					}
					_, _ = c.Write(codec.AppendConnack(nil, &codec.Connack{Reason: code}, codec.V311))
					return k == 0
				case codec.TypePublish:
					var p codec.Publish
					if codec.DecodePublish(h, body, codec.V311, &p) != nil {
						return false
					}
					if tc.pubrec {
						_, _ = c.Write(codec.AppendPubrec(nil, &codec.Ack{ID: p.ID}, codec.V311))
						return true
					}
					mu.Lock()
					defer mu.Unlock()
					n++
					return n < 5
				case codec.TypePubrel: // not answered: no PUBCOMP
					mu.Lock()
					defer mu.Unlock()
					n++
					return n < 5
				}
				return true
			})
			obs := newAcct()
			e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 1, Observer: obs, Reconnect: true,
				ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
				Client: func(int) reactor.ClientSpec {
					return reactor.ClientSpec{ID: "p", Version: 4, CleanStart: true, Publish: &reactor.PublishSpec{
						Topic: []byte("t"), QoS: tc.qos, Rate: 50, PayloadSize: 16, Receivers: 1, MaxInflight: 5}}
				}})
			publishFor(t, e, 500*time.Millisecond)
			obs.mu.Lock()
			defer obs.mu.Unlock()
			unacked := obs.dropped + obs.droppedReleased + len(obs.inFlight) + obs.endReleased
			if obs.qos12 != 5 || obs.published != 5 || obs.acked != 0 || unacked != obs.qos12 {
				t.Errorf("published %d (QoS 1/2 %d), acked %d, unacknowledged %d (in flight dropped %d + released %d, at the end %d + released %d)",
					obs.published, obs.qos12, obs.acked, unacked, obs.dropped, obs.droppedReleased, len(obs.inFlight), obs.endReleased)
			}
			if tc.pubrec && obs.droppedReleased != 5 || !tc.pubrec && obs.dropped != 5 {
				t.Errorf("when the session ended: %d without their first acknowledgement, %d PUBREC'd without PUBCOMP; want all 5 as %s",
					obs.dropped, obs.droppedReleased, tc.name)
			}
		})
	}
}
