package sink_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/testcert"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/sink"
)

// startTLSSink starts a TLS sink with the test's certificates (and clientCA, when not "").
func startTLSSink(t testing.TB, certs *testbroker.Certs, clientCA string, cfg sink.Config) *sink.Server {
	t.Helper()
	tc, err := sink.LoadTLS(certs.ServerCert, certs.ServerKey, clientCA)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tc
	return startSink(t, cfg)
}

// clientTLS is a client configuration that trusts certs' CA, with the client certificate
// cert/key when not "".
func clientTLS(t testing.TB, certs *testbroker.Certs, cert, key string) *tls.Config {
	t.Helper()
	caPEM, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c
}

// dialTLS is dial over TLS; the handshake is done when it returns.
func dialTLS(t testing.TB, srv *sink.Server, v codec.Version, tc *tls.Config) (*raw, error) {
	t.Helper()
	nc, err := tls.Dial("tcp", srv.Addr(), tc)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: nc, v: v}, nil
}

// connectTLS dials over TLS and completes CONNECT/CONNACK.
func connectTLS(t testing.TB, srv *sink.Server, v codec.Version, id string, tc *tls.Config) *raw {
	t.Helper()
	c, err := dialTLS(t, srv, v, tc)
	if err != nil {
		t.Fatal(err)
	}
	c.connect(id)
	return c
}

// await waits up to 5 s for srv's counters to satisfy ok (the loop counts a connection's end
// after the client may have seen it), and returns them.
func await(srv *sink.Server, ok func(st sink.Stats) bool) sink.Stats {
	st := srv.Stats()
	for deadline := time.Now().Add(5 * time.Second); !ok(st) && time.Now().Before(deadline); st = srv.Stats() {
		time.Sleep(5 * time.Millisecond)
	}
	return st
}

// TestTLSRelay relays over TLS at QoS 0, 1 and 2 in both versions, with payloads from
// empty to many records long (up to 900 KB: the loop opens records that gnet's reads cut
// anywhere and packets that span records), each byte-exact, every acknowledgement counted.
func TestTLSRelay(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{})
	tc := clientTLS(t, certs, "", "")
	sizes := []int{0, 1, 100, 16 << 10, 16<<10 + 1, 100 << 10, 900 << 10}
	var n uint64
	for _, v := range versions {
		sub := connectTLS(t, srv, v, "sub-"+v.String(), tc)
		topic := "t/" + v.String()
		sub.subscribe(2, topic+"/#")
		pub := connectTLS(t, srv, v, "pub-"+v.String(), tc)
		for q := range codec.QoS(3) {
			for _, size := range sizes {
				payload := make([]byte, size)
				_, _ = rand.Read(payload)
				pub.publishAcked(topic+"/x", q, string(payload))
				sub.receiveAcked(topic+"/x", q, string(payload))
				n++
			}
		}
		sub.ping()
	}
	st := srv.Stats()
	if st.PublishInTotal() != n || st.RelayedTotal() != n || st.Acked != 2*n/3 || st.Unacked != 0 || st.Dropped.Total() != 0 {
		t.Errorf("publish in %v, relayed %v, acked %d, unacked %d, dropped %+v; want %d each, %d acked", st.PublishIn, st.Relayed, st.Acked, st.Unacked, st.Dropped, n/3, 2*n/3)
	}
	if st.HeldBytes != 0 {
		t.Errorf("held %d bytes after every packet was handled, want 0", st.HeldBytes)
	}
	if st.TLS.Handshakes != 4 || st.TLS.HandshakeFailures != 0 || st.Connected != 4 {
		t.Errorf("tls %+v, connected %d: want 4 handshakes, none failed", st.TLS, st.Connected)
	}
}

// TestTLSClientCA: with --tls-client-ca, a client without a certificate is refused, one
// with a certificate that CA signed is served, one signed by another CA is refused; each
// refusal is a handshake failure and a refused connection.
func TestTLSClientCA(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, certs.CA, sink.Config{})
	good := connectTLS(t, srv, codec.V5, "good", clientTLS(t, certs, certs.ClientCert, certs.ClientKey))
	good.ping()
	wrong := clientTLS(t, certs, "", "")
	otherCert, otherKey := otherPair(t)
	pair, err := tls.LoadX509KeyPair(otherCert, otherKey)
	if err != nil {
		t.Fatal(err)
	}
	// Sent although the sink names its CA in the request (a Go client would send none).
	wrong.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	for _, tc := range []struct {
		name      string
		cfg       *tls.Config
		wantAlert string
	}{
		{"no certificate", clientTLS(t, certs, "", ""), "certificate required"},
		{"another CA's", wrong, "unknown certificate authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// TLS 1.3: the client's handshake ends before the server has checked its
			// certificate; the refusal is the alert that ends its first read.
			c, err := dialTLS(t, srv, codec.V5, tc.cfg)
			if err == nil {
				c.send(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("x"), CleanStart: true}, codec.V5))
				_, _, err = c.read(5 * time.Second)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantAlert) {
				t.Fatalf("got %v, want the alert %q", err, tc.wantAlert)
			}
		})
	}
	st := await(srv, func(st sink.Stats) bool { return st.TLS.HandshakeFailures >= 2 && st.Refused >= 2 })
	if st.TLS.Handshakes != 1 || st.TLS.HandshakeFailures != 2 || st.Connected != 1 || st.Refused != 2 {
		t.Errorf("tls %+v, connected %d, refused %d: want 1 handshake, 2 failures, 1 connected, 2 refused", st.TLS, st.Connected, st.Refused)
	}
}

// otherPair writes a client certificate and key signed by a CA of its own (the wrong one).
func otherPair(t *testing.T) (cert, key string) {
	t.Helper()
	ca, caKey := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "wrong CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true})
	cl, clKey := testcert.New(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "wrong client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	der, err := x509.MarshalPKCS8PrivateKey(clKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "wrong.pem"), filepath.Join(dir, "wrong.key")
	if err := errors.Join(os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cl.Raw}), 0o600),
		os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestTLS12Refused: a TLS 1.2 client is refused with the protocol_version alert (the loop
// runs the 1.3 record layer only), counted as a failed handshake.
func TestTLS12Refused(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{})
	tc := clientTLS(t, certs, "", "")
	tc.MaxVersion = tls.VersionTLS12
	_, err := dialTLS(t, srv, codec.V311, tc)
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("TLS 1.2 client: %v, want the protocol version alert", err)
	}
	if st := await(srv, func(st sink.Stats) bool { return st.TLS.HandshakeFailures >= 1 }); st.TLS.HandshakeFailures != 1 || st.TLS.Handshakes != 0 {
		t.Errorf("tls %+v: want one failed handshake", st.TLS)
	}
}

// TestTLSFlags: each bad --tls-* flag is a clear error before listening, naming the file and
// the fix, and never showing the key's content.
func TestTLSFlags(t *testing.T) {
	certs := testbroker.NewCerts(t)
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "unreadable.pem")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	_, otherKey := otherPair(t)
	keyPEM, err := os.ReadFile(certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cert, key, ca string
		want          []string
	}{
		{certs.ServerCert, "", "", []string{"--tls-cert " + certs.ServerCert + " needs --tls-key"}},
		{"", certs.ServerKey, "", []string{"--tls-key " + certs.ServerKey + " needs --tls-cert"}},
		{"", "", certs.CA, []string{"--tls-client-ca needs --tls-cert and --tls-key"}},
		{missing, certs.ServerKey, "", []string{"--tls-cert " + missing + ": cannot read it", "no such file"}},
		{certs.ServerCert, missing, "", []string{"--tls-key " + missing + ": cannot read it"}},
		{certs.ServerCert, certs.ServerKey, missing, []string{"--tls-client-ca " + missing + ": cannot read it"}},
		{certs.ServerCert, otherKey, "", []string{"--tls-key " + otherKey + " does not match the certificate of --tls-cert", "give the key the certificate was issued for"}},
		{certs.ServerKey, certs.ServerCert, "", []string{"--tls-cert " + certs.ServerKey + ": no PEM certificate"}},
		{certs.ServerCert, certs.ServerKey, certs.ServerKey, []string{"--tls-client-ca " + certs.ServerKey + ": no PEM certificate in it"}},
	} {
		if os.Geteuid() == 0 && tc.cert == unreadable {
			continue
		}
		f := sink.Flags{Listen: "127.0.0.1:0", Procs: "1", Interval: time.Second, ReceiveMaximum: 10, MaxPacketSize: "1MiB",
			MaxOutput: "1MiB", MaxHeld: "64MiB", Turn: "0/0/0", TLSCert: tc.cert, TLSKey: tc.key, TLSClientCA: tc.ca}
		_, err := f.Config()
		if err == nil {
			t.Errorf("cert %q key %q ca %q: no error", tc.cert, tc.key, tc.ca)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q: want %q in it", err, w)
			}
		}
		for _, line := range strings.Split(string(keyPEM), "\n") {
			if len(line) > 16 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
				t.Errorf("error %q shows the key", err)
			}
		}
	}
	if os.Geteuid() != 0 {
		f := sink.Flags{Listen: "127.0.0.1:0", Interval: time.Second, ReceiveMaximum: 10, MaxPacketSize: "1MiB",
			MaxOutput: "1MiB", MaxHeld: "64MiB", Turn: "0/0/0", TLSCert: certs.ServerCert, TLSKey: unreadable}
		if _, err := f.Config(); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("unreadable key: %v", err)
		}
	}
}

// TestTLSMosquittoClients: Mosquitto's own clients (OpenSSL) through the TLS sink at QoS 0,
// 1 and 2: mosquitto_sub receives mosquitto_pub's payloads byte for byte, a 40 KB binary
// payload (three records) among them.
func TestTLSMosquittoClients(t *testing.T) {
	tier.Integration(t)
	pubBin, err1 := exec.LookPath("mosquitto_pub")
	subBin, err2 := exec.LookPath("mosquitto_sub")
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_pub/mosquitto_sub are not installed (apt-get install -y mosquitto-clients)")
		}
		t.Skip("no mosquitto clients (apt-get install -y mosquitto-clients)")
	}
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{})
	host, port, _ := strings.Cut(srv.Addr(), ":")
	dir := t.TempDir()
	for q := range 3 {
		t.Run(fmt.Sprintf("qos%d", q), func(t *testing.T) {
			payloads := [][]byte{[]byte("hello"), make([]byte, 40<<10), {0, 1, 2, 255}}
			_, _ = rand.Read(payloads[1])
			var want []byte
			for _, p := range payloads {
				want = append(want, p...)
			}
			topic := fmt.Sprintf("m/%d", q)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			sub := exec.CommandContext(ctx, subBin, "-h", host, "-p", port, "--cafile", certs.CA, "-q", fmt.Sprint(q),
				"-t", topic, "-N", "-C", fmt.Sprint(len(payloads)), "-i", "msub")
			var out, serr bytes.Buffer
			sub.Stdout, sub.Stderr = &out, &serr
			if err := sub.Start(); err != nil {
				t.Fatal(err)
			}
			before := srv.Stats().Subscriptions
			await(srv, func(st sink.Stats) bool { return st.Subscriptions > before })
			for i, p := range payloads {
				f := filepath.Join(dir, fmt.Sprintf("p%d", i))
				if err := os.WriteFile(f, p, 0o600); err != nil {
					t.Fatal(err)
				}
				pub := exec.CommandContext(ctx, pubBin, "-h", host, "-p", port, "--cafile", certs.CA, "-q", fmt.Sprint(q),
					"-t", topic, "-f", f, "-i", "mpub")
				if b, err := pub.CombinedOutput(); err != nil {
					t.Fatalf("mosquitto_pub: %v: %s", err, b)
				}
			}
			if err := sub.Wait(); err != nil {
				t.Fatalf("mosquitto_sub: %v: %s", err, serr.String())
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("mosquitto_sub got %d bytes, want %d (%d payloads) byte for byte", out.Len(), len(want), len(payloads))
			}
		})
	}
	st := srv.Stats()
	if st.PublishIn != [3]uint64{3, 3, 3} || st.Relayed != [3]uint64{3, 3, 3} || st.TLS.HandshakeFailures != 0 || st.TLS.Handshakes != 12 {
		t.Errorf("publish in %v, relayed %v, tls %+v: want 3 at each QoS, 12 handshakes", st.PublishIn, st.Relayed, st.TLS)
	}
}

// TestTLSRecordErrors: after the handshake, a record that does not authenticate closes that
// connection as bad_record_mac, and a client's close_notify closes its own as close_notify;
// each counted by reason, the other clients served.
func TestTLSRecordErrors(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{})
	tc := clientTLS(t, certs, "", "")
	other := connectTLS(t, srv, codec.V5, "other", tc)
	// A forged record straight on the socket, under the client's (in order) TLS stream.
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close() //nolint:errcheck
	c := tls.Client(nc, tc)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	forged := append([]byte{23, 3, 3, 0, 32}, make([]byte, 32)...)
	if _, err := nc.Write(forged); err != nil {
		t.Fatal(err)
	}
	bad := &raw{t: t, nc: nc}
	if !bad.closed(5 * time.Second) {
		t.Fatal("a forged record: the connection stayed open")
	}
	// close_notify from a connected client.
	quit := connectTLS(t, srv, codec.V311, "quit", tc)
	_ = quit.nc.(*tls.Conn).CloseWrite()
	other.ping()
	if st := await(srv, func(st sink.Stats) bool { return st.TLS.Closed.Total() >= 2 && st.Connections <= 1 }); st.TLS.Closed != (sink.TLSClosed{BadRecordMAC: 1, CloseNotify: 1}) || st.Connections != 1 {
		t.Errorf("closed %+v, %d open: want one bad_record_mac, one close_notify, the other client open", st.TLS.Closed, st.Connections)
	}
}

// TestTLSHandshakeBounds: MaxHandshakes clients that connect and send nothing hold every
// handshake goroutine; the next connection waits in the queue, and when it sends more than a
// handshake may (2 MiB) it is closed there. Once the silent ones leave, each counts as a
// failed handshake, and a client connecting then is served.
func TestTLSHandshakeBounds(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{})
	var silent []net.Conn
	for range sink.MaxHandshakes {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, nc)
	}
	flood, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close() //nolint:errcheck
	await(srv, func(st sink.Stats) bool { return st.TLS.Queued >= 1 })
	go func() { _, _ = flood.Write(make([]byte, 2<<20)) }()
	if !(&raw{t: t, nc: flood}).closed(5 * time.Second) {
		t.Fatal("a queued connection sending 2 MiB stayed open")
	}
	for _, nc := range silent {
		_ = nc.Close()
	}
	connectTLS(t, srv, codec.V5, "after", clientTLS(t, certs, "", "")).ping()
	st := await(srv, func(st sink.Stats) bool { return st.TLS.HandshakeFailures >= sink.MaxHandshakes+1 })
	if st.TLS.Queued < 1 || st.TLS.HandshakeFailures != sink.MaxHandshakes+1 || st.TLS.Handshakes != 1 {
		t.Errorf("tls %+v: want at least 1 queued (the last may wait too), %d failed, 1 completed", st.TLS, sink.MaxHandshakes+1)
	}
}

// TestTLSHeldBudget: over TLS, what a cut packet holds (its plaintext and the cut record)
// counts against MaxHeld as over TCP: of three 5.0 clients each sending 900 KB of a 1 MB
// PUBLISH to a sink with 2 MiB, two are held and the third is told DISCONNECT Quota exceeded
// and closed (held_over); the first then completes its packet, which is relayed whole, and
// its bytes are no longer held.
func TestTLSHeldBudget(t *testing.T) {
	certs := testbroker.NewCerts(t)
	srv := startTLSSink(t, certs, "", sink.Config{MaxPacketSize: 1 << 20, MaxHeld: 2 << 20})
	tc := clientTLS(t, certs, "", "")
	sub := connectTLS(t, srv, codec.V5, "sub", tc)
	sub.subscribe(0, "big")
	payload := make([]byte, 1_000_000-16)
	_, _ = rand.Read(payload)
	pub := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("big"), Payload: payload}, codec.V5)
	const cut = 900_000
	cs := heldCuts(t, srv, pub, cut, 16<<10+256, func(i int) *raw { return connectTLS(t, srv, codec.V5, fmt.Sprint("cut", i), tc) })
	cs[0].send(pub[cut:])
	sub.expectPublish("big", 0, string(payload))
	st := await(srv, func(st sink.Stats) bool { return st.HeldBytes < cut+16<<10+256 })
	if st.HeldOver != 1 || st.HeldBytes < cut || st.HeldBytes > cut+16<<10+256 || st.Relayed[0] != 1 {
		t.Errorf("held_over %d, held %d (want the second client's %d, within a record), relayed %v", st.HeldOver, st.HeldBytes, cut, st.Relayed)
	}
}

// heldCuts has three clients from dial each send the first cut bytes of pub (a 5.0 PUBLISH
// too big for srv's MaxHeld to hold three times over): the first two are held (cut bytes
// each, and at most slack more), the third is told DISCONNECT Quota exceeded and closed. It
// returns the clients.
func heldCuts(t *testing.T, srv *sink.Server, pub []byte, cut, slack int, dial func(i int) *raw) []*raw {
	t.Helper()
	var cs []*raw
	for i := range 3 {
		c := dial(i)
		_, werr := c.nc.Write(pub[:cut]) // the third's fails if the sink closes it meanwhile
		if i < 2 && werr != nil {
			t.Fatal(werr)
		}
		cs = append(cs, c)
		if i < 2 {
			st := await(srv, func(st sink.Stats) bool { return st.HeldBytes >= int64((i+1)*cut) })
			if st.HeldBytes < int64((i+1)*cut) || st.HeldBytes > int64((i+1)*(cut+slack)) {
				t.Fatalf("client %d: held %d bytes, want %d and at most %d more each", i, st.HeldBytes, (i+1)*cut, slack)
			}
		}
	}
	// The DISCONNECT is lost when the close resets a connection whose bytes were not all read.
	if h, body, err := cs[2].read(5 * time.Second); err == nil {
		var d codec.Disconnect
		if h.Type != codec.TypeDisconnect || codec.DecodeDisconnect(body, codec.V5, &d) != nil || d.Reason != codec.ReasonQuotaExceeded {
			t.Fatalf("the third client got %v %+v, want DISCONNECT Quota exceeded", h.Type, d)
		}
	}
	if !cs[2].closed(5 * time.Second) {
		t.Fatal("the third client stayed open")
	}
	return cs
}
