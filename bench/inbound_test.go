package bench

import (
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

func TestInboundLimit(t *testing.T) {
	check := func(payload, want int) {
		t.Helper()
		if got := inboundLimit(payload); got != want {
			t.Errorf("inboundLimit(%d) = %d, want %d", payload, got, want)
		}
	}
	check(16, 1<<20)               // small payloads: the 1 MiB floor
	check(1<<20, 1<<20+64<<10)     // a legal 1 MiB message and its topic fit
	check(3<<20/2, 3<<20/2+64<<10) // 1.5 MiB
	check(2<<20, 2<<20+64<<10)     // 2 MiB
}

// TestLargePayloadDelivered: a P2P run with 2 MiB payloads against Mosquitto delivers every
// message. Before the inbound limit followed the payload, the subscribers dropped every
// one as the broker's protocol_error (a fixed 1 MiB limit) and the run lost 100 %.
func TestLargePayloadDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, v := range []string{"4", "5"} {
		t.Run("v"+v, func(t *testing.T) {
			res := runScenario(t, m.Addr, "quick-p2p-100", map[string]string{
				"publishers.client_count": "2", "subscribers.client_count": "2",
				"publishers.protocol_version": v, "subscribers.protocol_version": v,
				"parameters.publish_rate": "5", "parameters.payload_size": "2MiB",
				"parameters.duration_sec": "1s", "parameters.warmup_sec": "200ms",
			})
			if msg := res.Messages; msg.Published == 0 || msg.Received != msg.Expected || msg.Lost != 0 {
				t.Fatalf("messages %+v, errors %+v", msg, res.Errors)
			}
		})
	}
}
