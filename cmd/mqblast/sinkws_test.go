package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/sink"
)

// TestWSSinkClient: mqblast's own client over ws:// and wss:// through the WebSocket sink,
// at QoS 0, 1 and 2: every message published is received, none lost, and the sink saw each
// one in and relayed it once, over one upgrade (and, over wss, one handshake) per client.
// Then `run --sink --sink-ws` (and with --sink-tls) starts such a sink and dials it.
func TestWSSinkClient(t *testing.T) {
	certs := testbroker.NewCerts(t)
	tc, err := sink.LoadTLS(certs.ServerCert, certs.ServerKey, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"ws", "wss"} {
		for q := range 3 {
			t.Run(fmt.Sprintf("%s/qos%d", scheme, q), func(t *testing.T) {
				cfg := sink.Config{WS: true}
				if scheme == "wss" {
					cfg.TLS = tc
				}
				srv, err := sink.Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close() //nolint:errcheck
				args := []string{"run", "quick-p2p-100", "--broker", scheme + "://" + srv.Addr(), "--no-check", "--format", "json",
					"--set", fmt.Sprintf("publishers.qos=%d", q), "--set", fmt.Sprintf("subscribers.qos=%d", q),
					"--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0"}
				if scheme == "wss" {
					args = append(args, "--cacert", certs.CA)
				}
				r := runBin(t, args...)
				res := decodeResult(t, r)
				ms := res.Messages
				st := srv.Stats()
				t.Logf("published %d, received %d; sink: publish in %v, relayed %v, acked %d, ws %+v, tls handshakes %d",
					ms.Published, ms.Received, st.PublishIn, st.Relayed, st.Acked, st.WS, st.TLS.Handshakes)
				if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || ms.Expected != ms.Published {
					t.Errorf("published %d, received %d, expected %d, lost %d", ms.Published, ms.Received, ms.Expected, ms.Lost)
				}
				if st.PublishIn[q] != uint64(ms.Published) || st.Relayed[q] != uint64(ms.Received) || st.Dropped.Total() != 0 {
					t.Errorf("sink: publish in %v, relayed %v, dropped %+v; the client published %d, received %d", st.PublishIn, st.Relayed, st.Dropped, ms.Published, ms.Received)
				}
				if q > 0 && (st.Acked != uint64(ms.Received) || st.Unacked != 0) {
					t.Errorf("sink: acked %d, unacked %d; want %d acked", st.Acked, st.Unacked, ms.Received)
				}
				wantHS := uint64(0)
				if scheme == "wss" {
					wantHS = 200
				}
				if st.WS.Upgrades != 200 || st.WS.Refused != 0 || st.WS.ProtocolErrors != 0 || st.Connected != 200 || st.TLS.Handshakes != wantHS {
					t.Errorf("sink: ws %+v, tls %+v, connected %d: want 200 upgrades, %d handshakes, 200 connected", st.WS, st.TLS, st.Connected, wantHS)
				}
			})
		}
	}
	for _, flags := range [][]string{{"--sink-ws"}, {"--sink-ws", "--sink-tls"}} {
		t.Run("run --sink "+strings.Join(flags, " "), func(t *testing.T) {
			args := append([]string{"run", "quick-p2p-100", "--sink"}, flags...)
			r := runBin(t, append(args, "--no-check", "--format", "json", "--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0")...)
			res := decodeResult(t, r)
			ms := res.Messages
			want := "ws://"
			if len(flags) == 2 {
				want = "wss://"
			}
			if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || len(res.Broker) != 1 || !strings.HasPrefix(res.Broker[0], want) || res.BrokerProcess == nil {
				t.Errorf("published %d, received %d, lost %d, brokers %v; stderr %s", ms.Published, ms.Received, ms.Lost, res.Broker, r.stderr)
			}
		})
	}
}
