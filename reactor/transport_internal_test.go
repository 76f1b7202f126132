package reactor

import (
	"bufio"
	"bytes"
	crand "crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tlsrec"
)

// tlsPair returns a loop and a connected session over TLS whose socket is one end of a
// stream socket pair, and the server's tls.Conn on the other end (handshake done the
// way the engine does it: on a worker over a blocking wireConn, then handed to the loop),
// the session keeping its tls.Conn.
func tlsPair(t testing.TB, version byte) (*loop, *session, *tls.Conn, int) {
	return tlsPairOn(t, version, RecordLayerTLSConn)
}

// tlsPairOn is tlsPair on the record layer given: RecordLayerLoop makes the handshake the
// engine's for it (TLS 1.3, the key log, reads bounded by the records) and the session
// takes a tlsrec.Conn alone, its handshake's tls.Conn dropped.
func tlsPairOn(t testing.TB, version byte, layer string) (*loop, *session, *tls.Conn, int) {
	t.Helper()
	return tlsPairKeeping(t, version, layer, false)
}

// tlsPairKeeping is tlsPairOn; with keep, on the loop's record layer, the client's session
// cache is the engine's own and the transport keeps the handshake's tls.Conn to read along
// for the tickets, as a connection the handshake workers set up.
func tlsPairKeeping(t testing.TB, version byte, layer string, keep bool) (*loop, *session, *tls.Conn, int) {
	t.Helper()
	l, s, peer := testSession(t, version)
	hs := httptest.NewUnstartedServer(nil) // only for its test certificate (127.0.0.1, example.com)
	hs.StartTLS()
	hs.Close()
	roots := x509.NewCertPool()
	roots.AddCert(hs.Certificate())
	srvCert := hs.TLS.Certificates[0]
	dup, err := unix.Dup(peer)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "peer")
	pc, err := net.FileConn(f) // another dup: the test's cleanup closes peer itself
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	srv := tls.Server(pc, &tls.Config{Certificates: []tls.Certificate{srvCert}})
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	cfg := &tls.Config{RootCAs: roots, ServerName: "example.com", MinVersion: tls.VersionTLS12}
	wc := &wireConn{fd: int(s.fd), e: l.e, deadline: time.Now().Add(10 * time.Second)}
	var kl *keyLog
	if layer == RecordLayerLoop {
		kl = &keyLog{}
		cfg.MinVersion, cfg.KeyLogWriter, wc.bounded = tls.VersionTLS13, kl, true
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1) // the broker sends tickets
		if keep {
			l.e.tlsSess = &sessionSlots{s: make([]sessionSlot, s.client+1)}
			cfg.ClientSessionCache = clientSlot{c: l.e.tlsSess, client: int(s.client)}
		}
	}
	c := tls.Client(wc, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if kl == nil {
		wc.mem, wc.out = true, &l.wire
		l.setTransport(s, &transport{sec: &secured{tls: c}})
		return l, s, srv, peer
	}
	suite := c.ConnectionState().CipherSuite
	if !wc.atRecordEnd() || !tlsrec.Supported(suite) {
		t.Fatalf("handshake ended inside a record (%d header bytes, %d of the body to come), suite %x", wc.hn, wc.body, suite)
	}
	rc, err := tlsrec.New(suite, tlsrec.Client, kl.client, kl.server)
	if err != nil {
		t.Fatal(err)
	}
	kl.zero()
	sec := &secured{rec: rc, part: wc.rest()} // the records read past the handshake with it
	l.setTransport(s, &transport{sec: sec})
	if keep {
		wc.bounded, wc.mem, sec.tls = false, true, c
		if len(sec.part) > 0 {
			l.tickets(s, sec, sec.part)
		}
	}
	return l, s, srv, peer
}

// rawRecords reads what reaches the client's socket fd raw, at least want bytes and until
// nothing more comes for 200 ms: the broker's records as the client would read them.
func rawRecords(t *testing.T, fd, want int) []byte {
	t.Helper()
	var cipher []byte
	raw := make([]byte, 64<<10)
	quiet := time.Now()
	for len(cipher) < want || time.Since(quiet) < 200*time.Millisecond {
		n, err := unix.Read(fd, raw)
		if errors.Is(err, unix.EAGAIN) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		cipher = append(cipher, raw[:n]...)
		quiet = time.Now()
	}
	return cipher
}

// TestTLSOverMemory pins what driving a tls.Conn from the loop relies on: when the
// ciphertext of a read is used up, Read returns the temporary errWouldBlock and the
// connection stays usable (crypto/tls keeps only permanent errors); a record cut across
// reads, even one byte at a time, comes out whole once its last byte is in; and what the
// loop writes through it reaches the server.
func TestTLSOverMemory(t *testing.T) {
	l, s, srv, _ := tlsPair(t, 4)
	c := l.transportOf(s).sec.tls
	wc := c.NetConn().(*wireConn)
	buf := make([]byte, 1<<10)
	if n, err := c.Read(buf); n != 0 || !errors.Is(err, errWouldBlock) {
		t.Fatalf("read with no ciphertext: %d, %v; want 0, errWouldBlock", n, err)
	}
	msg := bytes.Repeat([]byte("0123456789"), 300)
	go func() { _, _ = srv.Write(msg) }()
	cipher := rawRecords(t, int(s.fd), len(msg))
	ends := map[int]bool{} // the records' ends
	for i := 0; i+5 <= len(cipher); {
		i += 5 + (int(cipher[i+3])<<8 | int(cipher[i+4]))
		ends[i] = true
	}
	var got []byte
	for i := range cipher { // one byte per read
		had := len(got)
		wc.in = cipher[i : i+1]
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if errors.Is(err, errWouldBlock) {
				break
			}
			if err != nil {
				t.Fatalf("read after %d bytes of ciphertext: %v", i, err)
			}
		}
		if len(got) > had && !ends[i+1] {
			t.Fatalf("plaintext at byte %d of %d, inside a record", i, len(cipher))
		}
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("read %d bytes, want the %d sent", len(got), len(msg))
	}
	// The loop's write path: sealed into l.wire, written by the loop.
	if n := l.send(s, []byte("hello over tls")); n != len("hello over tls") {
		t.Fatalf("send returned %d", n)
	}
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := srv.Read(buf)
	if err != nil || string(buf[:n]) != "hello over tls" {
		t.Fatalf("server read %q, %v", buf[:n], err)
	}
}

// TestTLSReadPath: PUBLISH packets from the broker over TLS, cut anywhere by the reads,
// are handled by the loop and acknowledged over TLS.
func TestTLSReadPath(t *testing.T) {
	l, s, srv, _ := tlsPair(t, 4)
	payload := make([]byte, HeaderSize)
	PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
	p := codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: payload}, codec.V311)
	go func() {
		for range 50 {
			_, _ = srv.Write(p[:10]) // a packet cut across two records
			_, _ = srv.Write(p[10:])
		}
	}()
	acks := 0
	buf := make([]byte, 4096)
	deadline := time.Now().Add(10 * time.Second)
	for acks < 50*4 && time.Now().Before(deadline) {
		l.read(s)
		if s.state != stConnected {
			t.Fatalf("session state %d", s.state)
		}
		_ = srv.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, _ := srv.Read(buf)
		acks += n
	}
	if acks != 50*4 {
		t.Fatalf("%d bytes of PUBACK, want 200", acks)
	}
}

// TestWSFramesAgainstGorilla: gorilla/websocket as the broker. The upgrade is accepted
// (key, accept, subprotocol mqtt); the packets of one write arrive as one binary message,
// and a packet longer than a frame holds as one of its own;
// the broker's messages of every length form (7-bit, 16-bit, 64-bit), fragmented ones, and
// pings between them are read as one byte stream whatever the reads cut, pings are
// answered with their payload, and a close frame ends the connection.
func TestWSFramesAgainstGorilla(t *testing.T) {
	type result struct {
		msgs [][]byte
		pong string
		err  error
	}
	payloads := [][]byte{[]byte("a"), bytes.Repeat([]byte("b"), 125), bytes.Repeat([]byte("c"), 126),
		bytes.Repeat([]byte("d"), 65535), bytes.Repeat([]byte("e"), 65536), bytes.Repeat([]byte("f"), 70001)}
	res := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{Subprotocols: []string{"mqtt"}}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		var out result
		pong := make(chan string, 1)
		c.SetPongHandler(func(s string) error { pong <- s; return nil })
		for range 2 {
			mt, m, err := c.ReadMessage()
			if err != nil || mt != websocket.BinaryMessage {
				res <- result{err: errors.Join(err, errors.New("not a binary message"))}
				return
			}
			out.msgs = append(out.msgs, m)
		}
		for i, p := range payloads {
			if i == 3 { // a ping between messages, and a fragmented message
				_ = c.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(time.Second))
				// A fragmented binary message, frames written by hand: "frag" without FIN,
				// then a continuation frame "mented" with it.
				_, _ = c.NetConn().Write(append([]byte{0x02, 4, 'f', 'r', 'a', 'g', 0x80, 6}, "mented"...))
			}
			_ = c.WriteMessage(websocket.BinaryMessage, p)
		}
		go func() { _, _, _ = c.ReadMessage() }() // the pong handler runs in reads
		select {
		case out.pong = <-pong:
		case <-time.After(5 * time.Second):
		}
		_ = c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"))
		res <- out
	}))
	defer srv.Close()
	l, s, nc := wsSession(t, srv) // the engine's loop and session around the upgraded socket
	pkts := [][]byte{codec.AppendPingreq(nil), codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: bytes.Repeat([]byte("x"), 300)}, codec.V311),
		codec.AppendDisconnect(nil, &codec.Disconnect{}, codec.V311),
		codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: bytes.Repeat([]byte("y"), wsFrameMax)}, codec.V311)}
	if n := l.send(s, bytes.Join(pkts, nil)); n != len(bytes.Join(pkts, nil)) {
		t.Fatalf("send: %d", n)
	}
	pkts = [][]byte{bytes.Join(pkts[:3], nil), pkts[3]} // the messages the broker reads
	// Read the broker's frames with reads of every size from 1 byte up, as the loop does.
	var stream []byte
	var closed bool
	cut := 1
	buf := make([]byte, 200<<10)
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for !closed {
		n, err := nc.Read(buf[:min(cut, len(buf))])
		if err != nil {
			t.Fatalf("read: %v (stream %d bytes)", err, len(stream))
		}
		cut = cut*3 + 1
		if cut > 50000 {
			cut = 1
		}
		out, _ := l.unframe(s, l.transportOf(s), buf[:n])
		closed = l.transportOf(s).end == wsEndClose
		stream = append(stream, out...)
	}
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, m := range r.msgs {
		if !bytes.Equal(m, pkts[i]) {
			t.Errorf("message %d: %d bytes, want packet %d's %d", i, len(m), i, len(pkts[i]))
		}
	}
	want := bytes.Join(append(payloads[:3:3], append([][]byte{[]byte("fragmented")}, payloads[3:]...)...), nil)
	if !bytes.Equal(stream, want) {
		t.Errorf("stream of %d bytes, want %d", len(stream), len(want))
	}
	if r.pong != "are you there" {
		t.Errorf("pong %q, want the ping's payload", r.pong)
	}
}

// TestWSUpgradeRefusals: a response that is not 101, a wrong accept key and a missing
// subprotocol are each refused with one line naming the problem.
func TestWSUpgradeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, resp, want string
	}{
		{"404", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "not 101"},
		{"accept", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: xyz\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n", "does not match"},
		{"protocol", "", "subprotocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				resp := tc.resp
				if resp == "" { // right key, no subprotocol
					resp = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
						acceptKey(req.Header.Get("Sec-WebSocket-Key")) + "\r\n\r\n"
				}
				_, _ = c.Write([]byte(resp))
			}()
			tg, _ := parseTarget("ws://" + ln.Addr().String())
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_, err = wsUpgrade(nc, &tg, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestParseBroker: the broker address forms and their refusals.
func TestParseBroker(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:1883":  "mqtt 127.0.0.1 1883 ",
		"mqtt://h":        "mqtt h 1883 ",
		"mqtts://h":       "mqtts h 8883 ",
		"mqtts://[::1]:9": "mqtts ::1 9 ",
		"ws://h:8080":     "ws h 8080 /mqtt",
		"wss://h/ws/x":    "wss h 8084 /ws/x",
		"WSS://h:1/":      "wss h 1 /",
		"tcp://h:1":       "mqtt h 1 ",
		"http://h":        "error scheme",
		"mqtts://h/x":     "error only for ws",
		"ws://u:p@h":      "error user",
		"ws://:80/mqtt":   "error no host",
		"mqtts://h:0":     "error port",
		"h":               "error want host:port",
	} {
		sch, host, port, path, err := ParseBroker(in)
		got := sch + " " + host + " " + strconv.Itoa(port) + " " + path
		if err != nil {
			if !strings.HasPrefix(want, "error ") || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error ")) {
				t.Errorf("%q: %v, want %s", in, err, want)
			}
			continue
		}
		if got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// wsUpgrade runs the upgrade the loop does on a blocking connection: the request for tg on
// c, the response checked; it returns the bytes read after the response.
func wsUpgrade(c net.Conn, tg *target, _ []byte) ([]byte, error) {
	var raw [16]byte
	_, _ = crand.Read(raw[:])
	key := []byte(base64.StdEncoding.EncodeToString(raw[:]))
	if _, err := c.Write(appendUpgradeRequest(nil, tg, key)); err != nil {
		return nil, err
	}
	var b []byte
	buf := make([]byte, 4096)
	for {
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			return b[i+4:], checkUpgrade(b[:i+2], key, tg)
		}
		n, err := c.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return nil, fmt.Errorf("WebSocket upgrade: no response: %w", err)
		}
	}
}

// TestWSCloseOnDisconnect: gorilla/websocket as the broker. At the end of a run a WebSocket
// session sends its MQTT DISCONNECT and then a close frame with status 1000 (normal
// closure, RFC 6455 section 5.5.1) before the TCP close, so the broker reads a clean close,
// not an abnormal one.
func TestWSCloseOnDisconnect(t *testing.T) {
	type result struct {
		msg   []byte
		close error
		err   error
	}
	res := make(chan result, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up := websocket.Upgrader{Subprotocols: []string{"mqtt"}}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, m, err := c.ReadMessage()
		if err != nil {
			res <- result{err: err}
			return
		}
		_, _, cerr := c.ReadMessage()
		res <- result{msg: m, close: cerr}
	}))
	defer srv.Close()
	l, _, _ := wsSession(t, srv)
	l.e.open.Add(1)
	l.disconnectAll()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !bytes.Equal(r.msg, codec.AppendDisconnect(nil, &codec.Disconnect{}, codec.V311)) {
		t.Errorf("first message %x, want DISCONNECT", r.msg)
	}
	if !websocket.IsCloseError(r.close, websocket.CloseNormalClosure) {
		t.Errorf("after DISCONNECT the broker read %v, want a close frame with status 1000", r.close)
	}
}
