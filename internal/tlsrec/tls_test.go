package tlsrec

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	_ "unsafe" // go:linkname, to choose crypto/tls's TLS 1.3 cipher suite

	"github.com/mqblast/mqblast/internal/testcert"
	"github.com/mqblast/mqblast/internal/tier"
)

// crypto/tls has no setting for the TLS 1.3 cipher suite (Config.CipherSuites applies to
// TLS 1.2 only): client and server take their preference from these two lists, which
// crypto/tls keeps linkable for QUIC stacks. forceSuite narrows both to one suite.
//
//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

var suiteMu sync.Mutex

// forceSuite makes crypto/tls offer and choose only suite until the test ends. Tests that
// use it must not run in parallel with other handshakes of this package (none do).
func forceSuite(t *testing.T, suite uint16) {
	suiteMu.Lock()
	a, b := defaultCipherSuitesTLS13, defaultCipherSuitesTLS13NoAES
	defaultCipherSuitesTLS13, defaultCipherSuitesTLS13NoAES = []uint16{suite}, []uint16{suite}
	t.Cleanup(func() {
		defaultCipherSuitesTLS13, defaultCipherSuitesTLS13NoAES = a, b
		suiteMu.Unlock()
	})
}

var suites = []struct {
	name string
	id   uint16
}{
	{"AES128GCM", tls.TLS_AES_128_GCM_SHA256},
	{"AES256GCM", tls.TLS_AES_256_GCM_SHA384},
	{"ChaCha20Poly1305", tls.TLS_CHACHA20_POLY1305_SHA256},
}

// recordConn hands crypto/tls at most one record per Read, so that when its handshake
// returns it has buffered nothing past the handshake's last record: what follows on the
// socket belongs to the tlsrec Conn that takes over.
type recordConn struct {
	net.Conn
	hdr  [headerLen]byte
	hdrN int // bytes of hdr still to hand out
	left int // bytes of the current record's body still to hand out
}

func (r *recordConn) Read(p []byte) (int, error) {
	if r.hdrN == 0 && r.left == 0 {
		if _, err := io.ReadFull(r.Conn, r.hdr[:]); err != nil {
			return 0, err
		}
		r.hdrN = headerLen
		r.left = int(r.hdr[3])<<8 | int(r.hdr[4])
	}
	if r.hdrN > 0 {
		n := copy(p, r.hdr[headerLen-r.hdrN:])
		r.hdrN -= n
		return n, nil
	}
	n, err := r.Conn.Read(p[:min(len(p), r.left)])
	r.left -= n
	return n, err
}

// pair is a TLS 1.3 connection over loopback TCP whose handshake crypto/tls did on both
// ends; then one end (the tlsrec side) drops its tls.Conn and drives its socket with a
// Conn built from the secrets its KeyLogWriter wrote, the other stays crypto/tls's.
type pair struct {
	rec   *Conn
	raw   net.Conn  // the tlsrec side's socket
	peer  *tls.Conn // crypto/tls at the other end
	peerR net.Conn  // the peer's socket under its tls.Conn
	cs    []byte    // CLIENT_TRAFFIC_SECRET_0
	ss    []byte    // SERVER_TRAFFIC_SECRET_0
	suite uint16
	side  Side

	in  []byte // bytes read from raw that Open has not consumed
	tmp []byte
}

// newPair makes a pair with the suite forced and the tlsrec side on side. A server
// tlsrec side disables session tickets: crypto/tls's server would seal them under the
// application key before handing over, and New starts at sequence number 0.
func newPair(t *testing.T, suite uint16, side Side) *pair {
	t.Helper()
	forceSuite(t, suite)
	ca, caKey := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "tlsrec test CA"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign})
	leaf, leafKey := testcert.New(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "tlsrec"},
		DNSNames: []string{"tlsrec.test"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	var keylog bytes.Buffer
	serverCfg := &tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{leaf.Raw}, PrivateKey: leafKey, Leaf: leaf}}}
	clientCfg := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: roots, ServerName: "tlsrec.test"}
	if side == Client {
		clientCfg.KeyLogWriter = &keylog
		// crypto/tls's server sends a ticket only to a client that can resume.
		clientCfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
	} else {
		serverCfg.KeyLogWriter = &keylog
		serverCfg.SessionTicketsDisabled = true
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() //nolint:errcheck
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	cr, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sr := <-accepted
	if sr == nil {
		t.Fatal("accept failed")
	}
	p := &pair{suite: suite, side: side, tmp: make([]byte, 64<<10)}
	t.Cleanup(func() { _ = cr.Close(); _ = sr.Close() })
	for _, c := range []net.Conn{cr, sr} {
		_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	}

	var recTLS *tls.Conn
	var wrap *recordConn
	if p.side == Client {
		wrap = &recordConn{Conn: cr}
		recTLS, p.peer = tls.Client(wrap, clientCfg), tls.Server(sr, serverCfg)
		p.raw, p.peerR = cr, sr
	} else {
		wrap = &recordConn{Conn: sr}
		recTLS, p.peer = tls.Server(wrap, serverCfg), tls.Client(cr, clientCfg)
		p.raw, p.peerR = sr, cr
	}
	// The peer's handshake may finish after ours (a server's ticket waits on the
	// socket); its error shows in the peer's first Read or Write.
	go func() { _ = p.peer.Handshake() }()
	if err := recTLS.Handshake(); err != nil {
		t.Fatal(err)
	}
	if wrap.hdrN != 0 || wrap.left != 0 {
		t.Fatalf("crypto/tls stopped inside a record (%d header, %d body bytes left)", wrap.hdrN, wrap.left)
	}
	if got := recTLS.ConnectionState().CipherSuite; got != suite {
		t.Fatalf("crypto/tls chose %s, not %s", tls.CipherSuiteName(got), tls.CipherSuiteName(suite))
	}
	p.cs, p.ss = keylogSecret(t, keylog.String(), "CLIENT_TRAFFIC_SECRET_0"), keylogSecret(t, keylog.String(), "SERVER_TRAFFIC_SECRET_0")
	if p.rec, err = New(suite, side, p.cs, p.ss); err != nil {
		t.Fatal(err)
	}
	return p
}

// eachPair runs f as a subtest on a fresh pair for each suite and each side.
func eachPair(t *testing.T, f func(t *testing.T, p *pair)) {
	for _, s := range suites {
		for _, side := range []Side{Client, Server} {
			t.Run(s.name+"/"+[]string{"client", "server"}[side], func(t *testing.T) {
				f(t, newPair(t, s.id, side))
			})
		}
	}
}

// keylogSecret returns the secret of label from NSS key log lines.
func keylogSecret(t *testing.T, log, label string) []byte {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == label {
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	t.Fatalf("no %s in the key log", label)
	return nil
}

// read reads once from the socket and opens what is whole, appending the data to out.
func (p *pair) read(out []byte) ([]byte, error) {
	n, err := p.raw.Read(p.tmp)
	if err != nil {
		return out, err
	}
	p.in = append(p.in, p.tmp[:n]...)
	out, used, err := p.rec.Open(out, p.in)
	p.in = p.in[:copy(p.in, p.in[used:])]
	return out, err
}

// readN reads until out holds n bytes of data.
func (p *pair) readN(t *testing.T, out []byte, n int) []byte {
	t.Helper()
	for len(out) < n {
		var err error
		if out, err = p.read(out); err != nil {
			t.Fatalf("after %d of %d bytes: %v", len(out), n, err)
		}
	}
	return out
}

// diffSizes is every plaintext size from 0 to 2^14, then a few that take several records.
// The race detector's build (ten times slower here, and looking for races, not sizes) takes
// every 13th size below 2^14-16 and each one above.
func diffSizes() []int {
	var s []int
	for n := 0; n <= maxPlain; n++ {
		if !tier.Race || n%13 == 0 || n > maxPlain-16 {
			s = append(s, n)
		}
	}
	return append(s, maxPlain+1, 2*maxPlain, 2*maxPlain+1, 3*maxPlain+17, 100_000)
}

// message is the m-th message of a size: a window of a random source, so that a record
// delivered out of order or twice shows.
func message(src []byte, m, size int) []byte {
	off := (m * 4099) % (len(src) - size)
	return src[off : off+size]
}

// TestDifferential drives crypto/tls's records with a Conn: for each suite and each side,
// every plaintext size from 0 to 2^14 and some of several records, sealed by the Conn
// and read by tls.Conn, then written by tls.Conn and opened by the Conn. The Conn drops
// its cipher state every 1,000 messages, as an idle connection does.
func TestDifferential(t *testing.T) {
	src := make([]byte, 256<<10)
	rand.NewChaCha8([32]byte{46}).Read(src) //nolint:errcheck
	sizes := diffSizes()
	eachPair(t, func(t *testing.T, p *pair) {
		// The Conn seals, crypto/tls reads.
		werr := make(chan error, 1)
		go func() {
			var buf []byte
			for m, size := range sizes {
				if m%1000 == 999 {
					p.rec.Release() // as an idle connection does; the next Seal rebuilds
				}
				buf = p.rec.Seal(buf[:0], message(src, m, size))
				if _, err := p.raw.Write(buf); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}()
		got := make([]byte, 128<<10)
		for m, size := range sizes {
			if _, err := io.ReadFull(p.peer, got[:size]); err != nil {
				t.Fatalf("tls.Conn reading message %d (%d bytes): %v", m, size, err)
			}
			if !bytes.Equal(got[:size], message(src, m, size)) {
				t.Fatalf("tls.Conn read message %d (%d bytes) wrong", m, size)
			}
		}
		if err := <-werr; err != nil {
			t.Fatal(err)
		}

		// crypto/tls writes, the Conn opens.
		go func() {
			for m, size := range sizes {
				if _, err := p.peer.Write(message(src, m, size)); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}()
		var out []byte
		for m, size := range sizes {
			if m%1000 == 999 {
				p.rec.Release()
			}
			out = p.readN(t, out, size)
			if !bytes.Equal(out[:size], message(src, m, size)) {
				t.Fatalf("Open: message %d (%d bytes) wrong", m, size)
			}
			out = out[:copy(out, out[size:])]
		}
		if err := <-werr; err != nil {
			t.Fatal(err)
		}
		if len(out) != 0 {
			t.Fatalf("Open: %d bytes past the last message", len(out))
		}
		want := Stats{}
		if p.side == Client {
			want.Tickets = 1 // crypto/tls's server sends one NewSessionTicket
		}
		if got := p.rec.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}

		// crypto/tls closes: the Conn sees close_notify after all the data.
		if err := p.peer.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := p.read(nil)
		var e *Error
		if !errors.As(err, &e) || e.Reason != ReasonClosed {
			t.Fatalf("after tls.Conn.Close: %v, want %s", err, ReasonClosed)
		}
	})
}

// TestKeyUpdateTLS: the Conn's KeyUpdates against crypto/tls, both sides, each suite.
// Asked to update (update_requested), crypto/tls updates its read key, answers with its
// own KeyUpdate and moves its write key; the Conn applies the answer. Data flows both ways
// after each of several rounds, and after a KeyUpdate that asks nothing.
func TestKeyUpdateTLS(t *testing.T) {
	eachPair(t, func(t *testing.T, p *pair) {
		buf := make([]byte, 64)
		for round := 1; round <= 3; round++ {
			w := p.rec.KeyUpdate(nil, round != 2) // round 2 asks for nothing
			w = p.rec.Seal(w, []byte("ping"))
			if _, err := p.raw.Write(w); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(p.peer, buf[:4]); err != nil || string(buf[:4]) != "ping" {
				t.Fatalf("round %d: tls.Conn read %q, %v", round, buf[:4], err)
			}
			if _, err := p.peer.Write([]byte("pong")); err != nil {
				t.Fatal(err)
			}
			if out := p.readN(t, nil, 4); string(out) != "pong" {
				t.Fatalf("round %d: Open gave %q", round, out)
			}
		}
		want := Stats{KeyUpdatesOut: 3, KeyUpdatesIn: 2} // crypto/tls answered rounds 1 and 3
		if p.side == Client {
			want.Tickets = 1
		}
		if got := p.rec.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}
	})
}

// TestKeyUpdateAnswerTLS: the Conn receives update_requested and its answer goes to
// crypto/tls. crypto/tls never asks by itself, so the request is sealed under the peer's
// own write key (the test holds both secrets) and written on the peer's socket as if the
// peer had sent it; from then on the test speaks for the peer's writing direction, and
// crypto/tls still reads everything the Conn sends, answer first.
func TestKeyUpdateAnswerTLS(t *testing.T) {
	eachPair(t, func(t *testing.T, p *pair) {
		mirror, err := New(p.suite, 1-p.side, p.cs, p.ss) // writes as the peer does
		if err != nil {
			t.Fatal(err)
		}
		if p.side == Client {
			mirror.wrSeq = 1 // crypto/tls's server sealed one ticket at 0
		}
		w := mirror.KeyUpdate(nil, true)
		w = mirror.Seal(w, []byte("ping"))
		if _, err := p.peerR.Write(w); err != nil {
			t.Fatal(err)
		}
		if out := p.readN(t, nil, 4); string(out) != "ping" {
			t.Fatalf("Open gave %q", out)
		}
		w = p.rec.Seal(nil, []byte("pong")) // the answer, then data under the new key
		w = p.rec.Seal(w, []byte("pong"))
		if _, err := p.raw.Write(w); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		if _, err := io.ReadFull(p.peer, buf); err != nil || string(buf) != "pongpong" {
			t.Fatalf("tls.Conn read %q, %v", buf, err)
		}
		w = mirror.Seal(nil, []byte("again"))
		if _, err := p.peerR.Write(w); err != nil {
			t.Fatal(err)
		}
		if out := p.readN(t, nil, 5); string(out) != "again" {
			t.Fatalf("Open gave %q", out)
		}
		if got := p.rec.Stats(); got.KeyUpdatesIn != 1 || got.KeyUpdatesOut != 1 {
			t.Errorf("Stats = %+v, want one KeyUpdate each way", got)
		}
	})
}

// TestAlertFromTLS: a record crypto/tls cannot authenticate makes it send bad_record_mac;
// the Conn reports the alert by crypto/tls's name for it.
func TestAlertFromTLS(t *testing.T) {
	p := newPair(t, tls.TLS_AES_128_GCM_SHA256, Server)
	w := p.rec.Seal(nil, []byte("tampered"))
	w[len(w)-1] ^= 1
	if _, err := p.raw.Write(w); err != nil {
		t.Fatal(err)
	}
	if _, err := p.peer.Read(make([]byte, 8)); err == nil {
		t.Fatal("tls.Conn read a tampered record")
	}
	var err error
	for err == nil {
		_, err = p.read(nil)
	}
	if r, a := reasonOf(err); r != ReasonAlert || a != "bad record MAC" {
		t.Fatalf("err %v, want %s %q", err, ReasonAlert, "bad record MAC")
	}
}
