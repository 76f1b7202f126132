package reactor_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// TestWSBrokerFrameRules: gorilla/websocket as the broker. After the CONNACK it sends one
// frame that breaks a rule of RFC 6455 or MQTT's for WebSocket, written raw on the socket;
// the client fails the WebSocket connection at that frame's header (not when its bytes
// come, not as an MQTT error): it reports websocket_error with a line naming the frame and
// sends a close frame with the RFC's status before its TCP close. A close frame from the
// broker is answered with a close frame echoing its status (RFC 6455 section 5.5.1).
func TestWSBrokerFrameRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames []byte // raw, after the CONNACK; nil: a close frame 1001 written by gorilla
		status int    // the close status the client answers with
		cause  reactor.Cause
		want   string // in the client's report
	}{
		// [MQTT-6.0.0-1]: MQTT goes in binary frames; any other data frame closes.
		{"text", []byte{0x81, 2, 'h', 'i'}, websocket.CloseUnsupportedData, reactor.CauseWebSocket, "text frame"},
		// RFC 6455 section 5.2: RSV1-3 must be 0 unless an extension says otherwise.
		{"rsv1", []byte{0xc2, 0}, websocket.CloseProtocolError, reactor.CauseWebSocket, "reserved bit"},
		{"rsv3", []byte{0x92, 0}, websocket.CloseProtocolError, reactor.CauseWebSocket, "reserved bit"},
		// Section 5.4: a continuation frame continues a message; there is none.
		{"stray-continuation", []byte{0x80, 2, 0x00, 0x00}, websocket.CloseProtocolError, reactor.CauseWebSocket, "continuation"},
		// Section 5.4: a new data frame inside a fragmented message.
		{"interleaved", []byte{0x02, 1, 0xd0, 0x82, 1, 0x00}, websocket.CloseProtocolError, reactor.CauseWebSocket, "inside a fragmented"},
		// A length no MQTT stream can need (2^62), refused at the header: its bytes never come.
		{"2^62", []byte{0x82, 127, 0x40, 0, 0, 0, 0, 0, 0, 0}, websocket.CloseMessageTooBig, reactor.CauseWebSocket, "4611686018427387904 bytes"},
		// Section 5.2: the length's most significant bit must be 0.
		{"2^63", []byte{0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0}, websocket.CloseProtocolError, reactor.CauseWebSocket, "most significant bit"},
		// Section 5.1: a server never masks.
		{"masked", []byte{0x82, 0x80, 1, 2, 3, 4}, websocket.CloseProtocolError, reactor.CauseWebSocket, "masked"},
		{"close", nil, websocket.CloseGoingAway, reactor.CauseClosed, "closed by the broker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan error, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				up := websocket.Upgrader{Subprotocols: []string{"mqtt"}}
				c, err := up.Upgrade(w, r, nil)
				if err != nil {
					got <- err
					return
				}
				defer c.Close()
				_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, _, err := c.ReadMessage(); err != nil { // the CONNECT
					got <- err
					return
				}
				_ = c.WriteMessage(websocket.BinaryMessage, codec.AppendConnack(nil, &codec.Connack{}, codec.V311))
				if tc.frames == nil {
					_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "restart"), time.Now().Add(time.Second))
				} else {
					_, _ = c.NetConn().Write(tc.frames)
				}
				c.SetCloseHandler(func(int, string) error { return nil }) // no reply of gorilla's own
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						got <- err
						return
					}
				}
			}))
			defer srv.Close()
			obs := newObs()
			e := startEngine(t, reactor.Config{Brokers: []string{"ws://" + strings.TrimPrefix(srv.URL, "http://") + "/mqtt"},
				Clients: 1, Client: specs(4, 0, "", ""), Observer: obs})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.Connect(ctx, nil); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the broker read nothing from the client within 10 s after the frame")
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != tc.status {
				t.Errorf("the broker read %v, want a close frame with status %d", err, tc.status)
			}
			// The loop counts the connection closed (Open) just before it reports the drop
			// to the observer: wait for both.
			reported := func() bool { obs.mu.Lock(); defer obs.mu.Unlock(); return len(obs.examples) > 0 }
			deadline := time.Now().Add(5 * time.Second)
			for (e.Open() != 0 || !reported()) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if obs.dropped[tc.cause] != 1 || len(obs.examples) != 1 || !strings.Contains(obs.examples[0], tc.want) {
				t.Errorf("dropped %v %q, want one %v with %q", obs.dropped, obs.examples, tc.cause, tc.want)
			}
		})
	}
}

// TestWSUpgradeNotHTTP: a listener that answers the upgrade request with something that
// is not HTTP (an SSH banner) and keeps the connection open fails the connection at once as
// websocket_error, the reply's first bytes quoted, not when the CONNACK timeout ends it.
func TestWSUpgradeNotHTTP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n\x00\x1b"))
		<-done
	}()
	obs := newObs()
	e := startEngine(t, reactor.Config{Brokers: []string{"ws://" + ln.Addr().String() + "/mqtt"},
		Clients: 1, Client: specs(4, 0, "", ""), Observer: obs, ConnackTimeout: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_ = e.Connect(ctx, nil)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := `"SSH-2.0-OpenSSH_9.2\r\n\x00\x1b"`
	if obs.failed[reactor.CauseWebSocket] != 1 || len(obs.examples) != 1 || !strings.Contains(obs.examples[0], want) {
		t.Fatalf("after %v: failed %v %q, want one websocket_error quoting %s", time.Since(start), obs.failed, obs.examples, want)
	}
}
