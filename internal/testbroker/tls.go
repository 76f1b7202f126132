package testbroker

import (
	"crypto/ecdsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/mqblast/mqblast/internal/testcert"
)

// Certs are PEM files a test generated: a CA, a server certificate it signed for 127.0.0.1,
// ::1 and localhost, a client certificate it signed (for mutual TLS), and a second CA that
// signed nothing the broker has (the wrong CA). CAKey is the CA's key (to mint client
// certificates from), OtherCAKey the wrong CA's.
type Certs struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey, OtherCA string
	CAKey, OtherCAKey                                         string

	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	dir   string
}

// NewCerts writes fresh certificates (ECDSA P-256) to a temporary directory of t.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{}
	caCert, caKey := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "mqblast test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true})
	c.CA = writePEM(t, dir, "ca.pem", "CERTIFICATE", caCert.Raw)
	c.CAKey = writeKey(t, dir, "ca-key.pem", caKey)
	c.ca, c.caKey, c.dir = caCert, caKey, dir
	srv, srvKey := testcert.New(t, caCert, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	c.ServerCert = writePEM(t, dir, "server.pem", "CERTIFICATE", srv.Raw)
	c.ServerKey = writeKey(t, dir, "server-key.pem", srvKey)
	cl, clKey := testcert.New(t, caCert, caKey, &x509.Certificate{Subject: pkix.Name{CommonName: "mqblast client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	c.ClientCert = writePEM(t, dir, "client.pem", "CERTIFICATE", cl.Raw)
	c.ClientKey = writeKey(t, dir, "client-key.pem", clKey)
	other, otherKey := testcert.New(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true})
	c.OtherCA = writePEM(t, dir, "other-ca.pem", "CERTIFICATE", other.Raw)
	c.OtherCAKey = writeKey(t, dir, "other-ca-key.pem", otherKey)
	return c
}

// ClientPair writes a client certificate the CA signed for common name cn, and its key,
// as dir/name.pem and dir/name.key (dir: the certificates' own when "").
func (c *Certs) ClientPair(t testing.TB, dir, name, cn string) (cert, key string) {
	t.Helper()
	if dir == "" {
		dir = c.dir
	}
	cl, clKey := testcert.New(t, c.ca, c.caKey, &x509.Certificate{Subject: pkix.Name{CommonName: cn},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	return writePEM(t, dir, name+".pem", "CERTIFICATE", cl.Raw), writeKey(t, dir, name+".key", clKey)
}

func writeKey(t testing.TB, dir, name string, k *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name, "PRIVATE KEY", der)
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// transportListeners returns the config lines of the TLS and WebSocket listeners opts asks
// for, and sets their addresses on m.
func transportListeners(t testing.TB, opts *Options, m *Mosquitto) []string {
	t.Helper()
	var conf []string
	tlsLines := func() []string {
		c := opts.Certs
		l := []string{"cafile " + c.CA, "certfile " + c.ServerCert, "keyfile " + c.ServerKey}
		if opts.RequireCert {
			l = append(l, "require_certificate true")
		}
		if opts.IdentityAsUsername {
			l = append(l, "use_identity_as_username true")
		}
		return l
	}
	addr := func(port int) string { return net.JoinHostPort(opts.Host, fmt.Sprint(port)) }
	// libwebsockets (Mosquitto 2.0.11) binds [::] and ignores the listener's address unless
	// told the family: then it binds opts.Host, loopback only.
	wsLines := []string{"protocol websockets", "socket_domain ipv6"}
	if ip := net.ParseIP(opts.Host); ip == nil || ip.To4() != nil {
		wsLines[1] = "socket_domain ipv4"
	}
	if opts.TLS {
		p := listenPort(t, opts)
		conf = append(conf, fmt.Sprintf("listener %d %s", p, opts.Host))
		conf = append(conf, tlsLines()...)
		m.TLSAddr = addr(p)
	}
	if opts.WebSocket {
		p := listenPort(t, opts)
		conf = append(conf, fmt.Sprintf("listener %d %s", p, opts.Host))
		conf = append(conf, wsLines...)
		m.WSAddr = addr(p)
	}
	if opts.WSS {
		p := listenPort(t, opts)
		conf = append(conf, fmt.Sprintf("listener %d %s", p, opts.Host))
		conf = append(conf, wsLines...)
		conf = append(conf, tlsLines()...)
		m.WSSAddr = addr(p)
	}
	return conf
}
