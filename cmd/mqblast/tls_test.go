package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/run/spec"
)

// TestTLSFlags: conn --ssl with --cacert, --cert and --key, and emqtt-bench's -S with
// --cacertfile, --certfile and --keyfile, give the Spec an mqtts:// broker and its TLS
// files; run's --client-cert-subject and --client-cert-san its minting; --ssl without --host is refused as a usage error (the runs over TLS and
// WebSocket, and a TLS setting without a TLS broker: run's TestTLSRuns).
func TestTLSFlags(t *testing.T) {
	want := spec.TLS{CAFile: "ca.pem", CertFile: "client.pem", KeyFile: "client.key"}
	for _, args := range [][]string{
		{"conn", "-H", "127.0.0.1", "-p", "8883", "--ssl", "--cacert", "ca.pem", "--cert", "client.pem", "--key", "client.key"},
		{"conn", "-H", "127.0.0.1", "-p", "8883", "-S", "--cacertfile", "ca.pem", "--certfile", "client.pem", "--keyfile", "client.key"},
	} {
		sp, _, err := specOf(t, args...)
		if err != nil || len(sp.Brokers) != 1 || sp.Brokers[0] != "mqtts://127.0.0.1:8883" || !cmp.Equal(sp.TLS, want) {
			t.Errorf("%v: %v, spec %s", args, err, sp.JSON())
		}
	}
	minted := spec.TLS{ClientCA: "ca.pem", ClientCAKey: "ca.key", CertSubject: "none", CertSAN: "$clientid.devices.example,urn:x:$clientid"}
	if sp, _, err := specOf(t, "run", "quick-p2p-100", "--broker", "mqtts://127.0.0.1:8883", "--client-ca", "ca.pem", "--client-ca-key", "ca.key",
		"--client-cert-subject", "none", "--client-cert-san", "$clientid.devices.example,urn:x:$clientid"); err != nil || !cmp.Equal(sp.TLS, minted) {
		t.Errorf("--client-cert-san: %v, spec %s", err, sp.JSON())
	}
	if _, _, err := specOf(t, "conn", "--ssl", "-c", "1", "--hold", "100ms"); codeOf(err) != exitUsage ||
		!strings.Contains(err.Error(), "need the broker's --host") {
		t.Errorf("--ssl without --host: %v, want a usage error", err)
	}
}
