package sink

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/mqblast/mqblast/internal/tlsrec"
)

const (
	// MaxHandshakes is how many TLS handshakes a sink process runs at once, each in a
	// goroutine of its own off the event loop; the connections beyond wait their turn
	// (their bytes kept) in the order they were accepted. A handshake is CPU (the
	// signature, the key exchange) and a loopback round trip, so a few per core keep the
	// cores busy; more would only hold more goroutine stacks.
	MaxHandshakes = 64
	// HandshakeTimeout bounds one handshake from its start: a client that stops half way
	// is closed, not kept.
	HandshakeTimeout = 10 * time.Second
	// recordHeader is a TLS record's header: type, version, length.
	recordHeader = 5
	// maxHandshakeInput bounds what a connection may send while its handshake runs (the
	// handshake's own messages and what the client sends right after its Finished): a
	// client past it is closed, its handshake failed.
	maxHandshakeInput = 1 << 20
)

// LoadTLS reads the sink's certificate chain and key (PEM) and, when clientCA is not empty,
// the CAs a client certificate must be signed by, and builds the server's TLS
// configuration: TLS 1.3 only (the event loop runs the 1.3 record layer), no session
// tickets (a ticket would be the first record under the server's traffic key, which the
// loop takes over at sequence number 0), and with clientCA a certificate required of every
// client and verified. Each problem is named by its flag, with the fix; the key's content
// never appears in an error.
func LoadTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "" && clientCA == "":
		return nil, nil
	case certFile == "" && keyFile == "":
		return nil, errors.New("--tls-client-ca needs --tls-cert and --tls-key: the sink asks for client certificates only over TLS; give the sink's certificate chain and its private key (PEM files)")
	case keyFile == "":
		return nil, fmt.Errorf("--tls-cert %s needs --tls-key: give the private key of the certificate (a PEM file)", certFile)
	case certFile == "":
		return nil, fmt.Errorf("--tls-key %s needs --tls-cert: give the certificate chain of the key (a PEM file)", keyFile)
	}
	certPEM, err := readPEM("--tls-cert", certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEM("--tls-key", keyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	clear(keyPEM)
	if err != nil {
		return nil, pairError(certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("--tls-cert %s: the first certificate does not parse (%w): give an X.509 certificate in PEM", certFile, err)
		}
	}
	if now := time.Now(); now.After(pair.Leaf.NotAfter) || now.Before(pair.Leaf.NotBefore) {
		return nil, fmt.Errorf("--tls-cert %s: the certificate is valid from %s to %s, not now: every client would refuse it; give a current certificate",
			certFile, pair.Leaf.NotBefore.UTC().Format(time.RFC3339), pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	cfg := &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{pair},
		SessionTicketsDisabled: true,
	}
	if clientCA != "" {
		caPEM, err := readPEM("--tls-client-ca", clientCA)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, fmt.Errorf("--tls-client-ca %s: no PEM certificate in it: give the CA certificate(s) that sign the clients' certificates", clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// readPEM reads a PEM file given to flag.
func readPEM(flag, file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s %s: cannot read it (%w): give a file this user can read", flag, file, err)
	}
	return b, nil
}

// pairError names what tls.X509KeyPair found wrong (its messages carry no key material).
func pairError(certFile, keyFile string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "does not match"):
		return fmt.Errorf("--tls-key %s does not match the certificate of --tls-cert %s: give the key the certificate was issued for", keyFile, certFile)
	case strings.Contains(msg, "certificate input"):
		return fmt.Errorf("--tls-cert %s: no PEM certificate in it (%s): give the sink's certificate chain in PEM, leaf first", certFile, msg)
	case strings.Contains(msg, "key input") || strings.Contains(msg, "private key"):
		return fmt.Errorf("--tls-key %s: no usable private key in it (%s): give the certificate's private key in PEM (PKCS #8, PKCS #1 or SEC 1)", keyFile, msg)
	}
	return fmt.Errorf("--tls-cert %s with --tls-key %s: %s: give a PEM certificate chain and its private key", certFile, keyFile, msg)
}

// tlsState is a TLS connection's state beside its session: while the handshake runs, the
// pipe to its goroutine; after it, the record layer, which the loop runs itself.
type tlsState struct {
	pipe *hsConn      // the handshake's; nil once it has ended
	rec  *tlsrec.Conn // after the handshake
	raw  []byte       // ciphertext the handshake read ahead of the loop (rarely more than one flight)
	cut  []byte       // the plaintext of an MQTT packet not yet whole (WebSocket: of a frame header or control frame)
	// noNotify: the record layer ended the connection for an error of the peer's; no
	// close_notify goes out.
	noNotify bool
}

// startTLS begins s's handshake, or queues it behind MaxHandshakes running ones.
func (h *handler) startTLS(s *session) {
	s.tls = &tlsState{pipe: &hsConn{wake: make(chan struct{}, 1), exec: h.el, s: s, local: s.c.LocalAddr(), remote: s.c.RemoteAddr()}}
	if h.handshakes < MaxHandshakes {
		h.handshakes++
		go h.handshake(s, s.tls.pipe)
		return
	}
	h.hsQueue = append(h.hsQueue, s)
	h.c.tlsQueued.Add(1)
}

// handshakeEnded starts the next queued handshake, if any; on the loop.
func (h *handler) handshakeEnded() {
	h.handshakes--
	for len(h.hsQueue) > 0 && h.handshakes < MaxHandshakes {
		s := h.hsQueue[0]
		h.hsQueue[0] = nil
		h.hsQueue = h.hsQueue[1:]
		if len(h.hsQueue) == 0 {
			h.hsQueue = nil
		}
		if s.closed {
			h.c.tlsFailed.Add(1)
			continue
		}
		h.handshakes++
		go h.handshake(s, s.tls.pipe)
	}
}

// handshake runs crypto/tls's server handshake over p, in its own goroutine, and hands the
// outcome to the loop. The traffic secrets come from a KeyLogWriter on this connection's
// clone of the configuration: in memory, copied into the record layer, then cleared.
func (h *handler) handshake(s *session, p *hsConn) {
	var kl keyLog
	cfg := h.cfg.TLS.Clone()
	cfg.KeyLogWriter = &kl
	tc := tls.Server(p, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	d := &hsDone{h: h, s: s, err: err}
	if err == nil {
		st := tc.ConnectionState()
		if len(kl.client) == 0 || len(kl.server) == 0 {
			d.err = errors.New("no traffic secrets from the handshake")
		} else {
			d.rec, d.err = tlsrec.New(st.CipherSuite, tlsrec.Server, kl.client, kl.server)
		}
	}
	kl.clear()
	_ = h.el.Execute(context.Background(), d)
}

// hsDone is a handshake's end, run on the loop after the handshake's writes.
type hsDone struct {
	h   *handler
	s   *session
	rec *tlsrec.Conn
	err error
}

func (d *hsDone) Run(context.Context) error {
	h, s := d.h, d.s
	h.handshakeEnded()
	t := s.tls
	p := t.pipe
	p.flushOut() // the handshake's last writes, before anything the loop seals
	t.pipe = nil
	p.mu.Lock()
	t.raw = append([]byte(nil), p.in...)
	p.in, p.closed = nil, true
	p.mu.Unlock()
	if d.err != nil {
		h.c.tlsFailed.Add(1)
		if !s.closed {
			_ = s.c.Close()
		}
		return nil
	}
	h.c.tlsHandshakes.Add(1)
	t.rec = d.rec
	if s.closed {
		return nil
	}
	if len(t.raw) == 0 {
		t.raw = nil
		return nil
	}
	if h.tlsRecords(s.c, s) == gnet.Close {
		_ = s.c.Close()
	}
	return nil
}

// tlsTraffic is OnTraffic for a TLS connection: during the handshake the bytes go to its
// goroutine, after it the loop opens the records itself.
func (h *handler) tlsTraffic(c gnet.Conn, s *session) gnet.Action {
	if p := s.tls.pipe; p != nil {
		buf, _ := c.Peek(-1)
		n := p.feed(buf)
		_, _ = c.Discard(len(buf))
		if n > maxHandshakeInput {
			return gnet.Close
		}
		return gnet.None
	}
	return h.tlsRecords(c, s)
}

// tlsRecords opens the whole records gnet holds for c (and any the handshake read ahead),
// handles the MQTT packets in them, and seals the replies into one write. A cut record
// stays in gnet's buffer, a cut MQTT packet's plaintext in the session; both count as held.
func (h *handler) tlsRecords(c gnet.Conn, s *session) gnet.Action {
	t := s.tls
	in, _ := c.Peek(-1)
	fromRaw := t.raw != nil
	if fromRaw {
		t.raw = append(t.raw, in...)
		_, _ = c.Discard(len(in))
		in = t.raw
	}
	h.published = false
	// The plaintext goes to the loop's buffer, or after a cut packet's, which so grows in
	// place rather than being copied at every read of a big packet.
	inCut := len(t.cut) > 0
	buf := h.plain[:0]
	if inCut {
		buf = t.cut
	}
	plain, n, err := t.rec.Open(buf, in)
	cutRecord := len(in) - n
	if fromRaw {
		if t.raw = t.raw[:copy(t.raw, t.raw[n:])]; len(t.raw) == 0 {
			t.raw = nil
		}
	} else if n > 0 {
		_, _ = c.Discard(n)
	}
	used, act := h.stream(s, plain)
	h.c.bytesIn.Add(uint64(used))
	t.cut = keepCut(plain, used, inCut, act)
	if !inCut {
		h.plain = plain[:0] // keep what it grew to
	}
	if err != nil && act == gnet.None {
		h.tlsClosed(err)
		var e *tlsrec.Error
		t.noNotify = !errors.As(err, &e) || e.Reason != tlsrec.ReasonClosed // a close_notify is answered with one
		act = gnet.Close
	}
	held := cutRecord + len(t.cut)
	if s.ws != nil {
		held += len(s.ws.cut)
	}
	h.hold(s, held)
	if act == gnet.None && s.held > 0 && h.held > h.cfg.MaxHeld {
		h.c.heldOver.Add(1)
		act = h.fail(s, errHeldOver)
	}
	h.sealed = t.rec.Pending(h.sealed[:0])
	if s.ws != nil {
		if len(h.out)+len(h.ctl) > 0 || s.ws.closed {
			b := h.wsWire(s)
			h.sealed = t.rec.Seal(h.sealed, b)
			h.c.bytesOut.Add(uint64(len(b)))
		}
	} else if len(h.out) > 0 {
		h.sealed = t.rec.Seal(h.sealed, h.out)
		h.c.bytesOut.Add(uint64(len(h.out)))
		h.out = h.out[:0]
	}
	if len(h.sealed) > 0 {
		_, _ = c.Write(h.sealed)
	}
	if !h.published && len(s.subs) == 0 {
		// Nothing flows through this connection (a CONNECT, a PINGREQ): it keeps its keys
		// and sequence numbers only, and rebuilds the cipher state when it next speaks.
		t.rec.Release()
	}
	if len(h.dirty) > 0 {
		h.schedule()
	}
	return act
}

// tlsClosed counts a connection the record layer ended, by its reason.
func (h *handler) tlsClosed(err error) {
	var e *tlsrec.Error
	if !errors.As(err, &e) {
		h.c.tlsClosed[closeDecode].Add(1)
		return
	}
	for i, r := range closeReasons {
		if r == e.Reason {
			h.c.tlsClosed[i].Add(1)
			return
		}
	}
	h.c.tlsClosed[closeDecode].Add(1)
}

// closeReasons are tlsrec's reasons, in the order of TLSClosed's fields.
var closeReasons = [...]string{tlsrec.ReasonClosed, tlsrec.ReasonAlert, tlsrec.ReasonOverflow, tlsrec.ReasonBadMAC,
	tlsrec.ReasonUnexpected, tlsrec.ReasonDecode, tlsrec.ReasonKeyUpdateStorm}

const closeDecode = 5

// keyLog takes the two application traffic secrets from crypto/tls's key log lines
// ("LABEL client_random secret", hex). It writes nothing anywhere.
type keyLog struct{ client, server []byte }

func (k *keyLog) Write(line []byte) (int, error) {
	f := bytes.Fields(line)
	if len(f) != 3 {
		return len(line), nil
	}
	var dst *[]byte
	switch string(f[0]) {
	case "CLIENT_TRAFFIC_SECRET_0":
		dst = &k.client
	case "SERVER_TRAFFIC_SECRET_0":
		dst = &k.server
	default:
		return len(line), nil
	}
	b := make([]byte, hex.DecodedLen(len(f[2])))
	if _, err := hex.Decode(b, f[2]); err != nil {
		return len(line), nil
	}
	*dst = b
	return len(line), nil
}

func (k *keyLog) clear() {
	clear(k.client)
	clear(k.server)
	k.client, k.server = nil, nil
}

// hsConn is the net.Conn the handshake's goroutine runs crypto/tls over: the loop feeds it
// what the socket brought, and its writes are gathered and written by the loop (a task, or
// the handshake's end, whichever runs first: gnet may run two tasks of one goroutine out of
// order when its urgent queue is long). A Read returns at most the rest of the current record, so that
// crypto/tls never reads past the handshake's last record: what follows (the client's first
// application data) is the loop's, and both directions' application records start at
// sequence number 0 there.
type hsConn struct {
	mu     sync.Mutex
	in     []byte
	left   int // bytes of the current record not yet read
	closed bool
	wake   chan struct{}
	out    []byte // written by crypto/tls, not yet by the loop
	queued bool   // a flush task is queued for out

	exec          gnet.EventLoop
	s             *session
	local, remote net.Addr
}

// feed hands the goroutine bytes from the socket and returns how many it holds; on the loop.
func (p *hsConn) feed(b []byte) int {
	p.mu.Lock()
	p.in = append(p.in, b...)
	n := len(p.in)
	p.mu.Unlock()
	p.signal()
	return n
}

func (p *hsConn) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *hsConn) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return 0, io.EOF
		}
		if p.left == 0 && len(p.in) >= recordHeader {
			p.left = recordHeader + int(binary.BigEndian.Uint16(p.in[3:5]))
		}
		if p.left > 0 && len(p.in) > 0 {
			n := copy(b[:min(len(b), p.left)], p.in)
			p.in = p.in[n:]
			p.left -= n
			p.mu.Unlock()
			return n, nil
		}
		p.mu.Unlock()
		<-p.wake
	}
}

// Write gathers b for the loop, and queues a task to write it unless one is queued.
func (p *hsConn) Write(b []byte) (int, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, net.ErrClosed
	}
	p.out = append(p.out, b...)
	queue := !p.queued
	p.queued = true
	p.mu.Unlock()
	if queue {
		if err := p.exec.Execute(context.Background(), hsFlush{p}); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// flushOut writes what crypto/tls has written so far; on the loop.
func (p *hsConn) flushOut() {
	p.mu.Lock()
	b := p.out
	p.out, p.queued = nil, false
	p.mu.Unlock()
	if len(b) > 0 && !p.s.closed {
		_, _ = p.s.c.Write(b)
	}
}

// Close ends the handshake's reads (crypto/tls calls it when the handshake times out; the
// loop when the connection closes).
func (p *hsConn) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.signal()
	return nil
}

func (p *hsConn) LocalAddr() net.Addr              { return p.local }
func (p *hsConn) RemoteAddr() net.Addr             { return p.remote }
func (p *hsConn) SetDeadline(time.Time) error      { return nil }
func (p *hsConn) SetReadDeadline(time.Time) error  { return nil }
func (p *hsConn) SetWriteDeadline(time.Time) error { return nil }

// hsFlush writes a handshake's gathered output, on the loop.
type hsFlush struct{ p *hsConn }

func (f hsFlush) Run(context.Context) error {
	f.p.flushOut()
	return nil
}

// stream handles the MQTT bytes of one read at the start of b (over WebSocket, its frames)
// and returns the bytes of b it took.
func (h *handler) stream(s *session, b []byte) (int, gnet.Action) {
	if s.ws != nil {
		return h.wsStream(s, b)
	}
	return h.packets(s, b)
}

// goodbye writes what a connection the sink closes says last: a WebSocket close frame
// (status 1000 unless one is under way) and, over TLS, a close_notify alert; on the loop.
func (h *handler) goodbye(s *session) {
	var b []byte
	if w := s.ws; w != nil && w.open && !w.sent {
		h.wsClose(w, wsStatusNormal)
		b = h.wsWire(s)
	}
	if t := s.tls; t != nil {
		if t.rec == nil || t.noNotify {
			return
		}
		h.sealed = h.sealed[:0]
		if len(b) > 0 {
			h.sealed = t.rec.Seal(h.sealed, b)
		}
		h.sealed = t.rec.CloseNotify(h.sealed)
		b = h.sealed
	}
	if len(b) > 0 {
		_, _ = s.c.Write(b)
	}
}

// keepCut returns what a connection keeps of buf after its first used bytes were handled:
// nothing when all were (or the connection ends); the rest moved to the front of buf when
// buf is the connection's own kept buffer already (inCut), so that it grows in place; else
// a copy of the rest (buf is the loop's).
func keepCut(buf []byte, used int, inCut bool, act gnet.Action) []byte {
	rest := buf[used:]
	switch {
	case act != gnet.None || len(rest) == 0:
		return nil
	case inCut:
		return buf[:copy(buf, rest)]
	}
	return append([]byte(nil), rest...)
}
