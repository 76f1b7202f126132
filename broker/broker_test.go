package broker

import (
	"net"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// TestBrokerAnswers: the embedded broker accepts an MQTT 3.1.1 CONNECT and a 5.0 one, on a
// loopback address and on localhost (a name, resolved as the sink and --metrics take it).
func TestBrokerAnswers(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		b, err := Start(addr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close() //nolint:errcheck
		connects(t, b.Addr())
	}
}

// connects sends a 3.1.1 and a 5.0 CONNECT to the broker at addr and wants a CONNACK with
// success for each.
func connects(t *testing.T, addr string) {
	t.Helper()
	for _, v := range []codec.Version{codec.V311, codec.V5} {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("t"), CleanStart: true}, v)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		h, body, used, err := codec.Split(buf[:n], 0)
		if err != nil || used == 0 || h.Type != codec.TypeConnack {
			t.Fatalf("v%d: %v %v %d", v, h.Type, err, used)
		}
		var ca codec.Connack
		if err := codec.DecodeConnack(body, v, &ca); err != nil || ca.Reason != 0 {
			t.Fatalf("v%d: CONNACK %+v %v", v, ca, err)
		}
		_ = c.Close()
	}
}

// TestBrokerLoopbackOnly refuses to listen beyond loopback.
func TestBrokerLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:1883", "localhost", ":0", "[::]:0"} {
		if b, err := Start(addr, nil); err == nil {
			_ = b.Close()
			t.Errorf("Start(%q) listened", addr)
		}
	}
}
