package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run/spec"
)

// TestTLSRuns runs against Mosquitto's TLS and WebSocket listeners: mqtts:// with a CA and
// a client certificate (the broker requires one), wss:// in two worker processes (the
// workers get the TLS settings), a wrong CA refused with one line naming the certificate
// problem, insecure connecting anyway, and TLS settings without a TLS broker refused as a
// usage error.
func TestTLSRuns(t *testing.T) {
	t.Parallel()
	certs := testbroker.NewCerts(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{TLS: true, WSS: true, WebSocket: true, Certs: certs, RequireCert: true})
	withCert := spec.TLS{CAFile: certs.CA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey}
	conn := func(broker string, n int, hold float64, tls spec.TLS) ran {
		sp := quick("quick-conn-100", broker, sets("publishers.client_count", n, "parameters.connection_rate", 1000,
			"parameters.duration_sec", hold)...)
		sp.TLS = tls
		return doSpec(t, sp)
	}
	r := conn("mqtts://"+m.TLSAddr, 20, 0.3, withCert)
	if r.err != nil {
		t.Fatalf("mqtts: %v\n%s", r.err, r.stderr)
	}
	if c := r.res.Connections; c.Established != 20 || c.TLSHandshakes != 20 || c.TLSHandshakeUS == nil {
		t.Errorf("mqtts: %+v", c)
	}
	sp := quick("quick-conn-100", "wss://"+m.WSSAddr+"/mqtt")
	sp.TLS, sp.Duration, sp.Procs, sp.NoCheck = withCert, spec.Duration(500*time.Millisecond), 2, true
	r = doSpec(t, sp)
	if r.err != nil {
		t.Fatalf("wss, 2 workers: %v\n%s", r.err, r.stderr)
	}
	if c := r.res.Connections; c.Established != 100 || c.TLSHandshakes != 100 || c.WSUpgradeUS == nil || c.WSUpgradeUS.Count != 100 {
		t.Errorf("wss, 2 workers: %+v", c)
	}
	r = conn("mqtts://"+m.TLSAddr, 3, 0.2, spec.TLS{CAFile: certs.OtherCA, CertFile: certs.ClientCert, KeyFile: certs.ClientKey})
	if !r.failed() || !strings.Contains(r.stdout+r.said(), "certificate signed by unknown authority") {
		t.Errorf("wrong CA: %v, want a failed run with the certificate problem\nstdout %s\nstderr %s", r.err, r.stdout, r.stderr)
	}
	r = conn("mqtts://"+m.TLSAddr, 3, 0.2, spec.TLS{Insecure: true, CertFile: certs.ClientCert, KeyFile: certs.ClientKey})
	if r.err != nil || r.res.Connections.Established != 3 {
		t.Errorf("insecure: %v\n%s", r.err, r.stderr)
	}
	r = conn(m.Addr, 1, 0.1, spec.TLS{CAFile: certs.CA})
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "need a TLS broker") {
		t.Errorf("a CA without TLS: %v, want %v\n%s", r.err, fail.ErrUsage, r.stderr)
	}
}
