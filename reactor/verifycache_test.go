package reactor

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testcert"
)

// TestVerifiedChains: the cached verification refuses what crypto/tls refuses (a chain to
// another CA, a name the certificate is not for, no certificate) with crypto/tls's errors,
// and verifies a leaf once: a leaf it verified passes again without its chain being built
// (the roots swapped for a CA that did not sign it do not matter), until the chain's expiry
// it recorded has passed, when it is verified again (and then refused by those roots).
func TestVerifiedChains(t *testing.T) {
	ca, caKey := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true})
	leaf, _ := testcert.New(t, ca, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "broker"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	other, _ := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "other CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true})
	pool := func(c *x509.Certificate) *x509.CertPool { p := x509.NewCertPool(); p.AddCert(c); return p }
	c := &tls.Config{RootCAs: pool(ca)}
	cacheVerification(c)
	if !c.InsecureSkipVerify || c.VerifyConnection == nil {
		t.Fatal("cacheVerification did not take the verification over")
	}
	v := &verifiedChains{roots: pool(ca), leaves: map[verifyKey]time.Time{}}
	cs := func(name string, certs ...*x509.Certificate) tls.ConnectionState {
		return tls.ConnectionState{ServerName: name, PeerCertificates: certs}
	}
	var hn x509.HostnameError
	if err := v.verify(cs("localhost.invalid", leaf)); !errors.As(err, &hn) {
		t.Errorf("wrong name: %v, want a HostnameError", err)
	}
	var ve *tls.CertificateVerificationError
	if err := v.verify(cs("127.0.0.1")); !errors.As(err, &ve) {
		t.Errorf("no certificate: %v, want a CertificateVerificationError", err)
	}
	if len(v.leaves) != 0 {
		t.Fatalf("refused chains were kept: %v", v.leaves)
	}
	if err := v.verify(cs("127.0.0.1", leaf)); err != nil {
		t.Fatalf("the broker's chain: %v", err)
	}
	k := verifyKey{name: "127.0.0.1", der: string(leaf.Raw)}
	if until := v.leaves[k]; !until.Equal(leaf.NotAfter) {
		t.Errorf("kept until %v, want the leaf's NotAfter %v", until, leaf.NotAfter)
	}
	v.roots = pool(other)
	if err := v.verify(cs("127.0.0.1", leaf)); err != nil {
		t.Errorf("a verified leaf was verified again: %v", err)
	}
	if err := v.verify(cs("localhost", leaf)); err == nil {
		t.Error("a leaf verified for another name passed without its chain")
	}
	v.leaves[k] = time.Now().Add(-time.Second)
	var ua x509.UnknownAuthorityError
	if err := v.verify(cs("127.0.0.1", leaf)); !errors.As(err, &ua) || !errors.As(err, &ve) {
		t.Errorf("an expired entry: %v, want the chain verified again and refused (unknown authority)", err)
	}
	for range verifyCacheMax + 10 {
		v.leaves[verifyKey{name: time.Now().String()}] = time.Now().Add(time.Hour)
	}
	v.roots = pool(ca)
	if err := v.verify(cs("127.0.0.1", leaf)); err != nil || len(v.leaves) > verifyCacheMax {
		t.Errorf("a full cache: %v, %d leaves kept (at most %d)", err, len(v.leaves), verifyCacheMax)
	}
}
