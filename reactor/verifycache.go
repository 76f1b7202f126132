package reactor

import (
	"crypto/tls"
	"crypto/x509"
	"sync"
	"time"
)

// Every TLS connection of a run goes to the same few brokers, which present the same
// certificates every time, and verifying the chain (building it and checking its signatures
// against the roots) is a quarter of a client's TLS handshake (make bench-tls: the x509
// Verify of a P-256 chain beside the handshake's own signature check, key shares and key
// schedule). The engine verifies each broker's chain once: verifiedChains does what
// crypto/tls's own verification does (the roots, the intermediates the broker sent, the
// server name, server authentication), in VerifyConnection with crypto/tls's verification
// off, and keeps the leaves it verified, by their DER bytes and the name verified, until the
// first certificate of the chain expires. A leaf it has seen is not verified again; one it
// has not, or whose chain has expired, is. The handshake's own proof that the broker holds
// the leaf's key (its CertificateVerify signature, TLS 1.2's signed key exchange) is
// crypto/tls's and is checked on every handshake whatever the configuration says.

// verifyCacheMax bounds the leaves kept: a run's brokers are a few, and a broker that
// presents a new certificate on every connection (there is none) would only make the cache
// start over.
const verifyCacheMax = 256

type verifiedChains struct {
	roots *x509.CertPool // nil: the system's

	mu     sync.Mutex
	leaves map[verifyKey]time.Time // leaf and name -> the first NotAfter of its chain
}

type verifyKey struct {
	name string
	der  string
}

// cacheVerification makes c verify the broker's chain through a verifiedChains, unless c
// does not verify (InsecureSkipVerify) or has a verification of its own.
func cacheVerification(c *tls.Config) {
	if c.InsecureSkipVerify || c.VerifyConnection != nil || c.VerifyPeerCertificate != nil {
		return
	}
	v := &verifiedChains{roots: c.RootCAs, leaves: make(map[verifyKey]time.Time)}
	c.InsecureSkipVerify = true //nolint:gosec // verified in VerifyConnection
	c.VerifyConnection = v.verify
}

// verify is a tls.Config.VerifyConnection: the chain crypto/tls would verify, from the
// cache when its leaf was verified for this name before. Its errors are crypto/tls's.
func (v *verifiedChains) verify(cs tls.ConnectionState) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return &tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.NotAuthorizedToSign, Detail: "the broker sent no certificate"}}
	}
	now := time.Now()
	k := verifyKey{name: cs.ServerName, der: string(certs[0].Raw)}
	v.mu.Lock()
	until, ok := v.leaves[k]
	v.mu.Unlock()
	if ok && now.Before(until) {
		return nil
	}
	opts := x509.VerifyOptions{Roots: v.roots, DNSName: cs.ServerName, CurrentTime: now,
		Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		return &tls.CertificateVerificationError{UnverifiedCertificates: certs, Err: err}
	}
	until = certs[0].NotAfter
	for _, c := range chains[0] {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	v.mu.Lock()
	if len(v.leaves) >= verifyCacheMax {
		clear(v.leaves)
	}
	v.leaves[k] = until
	v.mu.Unlock()
	return nil
}
