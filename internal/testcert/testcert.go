// Package testcert makes X.509 certificates for tests: ECDSA P-256 keys, a template signed
// by a parent or by itself, valid from an hour ago for a day. It owns no files and no
// listeners (internal/testbroker writes the PEM files a broker reads), and imports nothing
// of mqblast's, so that any package's internal tests can use it.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"math/big"
	"sync/atomic"
	"testing"
	"time"
)

var serial atomic.Int64

// New creates tmpl (its serial number and validity set here) signed by parent with
// parentKey, or self-signed when parent is nil, and returns it parsed with its new key.
func New(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}
