package reactor_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/internal/tlsrec"
	"github.com/mqblast/mqblast/reactor"
)

// badBroker is an MQTT broker over TLS 1.3 in the test's process, to send what a real
// broker would not: crypto/tls does its handshake (no session tickets, reads bounded by
// the records), then its record layer is tlsrec's Server side, whose records the test
// crafts. Connection i (in accept order) gets modes[i%len(modes)] after its CONNACK.
type badBroker struct {
	ln    net.Listener
	modes []string
	mu    sync.Mutex
	n     int
	// keyUpdates counts the KeyUpdates the clients sent back on "good" connections, which
	// asked for them.
	keyUpdates int
}

func startBadBroker(t *testing.T, cert tls.Certificate, modes []string) *badBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &badBroker{ln: ln, modes: modes}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			mode := modes[b.n%len(modes)]
			b.n++
			b.mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				if err := b.serve(c, cert, mode); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					t.Logf("bad broker, %s: %v", mode, err)
				}
			})
		}
	})
	return b
}

// secretLog keeps the traffic secrets of the broker's handshake.
type secretLog struct{ client, server []byte }

func (k *secretLog) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) == 3 {
		s, _ := hex.DecodeString(string(f[2]))
		switch string(f[0]) {
		case "CLIENT_TRAFFIC_SECRET_0":
			k.client = s
		case "SERVER_TRAFFIC_SECRET_0":
			k.server = s
		}
	}
	return len(line), nil
}

// recordConn reads no byte past the end of the record being read, so that the handshake
// leaves the client's first application record on the socket.
type recordConn struct {
	net.Conn
	hdr  []byte
	body int
}

func (c *recordConn) Read(p []byte) (int, error) {
	if c.body > 0 {
		n, err := c.Conn.Read(p[:min(len(p), c.body)])
		c.body -= n
		return n, err
	}
	n, err := c.Conn.Read(p[:min(len(p), 5-len(c.hdr))])
	if c.hdr = append(c.hdr, p[:n]...); len(c.hdr) == 5 {
		c.body, c.hdr = int(binary.BigEndian.Uint16(c.hdr[3:])), c.hdr[:0]
	}
	return n, err
}

func (b *badBroker) serve(c net.Conn, cert tls.Certificate, mode string) error {
	kl := &secretLog{}
	rc := &recordConn{Conn: c}
	srv := tls.Server(rc, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13,
		SessionTicketsDisabled: true, KeyLogWriter: kl})
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if err := srv.Handshake(); err != nil {
		return err
	}
	suite := srv.ConnectionState().CipherSuite
	rec, err := tlsrec.New(suite, tlsrec.Server, kl.client, kl.server)
	if err != nil {
		return err
	}
	raw := newRawSealer(suite, kl.server) // the same keys, for records tlsrec would not make
	var in, plain []byte
	buf := make([]byte, 4096)
	// read returns the next plaintext the client sent.
	read := func() ([]byte, error) {
		for {
			var n int
			var err error
			if plain, n, err = rec.Open(plain[:0], in); err != nil {
				return nil, err
			}
			in = in[:copy(in, in[n:])]
			if len(plain) > 0 {
				return plain, nil
			}
			k, err := c.Read(buf)
			if err != nil {
				return nil, err
			}
			in = append(in, buf[:k]...)
		}
	}
	if p, err := read(); err != nil || p[0]>>4 != 1 {
		return errors.Join(err, errors.New("no CONNECT"))
	}
	if _, err := c.Write(rec.Seal(nil, []byte{0x20, 2, 0, 0})); err != nil { // CONNACK, sequence number 0
		return err
	}
	raw.seq = 1
	var w []byte
	switch mode {
	case "overflow": // a record header of 2^14+257 bytes, and as many
		w = append([]byte{23, 3, 3, 0x41, 0x01}, make([]byte, 1<<14+257)...)
	case "bad_mac":
		w = rec.Seal(nil, []byte{0x30, 5, 0, 1, 't', 'h', 'i'})
		w[len(w)-1] ^= 1
	case "unexpected": // a CertificateRequest after the handshake
		w = raw.seal(22, []byte{13, 0, 0, 4, 0, 0, 0, 0})
	case "storm": // KeyUpdates and no data, past any bound
		for range 100 {
			w = rec.KeyUpdate(w, false)
		}
	case "close":
		w = rec.CloseNotify(nil)
	case "alert": // fatal, internal_error
		w = raw.seal(21, []byte{2, 80})
	case "good": // a KeyUpdate that asks for the client's, then PINGRESPs until the client goes
		if _, err := c.Write(rec.KeyUpdate(nil, true)); err != nil {
			return err
		}
		for {
			p, err := read()
			if err != nil {
				b.mu.Lock()
				b.keyUpdates += int(rec.Stats().KeyUpdatesIn)
				b.mu.Unlock()
				return nil
			}
			if bytes.Contains(p, []byte{0xc0, 0}) {
				if _, err := c.Write(rec.Seal(nil, []byte{0xd0, 0})); err != nil {
					return err
				}
			}
		}
	}
	if _, err := c.Write(w); err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, c) // until the client closes
	return err
}

// rawSealer seals records of any content type with a direction's keys (RFC 8446 section
// 5.2), its sequence number set by the caller.
type rawSealer struct {
	aead cipher.AEAD
	iv   []byte
	seq  uint64
}

func newRawSealer(suite uint16, secret []byte) *rawSealer {
	h, keyLen := sha256.New, 16
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		h, keyLen = sha512.New384, 32
	}
	label := func(l string, n int) []byte {
		info := append([]byte{byte(n >> 8), byte(n), byte(6 + len(l))}, "tls13 "+l...)
		out, err := hkdf.Expand(func() hash.Hash { return h() }, secret, string(append(info, 0)), n)
		if err != nil {
			panic(err)
		}
		return out
	}
	block, err := aes.NewCipher(label("key", keyLen))
	if err != nil {
		panic(err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &rawSealer{aead: a, iv: label("iv", 12)}
}

func (r *rawSealer) seal(typ byte, content []byte) []byte {
	inner := append(append([]byte(nil), content...), typ)
	n := len(inner) + r.aead.Overhead()
	hdr := []byte{23, 3, 3, byte(n >> 8), byte(n)}
	nonce := append([]byte(nil), r.iv...)
	for i := range 8 {
		nonce[4+i] ^= byte(r.seq >> (56 - 8*i))
	}
	r.seq++
	return r.aead.Seal(hdr, nonce, inner, hdr)
}

// TestTLSLoopBadRecords: a broker whose TLS sends, after the CONNACK, a record over 2^14+256
// bytes, a record that fails to authenticate, a handshake message TLS 1.3 does not allow
// there, a storm of KeyUpdates, a close_notify, a fatal alert: each ends that connection,
// counted by its named reason, and nothing else; the connections between them, whose
// broker asks for a KeyUpdate, answer it and keep their keepalive going.
func TestTLSLoopBadRecords(t *testing.T) {
	tier.Integration(t)
	certs := testbroker.NewCerts(t)
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	modes := []string{"overflow", "good", "bad_mac", "good", "unexpected", "good", "storm", "good", "close", "good", "alert", "good"}
	b := startBadBroker(t, cert, modes)
	const rounds = 2
	n := rounds * len(modes)
	obs := newHSObs()
	e := startEngine(t, reactor.Config{Brokers: []string{"mqtts://" + b.ln.Addr().String()}, Clients: n,
		Client: specs(4, time.Second, "", ""), Observer: obs, TLS: tlsConf(t, reactor.TLSOptions{CAFile: certs.CA}),
		ConnectRate: 200, MaxConnecting: 1}) // one at a time: the broker's modes follow the clients
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := map[reactor.Cause]int{reactor.CauseTLSRecordOverflow: rounds, reactor.CauseTLSBadRecordMAC: rounds,
		reactor.CauseTLSUnexpectedMessage: rounds, reactor.CauseTLSKeyUpdateStorm: rounds, reactor.CauseClosed: rounds, reactor.CauseTLS: rounds}
	good := n / 2
	waitFor(t, 10*time.Second, func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return len(obs.dropped) == len(want) && obs.pings >= 2*good
	})
	open := e.Open()
	e.Disconnect(2 * time.Second)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	for c, k := range want {
		if obs.dropped[c] != k {
			t.Errorf("dropped %v, want %v", obs.dropped, want)
			break
		}
	}
	if obs.connected != n || len(obs.failed) != 0 || open != int64(good) || obs.pings < 2*good {
		t.Errorf("connected %d, failed %v, open %d, pings %d; want %d connected, %d open with 2 pings each", obs.connected, obs.failed, open, obs.pings, n, good)
	}
	obs.hmu.Lock()
	if obs.layers[reactor.RecordLayerLoop] != n {
		t.Errorf("record layers %v, want %d loop", obs.layers, n)
	}
	obs.hmu.Unlock()
	for _, ex := range obs.examples {
		t.Logf("%s", ex)
	}
	time.Sleep(100 * time.Millisecond) // the broker's goroutines see the clients go
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.keyUpdates < good {
		t.Errorf("the clients answered %d KeyUpdates, want %d", b.keyUpdates, good)
	}
}

// TestTLSExpiredCertificate: a broker whose certificate (signed by the CA given) expired
// yesterday is refused in the handshake, with the default record layer as before: one
// line naming the problem and what skips the check.
func TestTLSExpiredCertificate(t *testing.T) {
	tier.Integration(t)
	certs := testbroker.NewCerts(t)
	ca, err := tls.LoadX509KeyPair(certs.CA, certs.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	b := startBadBroker(t, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, []string{"good"})
	obs := newHSObs()
	e := startEngine(t, reactor.Config{Brokers: []string{"mqtts://" + b.ln.Addr().String()}, Clients: 3,
		Client: specs(4, 0, "", ""), Observer: obs, TLS: tlsConf(t, reactor.TLSOptions{CAFile: certs.CA})})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := e.Connect(ctx, nil); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	ex := first(obs.examples)
	if obs.connected != 0 || obs.failed[reactor.CauseTLS] != 3 || !strings.Contains(ex, "certificate has expired") ||
		!strings.Contains(ex, "--insecure") || strings.Contains(ex, "\n") {
		t.Errorf("expired certificate: connected %d, failed %v, %q", obs.connected, obs.failed, ex)
	}
	t.Logf("expired certificate: %s", ex)
}
