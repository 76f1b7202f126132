package run

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
	if l := r.res.Transport.RecordLayer; l["loop"] != 20 || len(l) != 1 {
		t.Errorf("mqtts: record layers %v, want 20 loop", l)
	}
	forced := withCert
	forced.RecordLayer = "tls.Conn"
	r = conn("mqtts://"+m.TLSAddr, 20, 0.3, forced)
	if r.err != nil || r.res.Connections.Established != 20 || r.res.Transport.RecordLayer["tls.Conn"] != 20 || len(r.res.Transport.RecordLayer) != 1 {
		t.Errorf("mqtts, record layer tls.Conn: %v, record layers %v\n%s", r.err, r.res.Transport.RecordLayer, r.stderr)
	}
	forced.RecordLayer = "kernel"
	if r = conn("mqtts://"+m.TLSAddr, 1, 0.1, forced); !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "record_layer") {
		t.Errorf("record layer kernel: %v, want %v naming tls.record_layer", r.err, fail.ErrUsage)
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
	if l := r.res.Transport.RecordLayer; l["loop"] != 100 || len(l) != 1 {
		t.Errorf("wss, 2 workers: record layers %v, want 100 loop (both workers')", l)
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

// TestTLSClientCertPerClient runs against a Mosquitto that requires client certificates
// and takes each one's common name as the client's username, with an ACL that lets a user
// read and write devices/<username>/# only. Each of 500 devices gets a certificate minted
// from the test CA for its own client id and publishes to, and receives from, its own
// topic: none refused, none lost, every certificate's minting in the result. Certificates
// minted for names that are not the clients' ids are refused by the ACL (the identity is
// the certificate's). Certificates minted with subject alternative names (for ids with text
// after the index) are taken by the broker the same way, and a TLS listener of the test's
// own is shown each client's SANs, without a common name when the subject is "none". File
// pairs named by template work for a few clients; a SAN that is no name, a CA key
// that is not the CA certificate's, or a template naming a missing file, is refused before
// any socket opens, naming the file, as an invalid input.
func TestTLSClientCertPerClient(t *testing.T) {
	t.Parallel()
	certs := testbroker.NewCerts(t)
	acl := filepath.Join(t.TempDir(), "acl")
	if err := os.WriteFile(acl, []byte("pattern readwrite devices/%u/#\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{TLS: true, Certs: certs, RequireCert: true, IdentityAsUsername: true,
		Extra: []string{"acl_file " + acl}})
	broker := "mqtts://" + m.TLSAddr
	devices := func(n int, tls spec.TLS) *Spec {
		sp := quick("quick-roundtrip-10", broker, sets("publishers.client_count", n, "publishers.id_prefix", "dev-",
			"publishers.topics", "devices/$clientid/ping", "parameters.connection_rate", 500, "parameters.duration_sec", 2,
			"parameters.publish_rate", 2, "parameters.warmup_sec", 0, "parameters.drain_sec", 1)...)
		sp.TLS, sp.NoCheck, sp.Outputs.Format = tls, true, "json"
		return sp
	}
	minted := spec.TLS{CAFile: certs.CA, ClientCA: certs.CA, ClientCAKey: certs.CAKey}

	r := doSpec(t, devices(500, minted))
	if r.err != nil {
		t.Fatalf("500 devices, minted: %v\n%s", r.err, r.stderr)
	}
	res := checkDoc(t, r)
	c, msg := res.Connections, res.Messages
	if c.Established != 500 || len(c.Refused) != 0 || c.Failed != 0 {
		t.Errorf("500 devices: established %d, refused %v, failed %v", c.Established, c.Refused, c.FailedBy)
	}
	if l := res.Transport.RecordLayer; l["loop"] != c.TLSHandshakes || len(l) != 1 {
		t.Errorf("500 devices: record layers %v of %d TLS connections, want all loop (the minted certificates' handshakes hand over too)", l, c.TLSHandshakes)
	}
	if msg.Expected == 0 || msg.Received != msg.Expected || msg.Lost != 0 || len(msg.SubscribeRefused) != 0 {
		t.Errorf("500 devices: expected %d, received %d, lost %d, subscribe refused %v", msg.Expected, msg.Received, msg.Lost, msg.SubscribeRefused)
	}
	if c.CertsMinted != 500 || c.CertMintUS == nil || c.CertMintUS.Count != 500 || c.CertMintCPUUSPerOp <= 0 {
		t.Errorf("500 devices: %d certificates minted, cert_mint_us %+v, %.1f µs CPU each; want 500 and their cost", c.CertsMinted, c.CertMintUS, c.CertMintCPUUSPerOp)
	} else {
		t.Logf("minting: p50 %d µs, p99 %d µs, max %d µs, %.1f µs CPU per certificate; TLS handshake CPU %.0f µs",
			c.CertMintUS.P50, c.CertMintUS.P99, c.CertMintUS.Max, c.CertMintCPUUSPerOp, c.TLSHandshakeCPUUSPerOp)
	}
	key, err := os.ReadFile(certs.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(key)), "\n")
	secret := lines[len(lines)-2] // the key's own bits (the first line starts as every P-256 key's)
	if strings.Contains(r.stdout, secret) || strings.Contains(r.stderr, secret) || !strings.Contains(r.stdout, certs.CAKey) {
		t.Error("the CA's private key is in the run's output, or the result does not name its file")
	}

	// The broker's identity is the certificate's: names other than the client ids are
	// users the ACL does not let at devices/<client id> (Mosquitto grants a 3.1.1
	// SUBSCRIBE it denies and delivers nothing).
	other := minted
	other.CertSubject = "nobody-$clientindex"
	r = doSpec(t, devices(5, other))
	if r.res == nil || r.res.Connections.Established != 5 || r.res.Messages.Expected == 0 || r.res.Messages.Received != 0 {
		t.Errorf("certificates for other names: %v, want 5 connected and none of their messages let through by the ACL\n%s", r.err, r.stderr)
	}

	// Subject alternative names beside the common name, for ids with text after the
	// index: the broker takes every certificate (its CA signed it, its CN is the client's
	// id) and the ACL lets each device at its own topic.
	withSAN := minted
	withSAN.CertSAN = "$clientid.devices.test,urn:mqblast:$clientid,$clientid@devices.test,10.9.0.$clientindex"
	sp := devices(20, withSAN)
	sp.Scenario.Set = append(sp.Scenario.Set, sets("publishers.client_id", "dev-$clientindex-eu")...)
	r = doSpec(t, sp)
	if r.err != nil {
		t.Fatalf("20 devices, minted with SANs: %v\n%s", r.err, r.stderr)
	}
	if c, msg := checkDoc(t, r).Connections, r.res.Messages; c.Established != 20 || c.CertsMinted != 20 || len(c.Refused) != 0 ||
		msg.Expected == 0 || msg.Received != msg.Expected || msg.Lost != 0 {
		t.Errorf("20 devices, minted with SANs: established %d, minted %d, refused %v; expected %d, received %d, lost %d",
			c.Established, c.CertsMinted, c.Refused, msg.Expected, msg.Received, msg.Lost)
	} else {
		t.Logf("20 devices dev-K-eu minted with SANs %s: established %d, expected %d, received %d, lost %d",
			withSAN.CertSAN, c.Established, msg.Expected, msg.Received, msg.Lost)
	}

	// What a broker is shown: a TLS listener of the test's own that asks for a client
	// certificate records each one presented in a run's handshakes (and closes: the run's
	// clients fail after it), minted without a common name, its SANs naming the client.
	srv, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	shown := map[string]*x509.Certificate{}
	tln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{srv}, ClientAuth: tls.RequireAnyClientCert,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			c, err := x509.ParseCertificate(raw[0])
			if err == nil {
				mu.Lock()
				shown[c.SerialNumber.String()] = c
				mu.Unlock()
			}
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer tln.Close()
	go func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); _ = c.Close() }()
		}
	}()
	noCN := withSAN
	noCN.CertSubject = "none"
	sp = devices(3, noCN)
	sp.Brokers = []string{"mqtts://" + tln.Addr().String()}
	sp.Scenario.Set = append(sp.Scenario.Set, sets("publishers.client_id", "dev-$clientindex-eu", "parameters.duration_sec", 1)...)
	r = doSpec(t, sp)
	mu.Lock()
	var got []string
	for _, c := range shown {
		var uris []string
		for _, u := range c.URIs {
			uris = append(uris, u.String())
		}
		got = append(got, fmt.Sprintf("CN %q DNS %v URI %v email %v IP %v", c.Subject.CommonName, c.DNSNames, uris, c.EmailAddresses, c.IPAddresses))
	}
	mu.Unlock()
	sort.Strings(got)
	var want []string
	for k := range 3 {
		want = append(want, fmt.Sprintf(`CN "" DNS [dev-%d-eu.devices.test] URI [urn:mqblast:dev-%d-eu] email [dev-%d-eu@devices.test] IP [10.9.0.%d]`, k, k, k, k))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("certificates shown to the listener:\n%s\nwant\n%s\n(run: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), r.err)
	} else {
		t.Logf("certificates shown to a TLS listener:\n%s", strings.Join(got, "\n"))
	}

	dir := t.TempDir()
	for i := range 3 {
		certs.ClientPair(t, dir, fmt.Sprintf("dev-%d", i), fmt.Sprintf("dev-%d", i))
	}
	files := spec.TLS{CAFile: certs.CA, CertFile: filepath.Join(dir, "$clientid.pem"), KeyFile: filepath.Join(dir, "$clientid.key")}
	r = doSpec(t, devices(3, files))
	if r.err != nil {
		t.Fatalf("3 devices, certificate files: %v\n%s", r.err, r.stderr)
	}
	if c, msg := r.res.Connections, r.res.Messages; c.Established != 3 || msg.Expected == 0 || msg.Received != msg.Expected || c.CertsMinted != 0 {
		t.Errorf("3 devices, certificate files: established %d, expected %d, received %d, minted %d", c.Established, msg.Expected, msg.Received, c.CertsMinted)
	}

	// In a scenario's groups: devices minted from the CA, gateways with files of their own
	// (the scenario's server gives theirs), in two worker processes, which read the CA's
	// key from its file.
	for i := range 2 {
		certs.ClientPair(t, dir, fmt.Sprintf("gw-%d", i), fmt.Sprintf("gw-%d", i))
	}
	doc := fmt.Sprintf(`{"name": "fleet", "groups": [
	  {"name": "devices", "behaviours": "round-trip", "client_count": 20, "id_prefix": "dev-", "qos": 1,
	   "topics": "devices/$clientid/ping", "server": {"client_ca": %q, "client_ca_key": %q}},
	  {"name": "gateways", "behaviours": "round-trip", "client_count": 2, "id_prefix": "gw-", "qos": 1,
	   "topics": "devices/gw-$clientindex/ping"}],
	  "server": {"cert": %q, "key": %q},
	  "parameters": {"duration_sec": 1.5, "warmup_sec": 0, "drain_sec": 1, "publish_rate": 2, "connection_rate": 500}}`,
		certs.CA, certs.CAKey, filepath.Join(dir, "$clientid.pem"), filepath.Join(dir, "$clientid.key"))
	sp = &Spec{Scenario: spec.Scenario{Name: "fleet.json", File: json.RawMessage(doc)}, Brokers: []string{broker},
		TLS: spec.TLS{CAFile: certs.CA}, NoCheck: true, Procs: 2}
	r = doSpec(t, sp)
	if r.err != nil {
		t.Fatalf("groups: %v\n%s", r.err, r.stderr)
	}
	if c, msg := r.res.Connections, r.res.Messages; c.Established != 22 || msg.Expected == 0 || msg.Received != msg.Expected || c.CertsMinted != 20 {
		t.Errorf("groups: established %d, expected %d, received %d, minted %d (want 22, all, 20)", c.Established, msg.Expected, msg.Received, c.CertsMinted)
	}

	// Refused before any socket: nothing connects to a listener of the test's own.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	bad := func(what string, tls spec.TLS, want string) {
		t.Helper()
		sp := devices(3, tls)
		sp.Brokers = []string{"mqtts://" + ln.Addr().String()}
		r := doSpec(t, sp)
		msg := ""
		if r.err != nil {
			msg = r.err.Error()
		}
		if !errors.Is(r.err, fail.ErrInvalid) || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want an invalid input naming %s in one line", what, msg, want)
		}
	}
	bad("a CA key that is not the CA's", spec.TLS{CAFile: certs.CA, ClientCA: certs.CA, ClientCAKey: certs.OtherCAKey}, certs.OtherCAKey)
	bad("a SAN that is no name", spec.TLS{CAFile: certs.CA, ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSAN: "$clientid..devices"},
		`tls.client_cert_san: client certificate SAN "dev-0..devices": is not a DNS name`)
	bad("an empty SAN", spec.TLS{CAFile: certs.CA, ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSAN: "a.test,,b.test"},
		`tls.client_cert_san: client certificate SAN "a.test,,b.test": an empty name between commas`)
	bad("no common name and no SAN", spec.TLS{CAFile: certs.CA, ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSubject: "none"},
		`tls.client_cert_subject: a certificate subject "none" (no common name) needs a SAN`)
	bad("a certificate template naming a missing file", spec.TLS{CAFile: certs.CA, CertFile: filepath.Join(dir, "x-$clientid.pem"),
		KeyFile: filepath.Join(dir, "$clientid.key")}, filepath.Join(dir, "x-dev-0.pem"))
	sp = &Spec{Scenario: spec.Scenario{Name: "fleet.json", File: json.RawMessage(strings.Replace(doc, `"server": {"client_ca"`,
		`"server": {"client_cert_san": "$clientid.x,mailto@", "client_ca"`, 1))},
		Brokers: []string{"mqtts://" + ln.Addr().String()}, TLS: spec.TLS{CAFile: certs.CA}, NoCheck: true}
	r = doSpec(t, sp)
	if msg := fmt.Sprint(r.err); !errors.Is(r.err, fail.ErrInvalid) ||
		!strings.Contains(msg, `fleet.json: groups[0].server.client_cert_san: client certificate SAN "mailto@": is not an email address`) || strings.Contains(msg, "\n") {
		t.Errorf("a scenario's SAN that is no name: %q, want an invalid input naming the field in one line", msg)
	}
	sp = &Spec{Scenario: spec.Scenario{Name: "fleet.json", File: json.RawMessage(strings.Replace(doc, certs.CAKey, certs.OtherCAKey, 1))},
		Brokers: []string{"mqtts://" + ln.Addr().String()}, TLS: spec.TLS{CAFile: certs.CA}, NoCheck: true}
	r = doSpec(t, sp)
	if msg := fmt.Sprint(r.err); !errors.Is(r.err, fail.ErrInvalid) || !strings.Contains(msg, "fleet.json: groups[0].server.client_ca_key: ") ||
		!strings.Contains(msg, certs.OtherCAKey) || strings.Contains(msg, "\n") {
		t.Errorf("a scenario's CA key that is not its CA's: %q, want an invalid input naming the file, the field and the key's file", msg)
	} else {
		t.Logf("refused: %s", msg)
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Millisecond))
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Error("a connection was opened for a refused input")
	}
}
