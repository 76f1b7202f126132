package reactor

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TLSOptions are the command line's TLS settings (mqblast --cacert, --cert, ...).
type TLSOptions struct {
	CAFile     string   // PEM CA certificates to verify the broker with (empty: the system's)
	CertFile   string   // PEM client certificate (chain), for brokers that require one; with $clientid or $clientindex, a file per client
	KeyFile    string   // its PEM private key (a template like CertFile)
	ServerName string   // SNI and the name verified (empty: the broker's host)
	Insecure   bool     // do not verify the broker's certificate
	ALPN       []string // protocols to offer (empty: no ALPN)
	Version    string   // "" (1.2 and 1.3), "1.2" or "1.3": the only version offered
	// ClientCA and ClientCAKey are the PEM certificate and key of a CA that mints each
	// client a certificate of its own, its common name CertSubject (a template; default
	// $clientid; NoCommonName for none, with a SAN), its subject alternative names CertSAN
	// (templates separated by commas; none when empty). See ClientCerts.
	ClientCA, ClientCAKey, CertSubject string
	CertSAN                            string
}

// TLSConfig builds the tls.Config of o. Errors name the file or option and the problem.
// Per-client certificates (o.PerClientCerts) are not in it: NewClientCerts makes them.
func TLSConfig(o TLSOptions) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.ServerName, NextProtos: o.ALPN,
		InsecureSkipVerify: o.Insecure} //nolint:gosec // only when asked (--insecure)
	switch o.Version {
	case "":
	case "1.2":
		c.MaxVersion = tls.VersionTLS12
	case "1.3":
		c.MinVersion = tls.VersionTLS13
	default:
		return nil, fmt.Errorf("TLS version %q: want 1.2 or 1.3", o.Version)
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it (want -----BEGIN CERTIFICATE-----)", o.CAFile)
		}
		c.RootCAs = pool
	}
	switch {
	case o.PerClientCerts():
	case o.CertFile != "" && o.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %s", o.CertFile, o.KeyFile, oneLine(err))
		}
		c.Certificates = []tls.Certificate{cert}
	case o.CertFile != "":
		return nil, errors.New("a client certificate needs its key: give the key file too")
	case o.KeyFile != "":
		return nil, errors.New("a client key needs its certificate: give the certificate file too")
	}
	return c, nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
