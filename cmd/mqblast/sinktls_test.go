package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
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
	bin := mqblastBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "sink", "--procs", "2", "--connections", "40", "--tls-cert", certs.ServerCert,
		"--tls-key", certs.ServerKey, "--tls-client-ca", certs.CA, "--stats-json", "--interval", "100ms")
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGINT) }
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		addr, _ = strings.CutPrefix(lines.Text(), "ready ")
	}
	if addr == "" {
		t.Fatal("the sink did not say ready")
	}
	var rest bytes.Buffer
	done := make(chan struct{})
	go func() {
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
		close(done)
	}()
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
	time.Sleep(300 * time.Millisecond) // a stats line with every connection counted
	cancel()
	<-done
	_ = c.Wait()
	for _, tc := range conns {
		_ = tc.Close()
	}
	// The line with the most connections; the refused handshake may be counted in a later
	// one (the stats line can come between the 40th CONNACK and the 41st's refusal).
	var last sink.Line
	var failures uint64
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var line sink.Line
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		if line.Connections > last.Connections {
			last = line
		}
		failures = max(failures, line.TLS.HandshakeFailures)
	}
	if last.Connections != 40 || last.TLS.Handshakes != 40 || failures != 1 || last.Procs != 2 ||
		len(last.ProcConnections) != 2 || last.ProcConnections[0] != 20 {
		t.Errorf("stats at the most connections: %d open in %v, tls %+v, %d processes; handshake failures at most %d", last.Connections, last.ProcConnections, last.TLS, last.Procs, failures)
	}
	if !strings.Contains(rest.String(), "tls          40 handshakes, 1 failed") || !strings.Contains(rest.String(), "over TLS 1.3 (mqtts, client certificates required)") {
		t.Errorf("summary:\n%s", rest.String())
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
