package main

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestTLSFlags drives the binary against Mosquitto's TLS and WebSocket listeners: conn
// --ssl with --cacert and a client certificate (the broker requires one), emqtt-bench's
// --certfile/--keyfile, run --broker wss:// with --procs 2 (the workers get the TLS flags),
// a wrong CA refused with one line naming the certificate problem, --insecure connecting
// anyway, and TLS flags without a TLS broker refused as a usage error.
func TestTLSFlags(t *testing.T) {
	t.Parallel()
	certs := testbroker.NewCerts(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{TLS: true, WSS: true, WebSocket: true, Certs: certs, RequireCert: true})
	host, tlsPort, _ := strings.Cut(m.TLSAddr, ":")
	r := runBin(t, "conn", "-H", host, "-p", tlsPort, "--ssl", "--cacert", certs.CA, "--cert", certs.ClientCert, "--key", certs.ClientKey,
		"-c", "20", "-R", "1000", "--hold", "300ms", "--format", "json")
	if r.code != 0 {
		t.Fatalf("conn --ssl: exit %d\n%s", r.code, r.stderr)
	}
	if c := decodeResult(t, r).Connections; c.Established != 20 || c.TLSHandshakes != 20 || c.TLSHandshakeUS == nil {
		t.Errorf("conn --ssl: %+v", c)
	}
	r = runBin(t, "conn", "-H", host, "-p", tlsPort, "-S", "--cacertfile", certs.CA, "--certfile", certs.ClientCert, "--keyfile", certs.ClientKey,
		"-c", "5", "-R", "1000", "--hold", "200ms", "--format", "json")
	if r.code != 0 || decodeResult(t, r).Connections.Established != 5 {
		t.Fatalf("conn -S --certfile --keyfile: exit %d\n%s", r.code, r.stderr)
	}
	r = runBin(t, "run", "quick-conn-100", "--broker", "wss://"+m.WSSAddr+"/mqtt", "--cacert", certs.CA, "--cert", certs.ClientCert,
		"--key", certs.ClientKey, "--duration", "500ms", "--procs", "2", "--no-check", "--format", "json")
	if r.code != 0 {
		t.Fatalf("run --broker wss:// --procs 2: exit %d\n%s", r.code, r.stderr)
	}
	if c := decodeResult(t, r).Connections; c.Established != 100 || c.TLSHandshakes != 100 || c.WSUpgradeUS == nil || c.WSUpgradeUS.Count != 100 {
		t.Errorf("run wss, 2 workers: %+v", c)
	}
	r = runBin(t, "conn", "-H", host, "-p", tlsPort, "--ssl", "--cacert", certs.OtherCA, "--cert", certs.ClientCert, "--key", certs.ClientKey,
		"-c", "3", "-R", "1000", "--hold", "200ms")
	if r.code != exitFailed || !strings.Contains(r.stdout+r.stderr, "certificate signed by unknown authority") {
		t.Errorf("wrong CA: exit %d, want %d with the certificate problem\nstdout %s\nstderr %s", r.code, exitFailed, r.stdout, r.stderr)
	}
	r = runBin(t, "conn", "-H", host, "-p", tlsPort, "--ssl", "--insecure", "--cert", certs.ClientCert, "--key", certs.ClientKey,
		"-c", "3", "-R", "1000", "--hold", "200ms", "--format", "json")
	if r.code != 0 || decodeResult(t, r).Connections.Established != 3 {
		t.Errorf("--insecure: exit %d\n%s", r.code, r.stderr)
	}
	r = runBin(t, "conn", "-H", host, "-p", strings.Split(m.Addr, ":")[1], "--cacert", certs.CA, "-c", "1", "--hold", "100ms")
	if r.code != exitUsage || !strings.Contains(r.stderr, "need a TLS broker") {
		t.Errorf("--cacert without TLS: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	r = runBin(t, "conn", "--ssl", "-c", "1", "--hold", "100ms")
	if r.code != exitUsage || !strings.Contains(r.stderr, "need the broker's --host") {
		t.Errorf("--ssl without --host: exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
}
