package floor

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/reactor"
)

// TestKeepalive: the keepalive floor holds its connections, exchanges every PINGREQ and
// PINGRESP of its rounds (a missing one fails it) and reports each side's CPU per exchange.
func TestKeepalive(t *testing.T) {
	res, err := Keepalive(KeepaliveConfig{Conns: 300, Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conns != 300 || res.Rounds != 3 || res.ClientUSPerPing <= 0 || res.ServerUSPerPing <= 0 {
		t.Errorf("keepalive floor: %+v, want 300 connections, 3 rounds and both sides' CPU", res)
	}
	t.Logf("µs per exchange: client %.1f, server %.1f", res.ClientUSPerPing, res.ServerUSPerPing)
	if _, err := Keepalive(KeepaliveConfig{Conns: 1 << 30, Rounds: 1}); err == nil || !strings.Contains(err.Error(), "descriptors") {
		t.Errorf("more connections than descriptors: %v, want the limit named", err)
	}
}

// TestTLS: the TLS floor handshakes with a real Mosquitto's TLS listener with the
// configuration mqblast builds (TLS 1.3, the CA given), resumes nothing (no session cache),
// and reports the handshake's CPU and the connection's; a CA that did not sign the
// broker's certificate fails it.
func TestTLS(t *testing.T) {
	tier.Integration(t)
	certs := testbroker.NewCerts(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{TLS: true, Certs: certs})
	host, _, _ := net.SplitHostPort(m.TLSAddr)
	conf := func(ca string) *tls.Config {
		c, err := reactor.TLSConfig(reactor.TLSOptions{CAFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		c.ServerName = host
		return c
	}
	res, err := TLS(TLSConfig{Addr: m.TLSAddr, Config: conf(certs.CA), Conns: 30})
	if err != nil {
		t.Fatal(err)
	}
	if res.Conns != 30 || res.Resumed != 0 || res.Version != "TLS 1.3" || res.HandshakeUS <= 0 || res.ConnUS < res.HandshakeUS/2 {
		t.Errorf("TLS floor: %+v", res)
	}
	t.Logf("handshake %.0f µs, connection %.0f µs of CPU", res.HandshakeUS, res.ConnUS)
	if _, err := TLS(TLSConfig{Addr: m.TLSAddr, Config: conf(certs.OtherCA), Conns: 1}); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("the wrong CA: %v, want the handshake refused", err)
	}
}
