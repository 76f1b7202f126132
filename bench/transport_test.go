package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// runTLS runs s against broker (a URL) with the TLS configuration tc.
func runTLS(t *testing.T, broker string, s *scenario.Scenario, tc reactor.TLSOptions) *result.Result {
	t.Helper()
	return runTLSOn(t, broker, s, tc, "")
}

// runTLSOn is runTLS on the TLS record layer given (reactor.Config.TLSRecordLayer).
func runTLSOn(t *testing.T, broker string, s *scenario.Scenario, tc reactor.TLSOptions, layer string) *result.Result {
	t.Helper()
	r := testRunner(t, broker, s)
	r.Engine.TLSRecordLayer = layer
	var err error
	if r.Engine.TLS, err = reactor.TLSConfig(tc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audited(t, res)
	return res
}

// TestTransportRuns: a Connections run and P2P at QoS 0, 1 and 2 over mqtts://, ws:// and
// wss:// against Mosquitto with generated certificates. Every connection is established,
// every message accounted for (and at QoS 1 and 2 every one received once and
// acknowledged), and the result reports the TLS handshakes (time, CPU) and WebSocket
// upgrades apart from the connect latency.
func TestTransportRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("12 runs against Mosquitto, ~20 s")
	}
	certs := testbroker.NewCerts(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{TLS: true, WebSocket: true, WSS: true, Certs: certs})
	urls := map[string]string{"mqtts": "mqtts://" + m.TLSAddr, "ws": "ws://" + m.WSAddr + "/mqtt", "wss": "wss://" + m.WSSAddr + "/mqtt"}
	tc := reactor.TLSOptions{CAFile: certs.CA}
	for _, tr := range []string{"mqtts", "ws", "wss"} {
		t.Run(tr+"/connections", func(t *testing.T) {
			res := runTLS(t, urls[tr], builtin(t, "quick-conn-100", map[string]string{"parameters.duration_sec": "500ms"}), tc)
			c := res.Connections
			if c.Established != 100 || c.Failed != 0 || c.Dropped != 0 {
				t.Fatalf("connections %+v", c)
			}
			secure := tr != "ws"
			if secure != (c.TLSHandshakeUS != nil && c.TLSHandshakes == 100 && c.TLSHandshakeCPUUSPerOp > 0) {
				t.Errorf("TLS handshakes %d, %+v, %.0f µs CPU each", c.TLSHandshakes, c.TLSHandshakeUS, c.TLSHandshakeCPUUSPerOp)
			}
			if (tr != "mqtts") != (c.WSUpgradeUS != nil && c.WSUpgradeUS.Count == 100) {
				t.Errorf("WebSocket upgrades %+v", c.WSUpgradeUS)
			}
			if layers := res.Transport.RecordLayer; secure && (layers[reactor.RecordLayerLoop] != 100 || len(layers) != 1) || !secure && len(layers) != 0 {
				t.Errorf("record layers %v, want 100 loop over TLS (TLS 1.3), none without", layers)
			}
			if secure && c.TLSHandshakeUS.P50 > c.ConnectLatencyUS.P50 {
				t.Errorf("TLS handshake p50 %v µs over the connect latency's %v µs, which includes it", c.TLSHandshakeUS.P50, c.ConnectLatencyUS.P50)
			}
		})
		for _, qos := range []int{0, 1, 2} {
			t.Run(fmt.Sprintf("%s/p2p/qos%d", tr, qos), func(t *testing.T) {
				q := fmt.Sprint(qos)
				res := runTLS(t, urls[tr], builtin(t, "quick-p2p-100", map[string]string{
					"publishers.qos": q, "subscribers.qos": q, "publishers.client_count": "20", "subscribers.client_count": "20",
					"parameters.duration_sec": "1s", "parameters.warmup_sec": "300ms"}), tc)
				msg := res.Messages
				checkAccounts(t, msg)
				if msg.Published == 0 || msg.Subscribed != 20 || msg.Received-msg.Duplicated+msg.Lost != msg.Expected {
					t.Errorf("messages %+v", msg)
				}
				if qos > 0 && (msg.Received != msg.Expected || msg.Lost != 0 || msg.Duplicated != 0 || msg.Acked != msg.Published) {
					t.Errorf("QoS %d: %+v", qos, msg)
				}
				if tr != "ws" && res.Transport.RecordLayer[reactor.RecordLayerLoop] != res.Connections.TLSHandshakes {
					t.Errorf("record layers %v of %d TLS connections, want all loop", res.Transport.RecordLayer, res.Connections.TLSHandshakes)
				}
			})
		}
	}
	// The old path, forced: every message accounted for the same way.
	for _, tr := range []string{"mqtts", "wss"} {
		t.Run(tr+"/tls.Conn/p2p/qos1", func(t *testing.T) {
			res := runTLSOn(t, urls[tr], builtin(t, "quick-p2p-100", map[string]string{
				"publishers.qos": "1", "subscribers.qos": "1", "publishers.client_count": "20", "subscribers.client_count": "20",
				"parameters.duration_sec": "1s", "parameters.warmup_sec": "300ms"}), tc, reactor.RecordLayerTLSConn)
			msg := res.Messages
			checkAccounts(t, msg)
			if msg.Published == 0 || msg.Received != msg.Expected || msg.Lost != 0 || msg.Duplicated != 0 || msg.Acked != msg.Published {
				t.Errorf("messages %+v", msg)
			}
			if l := res.Transport.RecordLayer; l[reactor.RecordLayerTLSConn] != 40 || len(l) != 1 {
				t.Errorf("record layers %v, want 40 tls.Conn", l)
			}
		})
	}
}
