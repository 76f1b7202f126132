//go:build !race

package sink

import (
	"testing"

	"github.com/mqblast/mqblast/codec"
)

// FuzzWSTraffic feeds a WebSocket connection's bytes (the upgrade request, then frames) to
// the loop in two reads cut anywhere: nothing panics, what is held is what gnet still has
// plus the cut MQTT bytes, a connection that goes on has taken all but at most a frame
// header or control frame (or an upgrade head), and nothing goes out after a close frame.
func FuzzWSTraffic(f *testing.F) {
	up := []byte(upgradeHead)
	connect := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("f"), CleanStart: true}, codec.V5)
	pub := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("a/b"), QoS: 1, ID: 3, Payload: []byte("hello")}, codec.V5)
	f.Add(up, 10)
	f.Add(append(append([]byte(nil), up...), fuzzFrames(append(connect, pub...), 7)...), 90)
	f.Add(append(append([]byte(nil), up...), fuzzFrames(connect, 3)...), 120)
	f.Add(append(append([]byte(nil), up...), 0x89, 0x82, 1, 2, 3, 4, 5, 6, 0x88, 0x80, 0, 0, 0, 0), 100)
	f.Add([]byte("POST /mqtt HTTP/1.1\r\n\r\n"), 5)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		cfg := Config{WS: true, MaxPacketSize: 4096, MaxHeld: 1 << 16}
		cfg.fill()
		h := newHandler(&cfg)
		c := &inConn{}
		s := &session{c: c, ws: &wsState{}}
		if cut < 0 || cut > len(in) {
			cut = len(in) / 2
		}
		h.flushPending = true // no event loop: nothing schedules a flush
		for _, part := range [][]byte{in[:cut], in[cut:]} {
			c.in = append(c.in, part...)
			act := h.wsTraffic(c, s)
			if int(s.held) != len(c.in)+len(s.ws.cut) {
				t.Fatalf("held %d, want gnet's %d and the cut packet's %d", s.held, len(c.in), len(s.ws.cut))
			}
			if act != 0 {
				return
			}
			if s.ws.open && len(c.in) > 14+125 {
				t.Fatalf("upgraded, %d bytes left in gnet's buffer", len(c.in))
			}
			if !s.ws.open && len(c.in) > maxUpgradeRequest {
				t.Fatalf("not upgraded, %d bytes held for the head", len(c.in))
			}
		}
	})
}

// upgradeHead is a good upgrade request for the default path.
const upgradeHead = "GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// fuzzFrames is clientFrames with a fixed key.
func fuzzFrames(p []byte, n int) []byte { return clientFrames(nil, p, n, 0x01020304) }
