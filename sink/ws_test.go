package sink_test

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tlsrec"
	"github.com/mqblast/mqblast/sink"
)

// wsClient is a net.Conn that speaks MQTT over WebSocket to the sink as a client: Write
// sends b in masked binary frames of at most frame bytes each (0: one frame), with a ping
// between fragments when pingInside; Read returns the payloads of the sink's binary and
// continuation frames, keeps its pongs and returns io.EOF at its close frame (closeStatus).
type wsClient struct {
	net.Conn
	r           *bufio.Reader
	frame       int
	pingInside  bool
	rem         int // payload bytes of the current data frame still to read
	pongs       [][]byte
	closeStatus int // -1 until a close frame came
}

// upgradeRequest is a good upgrade request for path with key, offering subprotocol mqtt.
func upgradeRequest(path, key string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mqttv3.1, mqtt\r\n\r\n"
}

// httpHead writes req on nc and reads the response's head (up to its blank line) with r.
func httpHead(t testing.TB, nc net.Conn, r *bufio.Reader, req string) string {
	t.Helper()
	if _, err := nc.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var head strings.Builder
	for !strings.HasSuffix(head.String(), "\r\n\r\n") {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatalf("upgrade response after %q: %v", head.String(), err)
		}
		head.WriteByte(b)
	}
	return head.String()
}

// upgradeWS upgrades nc (TCP, or a recConn over TLS) with the key of RFC 6455's example and
// checks the response: 101, its Sec-WebSocket-Accept, subprotocol mqtt.
func upgradeWS(t testing.TB, nc net.Conn) *wsClient {
	t.Helper()
	w := &wsClient{Conn: nc, r: bufio.NewReaderSize(nc, 64<<10), closeStatus: -1}
	head := httpHead(t, nc, w.r, upgradeRequest("/mqtt", "dGhlIHNhbXBsZSBub25jZQ=="))
	if !strings.HasPrefix(head, "HTTP/1.1 101 ") || !strings.Contains(head, "\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n") ||
		!strings.Contains(head, "\r\nSec-WebSocket-Protocol: mqtt\r\n") || !strings.Contains(head, "\r\nUpgrade: websocket\r\n") {
		t.Fatalf("upgrade response:\n%s", head)
	}
	return w
}

// dialWS connects to the ws sink srv and upgrades.
func dialWS(t testing.TB, srv *sink.Server, v codec.Version) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &raw{t: t, nc: upgradeWS(t, nc), v: v}
}

// dialWSS connects to the wss sink srv over TLS (the records by tlsrec, see recConn) and upgrades.
func dialWSS(t testing.TB, srv *sink.Server, v codec.Version, tc *tls.Config) *raw {
	t.Helper()
	return &raw{t: t, nc: upgradeWS(t, dialRec(t, srv, tc)), v: v}
}

func (w *wsClient) Write(b []byte) (int, error) {
	var out []byte
	for i := 0; i < len(b) || i == 0; {
		n := len(b) - i
		if w.frame > 0 {
			n = min(n, w.frame)
		}
		op := byte(0x2)
		if i > 0 {
			op = 0x0
			if w.pingInside {
				out = maskedFrame(out, 0x89, []byte("inside"))
			}
		}
		if i+n == len(b) {
			op |= 0x80
		}
		out = maskedFrame(out, op, b[i:i+n])
		if i += n; n == 0 {
			break
		}
	}
	if _, err := w.Conn.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// maskedFrame appends a frame with first byte b0 and payload p, masked with a random key.
func maskedFrame(dst []byte, b0 byte, p []byte) []byte {
	dst = append(dst, b0)
	switch n := len(p); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n < 1<<16:
		dst = binary.BigEndian.AppendUint16(append(dst, 0x80|126), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint64(append(dst, 0x80|127), uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	dst = append(dst, key[:]...)
	for i, c := range p {
		dst = append(dst, c^key[i&3])
	}
	return dst
}

func (w *wsClient) Read(b []byte) (int, error) {
	for w.rem == 0 {
		if w.closeStatus >= 0 {
			return 0, io.EOF
		}
		var hd [10]byte
		if _, err := io.ReadFull(w.r, hd[:2]); err != nil {
			return 0, err
		}
		if hd[1]&0x80 != 0 || hd[0]&0x70 != 0 {
			return 0, fmt.Errorf("the sink sent a masked frame or a reserved bit: %x", hd[:2])
		}
		n := int(hd[1] & 0x7f)
		switch n {
		case 126:
			if _, err := io.ReadFull(w.r, hd[2:4]); err != nil {
				return 0, err
			}
			n = int(binary.BigEndian.Uint16(hd[2:]))
		case 127:
			if _, err := io.ReadFull(w.r, hd[2:10]); err != nil {
				return 0, err
			}
			n = int(binary.BigEndian.Uint64(hd[2:]))
		}
		switch op := hd[0] & 0x0f; op {
		case 0x0, 0x2:
			w.rem = n
		case 0x8, 0xA:
			p := make([]byte, n)
			if _, err := io.ReadFull(w.r, p); err != nil {
				return 0, err
			}
			if op == 0xA {
				w.pongs = append(w.pongs, p)
				continue
			}
			w.closeStatus = 0
			if n >= 2 {
				w.closeStatus = int(binary.BigEndian.Uint16(p))
			}
		default:
			return 0, fmt.Errorf("the sink sent opcode %#x", op)
		}
	}
	n, err := w.r.Read(b[:min(len(b), w.rem)])
	w.rem -= n
	return n, err
}

// recConn is a net.Conn over TLS whose records after the handshake are sealed and opened by
// tlsrec (the handshake is crypto/tls's): its Read returns tlsrec's *Error when the sink
// ends the records, so that a test sees whether a close_notify came.
type recConn struct {
	net.Conn
	rec       *tlsrec.Conn
	in, plain []byte
	err       error
}

// dialRec connects to srv over TLS with tc.
func dialRec(t testing.TB, srv *sink.Server, tc *tls.Config) *recConn {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	var kl sink.KeyLog
	cfg := tc.Clone()
	cfg.KeyLogWriter = &kl
	c := tls.Client(nc, cfg)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	cs, ss := sink.KeyLogSecrets(&kl)
	rec, err := tlsrec.New(c.ConnectionState().CipherSuite, tlsrec.Client, cs, ss)
	if err != nil {
		t.Fatal(err)
	}
	return &recConn{Conn: nc, rec: rec}
}

func (c *recConn) Write(b []byte) (int, error) {
	if _, err := c.Conn.Write(c.rec.Seal(nil, b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *recConn) Read(b []byte) (int, error) {
	for len(c.plain) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		var buf [64 << 10]byte
		n, err := c.Conn.Read(buf[:])
		if err != nil {
			return 0, err
		}
		c.in = append(c.in, buf[:n]...)
		var m int
		c.plain, m, c.err = c.rec.Open(c.plain, c.in)
		c.in = c.in[m:]
	}
	n := copy(b, c.plain)
	c.plain = c.plain[n:]
	return n, nil
}

// startWSSink starts a WebSocket sink, over TLS with certs when not nil.
func startWSSink(t testing.TB, certs *testbroker.Certs, cfg sink.Config) *sink.Server {
	t.Helper()
	cfg.WS = true
	if certs != nil {
		return startTLSSink(t, certs, "", cfg)
	}
	return startSink(t, cfg)
}

// TestWSRelay relays over ws and wss at QoS 0, 1 and 2 in both versions, payloads from empty
// to 900 KB, each byte-exact: the publisher sends its packets in frames of at most 1000
// bytes (a packet spans frames, a frame's end falls inside headers) with a ping between the
// fragments of each message, the subscriber one frame per packet; then three PUBLISH in one
// frame. Every acknowledgement is counted, every ping answered with its payload.
func TestWSRelay(t *testing.T) {
	certs := testbroker.NewCerts(t)
	tc := clientTLS(t, certs, "", "")
	sizes := []int{0, 1, 125, 126, 65535, 65536, 100 << 10, 900 << 10}
	for _, tr := range []string{"ws", "wss"} {
		t.Run(tr, func(t *testing.T) {
			var srv *sink.Server
			dialer := func(v codec.Version) *raw { return dialWS(t, srv, v) }
			if tr == "wss" {
				srv = startWSSink(t, certs, sink.Config{})
				dialer = func(v codec.Version) *raw { return dialWSS(t, srv, v, tc) }
			} else {
				srv = startWSSink(t, nil, sink.Config{})
			}
			var n, pings uint64
			for _, v := range versions {
				sub := dialer(v)
				sub.connect("sub-" + v.String())
				topic := "t/" + v.String()
				sub.subscribe(2, topic+"/#")
				pub := dialer(v)
				pw := pub.nc.(*wsClient)
				pub.connect("pub-" + v.String())
				pw.frame, pw.pingInside = 1000, true
				for q := range codec.QoS(3) {
					for _, size := range sizes {
						payload := make([]byte, size)
						_, _ = rand.Read(payload)
						pub.publishAcked(topic+"/x", q, string(payload))
						pings += uint64(max(len(codec.AppendPublish(nil, &codec.Publish{Topic: []byte(topic + "/x"), QoS: q, ID: 1, Payload: payload}, v))-1, 0) / 1000)
						sub.receiveAcked(topic+"/x", q, string(payload))
						n++
					}
				}
				pw.frame, pw.pingInside = 0, false
				var three []byte
				for i := range 3 {
					three = codec.AppendPublish(three, &codec.Publish{Topic: []byte(topic + "/three"), Payload: fmt.Appendf(nil, "m%d", i)}, v)
				}
				pub.send(three)
				for i := range 3 {
					sub.expectPublish(topic+"/three", 0, fmt.Sprintf("m%d", i))
				}
				n += 3
				sub.ping()
				if got := uint64(len(pw.pongs)); got != pings {
					t.Errorf("%v: %d pongs, want %d", v, got, pings)
				}
				for _, p := range pw.pongs {
					if string(p) != "inside" {
						t.Fatalf("pong %q, want the ping's payload", p)
					}
				}
				pw.pongs, pings = nil, 0
			}
			st := srv.Stats()
			t.Logf("%s: publish in %v, relayed %v, acked %d, ws %+v, tls handshakes %d", tr, st.PublishIn, st.Relayed, st.Acked, st.WS, st.TLS.Handshakes)
			if st.PublishInTotal() != n || st.RelayedTotal() != n || st.Acked != 2*uint64(len(versions)*len(sizes)) || st.Unacked != 0 || st.Dropped.Total() != 0 {
				t.Errorf("publish in %v, relayed %v, acked %d, unacked %d, dropped %+v; want %d in all", st.PublishIn, st.Relayed, st.Acked, st.Unacked, st.Dropped, n)
			}
			if st.WS.Upgrades != 4 || st.WS.Refused != 0 || st.WS.ProtocolErrors != 0 || st.Connected != 4 || st.ProtocolErrors != 0 {
				t.Errorf("ws %+v, connected %d, protocol errors %d: want 4 upgrades", st.WS, st.Connected, st.ProtocolErrors)
			}
			if tr == "wss" && st.TLS.Handshakes != 4 {
				t.Errorf("tls %+v: want 4 handshakes", st.TLS)
			}
		})
	}
}

// TestWSUpgradeRefused: upgrade requests that break RFC 6455 are answered with their HTTP
// error and closed, each counted; the sink then upgrades a good one.
func TestWSUpgradeRefused(t *testing.T) {
	srv := startWSSink(t, nil, sink.Config{})
	good := upgradeRequest("/mqtt", "dGhlIHNhbXBsZSBub25jZQ==")
	for _, tc := range []struct{ name, req, status string }{
		{"no key", strings.Replace(good, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n", "", 1), "400"},
		{"a short key", strings.Replace(good, "dGhlIHNhbXBsZSBub25jZQ==", "c2hvcnQ=", 1), "400"},
		{"a long key", strings.Replace(good, "dGhlIHNhbXBsZSBub25jZQ==", strings.Repeat("QUFB", 40), 1), "400"},
		{"version 8", strings.Replace(good, "Version: 13", "Version: 8", 1), "426"},
		{"no version", strings.Replace(good, "Sec-WebSocket-Version: 13\r\n", "", 1), "426"},
		{"a POST", strings.Replace(good, "GET ", "POST ", 1), "405"},
		{"no Upgrade", strings.Replace(good, "Upgrade: websocket\r\n", "", 1), "400"},
		{"HTTP/1.0", strings.Replace(good, "HTTP/1.1", "HTTP/1.0", 1), "400"},
		{"another path", strings.Replace(good, "/mqtt", "/ws", 1), "404"},
		{"MQTT, not HTTP", string(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("x"), CleanStart: true}, codec.V311)) + "\r\n\r\n", "400"},
		{"a head over 8 KiB", "GET /mqtt HTTP/1.1\r\nX: " + strings.Repeat("a", 9<<10), "431"},
	} {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		head := httpHead(t, nc, bufio.NewReader(nc), tc.req)
		if !strings.HasPrefix(head, "HTTP/1.1 "+tc.status+" ") || (tc.status == "426" && !strings.Contains(head, "\r\nSec-WebSocket-Version: 13\r\n")) {
			t.Errorf("%s: response\n%s\nwant %s", tc.name, head, tc.status)
		}
		if !(&raw{t: t, nc: nc}).closed(5 * time.Second) {
			t.Errorf("%s: the connection stayed open", tc.name)
		}
		_ = nc.Close()
	}
	c := dialWS(t, srv, codec.V5)
	c.connect("good")
	c.ping()
	if st := await(srv, func(st sink.Stats) bool { return st.Connections == 1 }); st.WS.Refused != 11 || st.WS.Upgrades != 1 || st.Connected != 1 || st.Refused != 11 {
		t.Errorf("ws %+v, connected %d, refused %d: want 11 upgrades refused, 1 made", st.WS, st.Connected, st.Refused)
	}
}

// TestWSFrames: a CONNECT in three fragments with a ping between them is taken whole and the
// ping answered with its payload; frames a client may not send (unmasked, text, a
// fragmented ping, a reserved bit, a continuation first, a close status no frame may carry)
// close the connection with a close frame 1002 or 1003, counted; a client's close frame is
// echoed with its status; the other clients are served.
func TestWSFrames(t *testing.T) {
	srv := startWSSink(t, nil, sink.Config{})
	other := dialWS(t, srv, codec.V311)
	other.connect("other")
	frag := dialWS(t, srv, codec.V311)
	fw := frag.nc.(*wsClient)
	fw.frame, fw.pingInside = 5, true
	frag.connect("fragments") // 3.1.1 CONNECT of 22 bytes: five frames
	if len(fw.pongs) != 4 || string(fw.pongs[0]) != "inside" {
		t.Errorf("pongs %q, want 4 of \"inside\"", fw.pongs)
	}
	connectMsg := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("bad"), CleanStart: true}, codec.V311)
	for _, tc := range []struct {
		name   string
		frame  []byte
		status int
	}{
		{"unmasked", append([]byte{0x82, byte(len(connectMsg))}, connectMsg...), 1002},
		{"text", maskedFrame(nil, 0x81, connectMsg), 1003},
		{"a fragmented ping", maskedFrame(nil, 0x09, []byte("x")), 1002},
		{"a reserved bit", maskedFrame(nil, 0xC2, connectMsg), 1002},
		{"a continuation first", maskedFrame(nil, 0x80, connectMsg), 1002},
		{"the client's close", maskedFrame(nil, 0x88, []byte{0x03, 0xE9}), 1001},
		{"a close with status 1005, which no frame may carry", maskedFrame(nil, 0x88, []byte{0x03, 0xED}), 1002},
	} {
		c := dialWS(t, srv, codec.V311)
		w := c.nc.(*wsClient)
		c.send(nil) // nothing: an empty binary frame
		if _, err := w.Conn.Write(tc.frame); err != nil {
			t.Fatal(err)
		}
		if !c.closed(5*time.Second) || w.closeStatus != tc.status {
			t.Errorf("%s: close status %d, want %d and the connection closed", tc.name, w.closeStatus, tc.status)
		}
	}
	frag.ping()
	other.ping()
	st := await(srv, func(st sink.Stats) bool { return st.Connections == 2 })
	if st.WS.ProtocolErrors != 6 || st.WS.CloseFrames != 2 || st.WS.Pings != 4 || st.WS.Upgrades != 9 || st.Connections != 2 {
		t.Errorf("ws %+v, %d open: want 6 frame errors, 2 close frames, 4 pings, 9 upgrades, 2 open", st.WS, st.Connections)
	}
}

// TestWSSCloseNotify: a connection the sink closes ends with a close frame and then a TLS
// close_notify: over wss after the client's DISCONNECT and at the sink's shutdown, over
// mqtts likewise without the frame.
func TestWSSCloseNotify(t *testing.T) {
	certs := testbroker.NewCerts(t)
	tc := clientTLS(t, certs, "", "")
	for _, ws := range []bool{true, false} {
		srv := startTLSSink(t, certs, "", sink.Config{WS: ws})
		dial := func(id string) *raw {
			rc := dialRec(t, srv, tc)
			c := &raw{t: t, nc: rc, v: codec.V5}
			if ws {
				c.nc = upgradeWS(t, rc)
			}
			c.connect(id)
			return c
		}
		check := func(c *raw, what string) {
			t.Helper()
			_, _, err := c.read(5 * time.Second)
			var te *tlsrec.Error
			if ws {
				w := c.nc.(*wsClient)
				if !errors.Is(err, io.EOF) || w.closeStatus != 1000 {
					t.Errorf("ws %v, %s: %v, close status %d; want a close frame 1000", ws, what, err, w.closeStatus)
				}
				_, err = w.Conn.Read(make([]byte, 1))
			}
			if !errors.As(err, &te) || te.Reason != tlsrec.ReasonClosed {
				t.Errorf("ws %v, %s: the records ended with %v, want close_notify", ws, what, err)
			}
		}
		quit := dial("quit")
		quit.send(codec.AppendDisconnect(nil, &codec.Disconnect{}, codec.V5))
		check(quit, "after DISCONNECT")
		stay := dial("stay")
		stay.ping()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		check(stay, "at shutdown")
	}
}

// TestWSHeldBudget: over WebSocket, a cut packet's bytes count against MaxHeld as over TCP:
// of three 5.0 clients each sending 900 KB of a 1 MB PUBLISH (in 64 KB frames) to a sink
// with 2 MiB, two are held and the third is told DISCONNECT Quota exceeded and closed
// (held_over); the first then completes its packet, which is relayed whole. A frame header
// claiming more than MaxHeld closes its connection with 1009 at once.
func TestWSHeldBudget(t *testing.T) {
	srv := startWSSink(t, nil, sink.Config{MaxPacketSize: 1 << 20, MaxHeld: 2 << 20})
	sub := dialWS(t, srv, codec.V5)
	sub.connect("sub")
	sub.subscribe(0, "big")
	payload := make([]byte, 1_000_000-16)
	_, _ = rand.Read(payload)
	pub := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("big"), Payload: payload}, codec.V5)
	const cut = 900_000
	cs := heldCuts(t, srv, pub, cut, 14, func(i int) *raw {
		c := dialWS(t, srv, codec.V5)
		c.connect(fmt.Sprint("cut", i))
		c.nc.(*wsClient).frame = 64 << 10
		return c
	})
	cs[0].send(pub[cut:])
	sub.expectPublish("big", 0, string(payload))
	huge := dialWS(t, srv, codec.V5)
	huge.connect("huge")
	hdr := []byte{0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0x30, 0, 0, 1, 2, 3, 4} // 3 MiB, over MaxHeld
	if _, err := huge.nc.(*wsClient).Conn.Write(hdr); err != nil {
		t.Fatal(err)
	}
	if !huge.closed(5*time.Second) || huge.nc.(*wsClient).closeStatus != 1009 {
		t.Errorf("a 3 MiB frame: close status %d, want 1009 and closed", huge.nc.(*wsClient).closeStatus)
	}
	st := await(srv, func(st sink.Stats) bool { return st.HeldBytes < cut+14 && st.WS.ProtocolErrors == 1 })
	if st.HeldOver != 1 || st.HeldBytes < cut || st.HeldBytes > cut+14 || st.Relayed[0] != 1 || st.WS.ProtocolErrors != 1 {
		t.Errorf("held_over %d, held %d (want the second client's %d), relayed %v, ws %+v", st.HeldOver, st.HeldBytes, cut, st.Relayed, st.WS)
	}
}

// BenchmarkIdleWSConnectionRSS is BenchmarkIdleConnectionRSS over WebSocket: the sink
// process's resident memory per idle connection (upgraded, connected, nothing subscribed),
// metric rss-B/conn, over 5,000 connections to a new sink process per iteration.
func BenchmarkIdleWSConnectionRSS(b *testing.B) {
	const n = 5000
	var perConn float64
	for range b.N {
		p := startChild(b, 0, envChildWS+"=1")
		before := p.stats(b).RSS
		conns := make([]net.Conn, n)
		for i := range conns {
			nc, err := net.Dial("tcp", p.addr)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = nc.Close() })
			connect := codec.AppendConnect(nil, &codec.Connect{ClientID: fmt.Appendf(nil, "idle%d", i), CleanStart: true}, codec.V311)
			if _, err := nc.Write(maskedFrame([]byte(upgradeRequest("/mqtt", "dGhlIHNhbXBsZSBub25jZQ==")), 0x82, connect)); err != nil {
				b.Fatal(err)
			}
			conns[i] = nc
		}
		for _, nc := range conns { // the 101 and the CONNACK's frame
			r := bufio.NewReader(nc)
			if _, err := r.ReadString('\n'); err != nil {
				b.Fatal(err)
			}
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if l == "\r\n" {
					break
				}
			}
			var ack [6]byte
			if _, err := io.ReadFull(r, ack[:]); err != nil || ack != [6]byte{0x82, 4, 0x20, 2, 0, 0} {
				b.Fatalf("CONNACK frame %x: %v", ack, err)
			}
		}
		after := p.stats(b)
		if after.Connections != n || after.WS.Upgrades != n {
			b.Fatalf("%d connections open, %d upgraded, want %d", after.Connections, after.WS.Upgrades, n)
		}
		perConn += float64(after.RSS-before) / n
		for _, nc := range conns {
			_ = nc.Close()
		}
	}
	b.ReportMetric(perConn/float64(b.N), "rss-B/conn")
}
