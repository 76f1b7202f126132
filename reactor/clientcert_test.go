package reactor_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/reactor"
)

// TestClientCerts: a certificate minted from the CA has the subject's template expanded as
// its common name, a fresh ECDSA P-256 key, and verifies against the CA for client
// authentication; files named by template are read per client; a pair without a
// placeholder is read once; a CA key that is not the CA's, a certificate that is not a
// CA's, and a template naming a missing file are refused in one line naming the files.
func TestClientCerts(t *testing.T) {
	t.Parallel()
	certs := testbroker.NewCerts(t)
	cc, err := reactor.NewClientCerts(reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSubject: "site-$clientindex:3/$clientid"})
	if err != nil || !cc.Minting() {
		t.Fatalf("NewClientCerts: %v", err)
	}
	roots := x509.NewCertPool()
	ca := parse(t, certs.CA)
	roots.AddCert(ca)
	var serials []string
	for _, k := range []int{7, 8} {
		c, err := cc.Certificate("dev-x", k)
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if want := "site-00" + string(rune('0'+k)) + "/dev-x"; leaf.Subject.CommonName != want {
			t.Errorf("common name %q, want %q", leaf.Subject.CommonName, want)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("minted certificate: %v", err)
		}
		key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
		if !ok || key.Curve != elliptic.P256() || !key.PublicKey.Equal(leaf.PublicKey) {
			t.Errorf("key %T, want the certificate's ECDSA P-256 key", c.PrivateKey)
		}
		serials = append(serials, leaf.SerialNumber.String())
	}
	if serials[0] == serials[1] {
		t.Errorf("two certificates with serial %s", serials[0])
	}

	// Subject alternative names: each template expanded, by its form a URI, an email
	// address, an IP address or a DNS name; with subject "none", no common name.
	san, err := reactor.NewClientCerts(reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSubject: reactor.NoCommonName,
		CertSAN: "$clientid.devices.example, urn:mqblast:$clientid,spiffe://fleet/dev/$clientindex:3,$clientid@fleet.example,10.1.0.$clientindex,fd00::$clientindex"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := san.Certificate("dev-7-eu", 7)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, u := range leaf.URIs {
		uris = append(uris, u.String())
	}
	got := fmt.Sprintf("CN %q DNS %v URI %v email %v IP %v", leaf.Subject.CommonName, leaf.DNSNames, uris, leaf.EmailAddresses, leaf.IPAddresses)
	if want := `CN "" DNS [dev-7-eu.devices.example] URI [urn:mqblast:dev-7-eu spiffe://fleet/dev/007] email [dev-7-eu@fleet.example] IP [10.1.0.7 fd00::7]`; got != want {
		t.Errorf("minted with SANs: %s\nwant %s", got, want)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("minted certificate with SANs: %v", err)
	}
	for tmpl, want := range map[string]string{
		"$clientid a.example": `client certificate SAN "dev-7-eu a.example": holds a space`,
		"dev_$clientid..x":    `client certificate SAN "dev_dev-7-eu..x": is not a DNS name`,
		"@$clientid":          `client certificate SAN "@dev-7-eu": is not an email address`,
	} {
		cc, err := reactor.NewClientCerts(reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSAN: tmpl})
		if err == nil {
			_, err = cc.Certificate("dev-7-eu", 7)
		}
		if err == nil || !errors.Is(err, reactor.ErrCertSAN) || err.Error() != want && !strings.HasPrefix(err.Error(), want) {
			t.Errorf("SAN %q: %v, want %q", tmpl, err, want)
		}
	}

	dir := t.TempDir()
	certs.ClientPair(t, dir, "dev-0", "dev-0")
	files, err := reactor.NewClientCerts(reactor.TLSOptions{CertFile: filepath.Join(dir, "$clientid.pem"), KeyFile: filepath.Join(dir, "$clientid.key")})
	if err != nil || files.Minting() {
		t.Fatalf("files: %v", err)
	}
	if c, err := files.Certificate("dev-0", 0); err != nil || commonName(t, c.Certificate[0]) != "dev-0" {
		t.Errorf("dev-0's files: %v", err)
	}
	if _, err := files.Certificate("dev-1", 1); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "dev-1.pem")) {
		t.Errorf("a missing file: %v, want its name", err)
	}
	fixed, err := reactor.NewClientCerts(reactor.TLSOptions{CertFile: certs.ClientCert, KeyFile: certs.ClientKey})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := fixed.Certificate("a", 0)
	b, _ := fixed.Certificate("b", 1)
	if a == nil || a != b {
		t.Error("a pair without a placeholder is not read once for every client")
	}

	refused := func(what string, o reactor.TLSOptions, want ...string) {
		t.Helper()
		_, err := reactor.NewClientCerts(o)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		for _, w := range want {
			if !strings.Contains(msg, w) || strings.Contains(msg, "\n") || strings.Contains(msg, "PRIVATE KEY") {
				t.Errorf("%s: %q, want one line with %q", what, msg, w)
			}
		}
	}
	refused("another CA's key", reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.OtherCAKey}, certs.OtherCAKey, certs.CA, "does not match")
	refused("a server certificate as the CA", reactor.TLSOptions{ClientCA: certs.ServerCert, ClientCAKey: certs.ServerKey}, certs.ServerCert, "not a CA certificate")
	refused("a CA without its key", reactor.TLSOptions{ClientCA: certs.CA}, certs.CA, "private key")
	refused("a subject without a CA", reactor.TLSOptions{CertSubject: "$clientid"}, "minted")
	refused("a SAN without a CA", reactor.TLSOptions{CertSAN: "$clientid.example"}, "minted")
	refused("no common name and no SAN", reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSubject: "none"}, "needs a SAN")
	refused("an empty SAN", reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertSAN: "a.example,,b.example"}, "an empty name between commas")
	refused("minted and given", reactor.TLSOptions{ClientCA: certs.CA, ClientCAKey: certs.CAKey, CertFile: "c.pem", KeyFile: "c.key"}, "not both")
}

// parse reads the certificate of a PEM file.
func parse(t *testing.T, file string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", file)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// commonName is the common name of the certificate der.
func commonName(t *testing.T, der []byte) string {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c.Subject.CommonName
}
