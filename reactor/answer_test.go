package reactor_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
)

// connectTo connects two clients of version v to the server at addr, with a CONNACK
// timeout of 500 ms, and returns what they saw.
func connectTo(t *testing.T, addr string, v byte) *countObs {
	t.Helper()
	obs := newObs()
	e := startEngine(t, reactor.Config{Brokers: []string{addr}, Clients: 2, Client: specs(v, 0, "", ""),
		Observer: obs, ConnackTimeout: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.Connect(ctx, nil)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	return obs
}

// TestConnackTimeoutHint: a listener that takes the CONNECT and never answers fails a
// 5.0 client as timeout with the hint that the broker may not speak MQTT 5.0 (as a
// closed connection does), a 3.1.1 client without it.
func TestConnackTimeoutHint(t *testing.T) {
	t.Parallel()
	addr := scriptServer(t, func(int, net.Conn, []byte, codec.Header, []byte) bool { return true })
	obs := connectTo(t, addr, 5)
	if obs.failed[reactor.CauseTimeout] != 2 || !strings.Contains(first(obs.examples), "no CONNACK within 500ms: the broker may not support MQTT 5.0") ||
		!strings.Contains(first(obs.examples), "-V 4") {
		t.Errorf("5.0: failed %v %q", obs.failed, obs.examples)
	}
	obs = connectTo(t, addr, 4)
	if obs.failed[reactor.CauseTimeout] != 2 || first(obs.examples) != "no CONNACK within 500ms" {
		t.Errorf("3.1.1: failed %v %q", obs.failed, obs.examples)
	}
}

// TestHTTPServerAnswers: a listener that answers the CONNECT with an HTTP response (a
// WebSocket or web port) fails the client saying it is an HTTP server, with its status
// line, not as a packet with reserved flags.
func TestHTTPServerAnswers(t *testing.T) {
	t.Parallel()
	addr := scriptServer(t, func(_ int, c net.Conn, _ []byte, h codec.Header, _ []byte) bool {
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
		return false
	})
	for _, v := range []byte{4, 5} {
		obs := connectTo(t, addr, v)
		ex := first(obs.examples)
		if obs.failed[reactor.CauseProtocol] != 2 || !strings.Contains(ex, `the broker answered in HTTP ("HTTP/1.1 400 Bad Request"): this is an HTTP server`) ||
			strings.Contains(ex, "reserved") {
			t.Errorf("version %d: failed %v %q", v, obs.failed, obs.examples)
		}
	}
}
