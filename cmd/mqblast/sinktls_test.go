package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/sink"
)

// TestTLSSinkClient: mqblast's own client over mqtts through the TLS sink, at QoS 0, 1 and
// 2: every message published is received, none lost, and the sink saw each one in and
// relayed it once, over one completed handshake per client. Then `run --sink --sink-tls`
// starts the sink with a certificate made for the run and trusts it: the same accounts.
func TestTLSSinkClient(t *testing.T) {
	certs := testbroker.NewCerts(t)
	tc, err := sink.LoadTLS(certs.ServerCert, certs.ServerKey, "")
	if err != nil {
		t.Fatal(err)
	}
	for q := range 3 {
		t.Run(fmt.Sprintf("qos%d", q), func(t *testing.T) {
			srv, err := sink.Start(context.Background(), sink.Config{TLS: tc})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close() //nolint:errcheck
			r := runBin(t, "run", "quick-p2p-100", "--broker", "mqtts://"+srv.Addr(), "--cacert", certs.CA, "--no-check", "--format", "json",
				"--set", fmt.Sprintf("publishers.qos=%d", q), "--set", fmt.Sprintf("subscribers.qos=%d", q),
				"--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0")
			res := decodeResult(t, r)
			ms := res.Messages
			st := srv.Stats()
			t.Logf("published %d, received %d; sink: publish in %v, relayed %v, acked %d, tls %+v", ms.Published, ms.Received, st.PublishIn, st.Relayed, st.Acked, st.TLS)
			if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || ms.Expected != ms.Published {
				t.Errorf("published %d, received %d, expected %d, lost %d", ms.Published, ms.Received, ms.Expected, ms.Lost)
			}
			if st.PublishIn[q] != uint64(ms.Published) || st.Relayed[q] != uint64(ms.Received) || st.Dropped.Total() != 0 {
				t.Errorf("sink: publish in %v, relayed %v, dropped %+v; the client published %d, received %d", st.PublishIn, st.Relayed, st.Dropped, ms.Published, ms.Received)
			}
			if q > 0 && (st.Acked != uint64(ms.Received) || st.Unacked != 0) {
				t.Errorf("sink: acked %d, unacked %d; want %d acked", st.Acked, st.Unacked, ms.Received)
			}
			if st.TLS.Handshakes != 200 || st.TLS.HandshakeFailures != 0 || st.Connected != 200 {
				t.Errorf("sink: tls %+v, connected %d: want 200 handshakes, 200 connected", st.TLS, st.Connected)
			}
		})
	}
	t.Run("run --sink --sink-tls", func(t *testing.T) {
		r := runBin(t, "run", "quick-p2p-100", "--sink", "--sink-tls", "--no-check", "--format", "json",
			"--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0")
		res := decodeResult(t, r)
		ms := res.Messages
		if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || len(res.Broker) != 1 || !strings.HasPrefix(res.Broker[0], "mqtts://") || res.BrokerProcess == nil {
			t.Errorf("published %d, received %d, lost %d, brokers %v; stderr %s", ms.Published, ms.Received, ms.Lost, res.Broker, r.stderr)
		}
	})
}
