package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/sink"
)

// TestTLSSinkClient: mqblast's own client over mqtts through the TLS sink, at QoS 0, 1 and
// 2: every message published is received, none lost, and the sink saw each one in and
// relayed it once, over one completed handshake per client, each client on the loop's
// record layer. Then `run --sink --sink-tls`
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
			res, st := sinkQoSRun(t, srv, "mqtts://"+srv.Addr(), q, "--cacert", certs.CA)
			if st.TLS.Handshakes != 200 || st.TLS.HandshakeFailures != 0 || st.Connected != 200 {
				t.Errorf("sink: tls %+v, connected %d: want 200 handshakes, 200 connected", st.TLS, st.Connected)
			}
			if l := res.Transport.RecordLayer; l["loop"] != 200 || len(l) != 1 { // both sides on a tlsrec record layer
				t.Errorf("record layers %v, want 200 loop", l)
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

// TestTLSSinkVerb: `mqblast sink --procs 2 --connections 40` over TLS with --tls-client-ca:
// both processes take their 20 clients with certificates, a client without one is refused
// by whichever process takes it, and the summary the parent prints sums the handshakes. Bad
// TLS flags exit 2 before it listens, naming the flag and the fix; the key never shows.
func TestTLSSinkVerb(t *testing.T) {
	t.Parallel()
	certs := testbroker.NewCerts(t)
	sp := startSinkProc(t, "sink", "--procs", "2", "--connections", "40", "--tls-cert", certs.ServerCert,
		"--tls-key", certs.ServerKey, "--tls-client-ca", certs.CA, "--stats-json", "--interval", "100ms")
	addr := sp.addr
	ca, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	// A 3.1.1 CONNECT of client "c", and the CONNACK that accepts it.
	connect := []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, 1, 'c'}
	var conns []*tls.Conn
	for i := range 41 {
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if i < 40 {
			cfg.Certificates = []tls.Certificate{pair}
		}
		tc, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, tc)
		_, err = tc.Write(connect)
		var ack [4]byte
		if err == nil {
			_ = tc.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(tc, ack[:])
		}
		switch {
		case i < 40 && (err != nil || ack != [4]byte{0x20, 2, 0, 0}):
			t.Fatalf("client %d: CONNACK %v, %v", i, ack, err)
		case i == 40 && (err == nil || !strings.Contains(err.Error(), "certificate required")):
			t.Fatalf("a client without a certificate: %v, want refused (certificate required)", err)
		}
	}
	last, summary := sp.stop()
	for _, tc := range conns {
		_ = tc.Close()
	}
	if last.Connections != 40 || last.TLS.Handshakes != 40 || last.TLS.HandshakeFailures != 1 || last.Procs != 2 ||
		len(last.ProcConnections) != 2 || last.ProcConnections[0] != 20 {
		t.Errorf("stats at the most connections: %d open in %v, tls %+v, %d processes", last.Connections, last.ProcConnections, last.TLS, last.Procs)
	}
	if !strings.Contains(summary, "tls          40 handshakes, 1 failed") || !strings.Contains(summary, "over TLS 1.3 (mqtts, client certificates required)") {
		t.Errorf("summary:\n%s", summary)
	}

	key, err := os.ReadFile(certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sink", "--tls-cert", certs.ServerCert}, "--tls-cert " + certs.ServerCert + " needs --tls-key"},
		{[]string{"sink", "--tls-cert", certs.ServerCert, "--tls-key", certs.ClientKey}, "--tls-key " + certs.ClientKey + " does not match the certificate"},
		{[]string{"sink", "--tls-cert", certs.ServerKey, "--tls-key", certs.ServerKey}, "no PEM certificate"},
		{[]string{"run", "quick-conn-100", "--sink-tls", "--no-check"}, "--sink-tls: the sink that --sink starts speaks mqtts with it; add --sink"},
	} {
		stderr, code := runRefused(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "ready ") {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
		for _, l := range strings.Split(string(key), "\n") {
			if len(l) > 16 && !strings.HasPrefix(l, "-----") && strings.Contains(stderr, l) {
				t.Errorf("%v: the key shows in stderr", tc.args)
			}
		}
	}
}
