package reactor

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Client certificates per client. A broker that makes each device a user of its own
// (Mosquitto's use_identity_as_username, an ACL per user) needs a certificate per client:
// read from a file pair named by template (--cert certs/$clientid.pem --key
// certs/$clientid.key), or minted by mqblast from a CA the user gives (--client-ca,
// --client-ca-key), with the subject's common name from a template (default $clientid).
//
// Either way the certificate is made in crypto/tls's GetClientCertificate, on the handshake
// worker, when the broker asks for it: a resumed session, which needs none, makes none, and
// the certificate and its key live only as long as the handshake holds them. A minted key
// is ECDSA P-256 and is never written anywhere; the CA's key is read from its file in each
// process that mints.

// Placeholders of the certificate templates: the client's id and its 0-based index in its
// group, as in topic templates.
const (
	certPlaceholderID    = "$clientid"
	certPlaceholderIndex = "$clientindex"
)

// maxCertPad is the widest zero padding of $clientindex:W (the scenario's MaxIndexPad).
const maxCertPad = 18

// expandCert returns certificate template t with $clientid as id and $clientindex as
// index, zero-padded to W digits where it is followed by ":W", as in the scenario's
// templates.
func expandCert(t, id string, index int) string {
	var b strings.Builder
	for {
		i := strings.Index(t, "$client")
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		t = t[i:]
		switch {
		case strings.HasPrefix(t, certPlaceholderIndex):
			t = t[len(certPlaceholderIndex):]
			pad, n := 0, 0
			if len(t) > 1 && t[0] == ':' && t[1] >= '0' && t[1] <= '9' {
				for n = 1; n < len(t) && t[n] >= '0' && t[n] <= '9'; n++ {
					pad = min(pad*10+int(t[n]-'0'), maxCertPad)
				}
			}
			num := strconv.Itoa(index)
			b.WriteString(strings.Repeat("0", max(pad-len(num), 0)))
			b.WriteString(num)
			t = t[n:]
		case strings.HasPrefix(t, certPlaceholderID):
			b.WriteString(id)
			t = t[len(certPlaceholderID):]
		default:
			b.WriteByte(t[0])
			t = t[1:]
		}
	}
}

// DefaultCertSubject is the minted certificate's common name when none is given.
const DefaultCertSubject = certPlaceholderID

// NoCommonName as the subject template mints certificates without a common name, their
// identity in their subject alternative names alone.
const NoCommonName = "none"

// ErrCertSAN is the error of a subject alternative name that cannot be minted.
var ErrCertSAN = errors.New("client certificate SAN")

// sanNames are the subject alternative names of one minted certificate.
type sanNames struct {
	dns, email []string
	ip         []net.IP
	uri        []*url.URL
}

// add adds name, a SAN template expanded, to n: a URI when it holds "://" or begins with
// "urn:", an email address when it holds "@", an IP address when it parses as one, else a DNS name.
func (n *sanNames) add(name string) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrCertSAN, name, fmt.Sprintf(format, a...))
	}
	switch {
	case name == "":
		return fmt.Errorf("%w: empty once expanded", ErrCertSAN)
	case strings.ContainsAny(name, " \t\r\n"):
		return bad("holds a space")
	case strings.Contains(name, "://") || strings.HasPrefix(strings.ToLower(name), "urn:"):
		u, err := url.Parse(name)
		if err != nil || u.Scheme == "" || !u.IsAbs() {
			return bad("is not an absolute URI (want scheme://... or urn:...)")
		}
		n.uri = append(n.uri, u)
	case strings.Contains(name, "@"):
		local, domain, _ := strings.Cut(name, "@")
		if local == "" || domain == "" || strings.Contains(domain, "@") {
			return bad("is not an email address (want local@domain)")
		}
		n.email = append(n.email, name)
	case net.ParseIP(name) != nil:
		n.ip = append(n.ip, net.ParseIP(name))
	default:
		if len(name) > 253 {
			return bad("is longer than a DNS name's 253 bytes")
		}
		for _, label := range strings.Split(name, ".") {
			if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_*") != "" {
				return bad("is not a DNS name (want labels of letters, digits and '-', or a URI with :// or urn:, an email with @, an IP address)")
			}
		}
		n.dns = append(n.dns, name)
	}
	return nil
}

// mintValidity is how long a minted certificate is valid, from an hour before it is made
// (the broker's clock may lag).
const mintValidity = 7 * 24 * time.Hour

// ClientCerts gives each client its own certificate: from a file pair named by template,
// or minted from a CA; or one pair for all of them (a scenario group's). Safe for
// concurrent use.
type ClientCerts struct {
	fixed             *tls.Certificate // one pair for every client (no template)
	certTmpl, keyTmpl string           // file templates (mint: "")
	subject           string           // the minted certificate's common name template
	san               []string         // its subject alternative names' templates
	ca                *x509.Certificate
	caKey             crypto.Signer
}

// PerClientCerts reports whether o gives each client a certificate of its own: file names
// with a placeholder, or a CA to mint from.
func (o TLSOptions) PerClientCerts() bool {
	return o.ClientCA != "" || o.ClientCAKey != "" || templated(o.CertFile) || templated(o.KeyFile)
}

func templated(s string) bool { return strings.Contains(s, "$client") }

// NewClientCerts returns the client certificates of o's CertFile, KeyFile, ClientCA,
// ClientCAKey and CertSubject (nil, nil when it gives none): a pair without a placeholder
// is read once; a CA's certificate and key are read and checked to belong together and to
// be a CA's. Errors are one line naming the file or option.
func NewClientCerts(o TLSOptions) (*ClientCerts, error) {
	if o.ClientCA == "" && o.ClientCAKey == "" {
		switch {
		case o.CertSubject != "":
			return nil, errors.New("a certificate subject is for minted certificates: give the CA to mint them with (its certificate and key files) too")
		case o.CertSAN != "":
			return nil, errors.New("a certificate SAN is for minted certificates: give the CA to mint them with (its certificate and key files) too")
		case o.CertFile == "" && o.KeyFile == "":
			return nil, nil
		case o.CertFile == "" || o.KeyFile == "":
			return nil, errors.New("a client certificate needs its key, and a key its certificate: give both files")
		}
		cc := &ClientCerts{certTmpl: o.CertFile, keyTmpl: o.KeyFile}
		if !templated(o.CertFile) && !templated(o.KeyFile) {
			c, err := cc.Certificate("", 0)
			if err != nil {
				return nil, err
			}
			cc.fixed = c
		}
		return cc, nil
	}
	switch {
	case o.ClientCA == "":
		return nil, fmt.Errorf("client CA key %s needs the CA's certificate: give its file too", o.ClientCAKey)
	case o.ClientCAKey == "":
		return nil, fmt.Errorf("client CA %s needs its private key to mint with: give the key file too", o.ClientCA)
	case o.CertFile != "" || o.KeyFile != "":
		return nil, errors.New("client certificates are either given (certificate and key files) or minted from a CA, not both")
	}
	certPEM, err := os.ReadFile(o.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("client CA: %s", oneLine(err))
	}
	keyPEM, err := os.ReadFile(o.ClientCAKey)
	if err != nil {
		return nil, fmt.Errorf("client CA key: %s", oneLine(err))
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls's words; never the key's bytes.
		return nil, fmt.Errorf("client CA key %s with certificate %s: %s", o.ClientCAKey, o.ClientCA, oneLine(err))
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("client CA %s: %s", o.ClientCA, oneLine(err))
	}
	if !ca.IsCA || (ca.KeyUsage != 0 && ca.KeyUsage&x509.KeyUsageCertSign == 0) {
		return nil, fmt.Errorf("client CA %s: %q is not a CA certificate (it needs basicConstraints CA:TRUE and, if it has a key usage, keyCertSign)", o.ClientCA, ca.Subject.CommonName)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("client CA key %s: a key that cannot sign", o.ClientCAKey)
	}
	subject := o.CertSubject
	if subject == "" {
		subject = DefaultCertSubject
	}
	san, err := SplitSAN(o.CertSAN)
	if err != nil {
		return nil, err
	}
	if subject == NoCommonName && len(san) == 0 {
		return nil, fmt.Errorf("a certificate subject %q (no common name) needs a SAN to name the client", NoCommonName)
	}
	return &ClientCerts{subject: subject, san: san, ca: ca, caKey: signer}, nil
}

// SplitSAN returns the templates of a comma-separated SAN list (spaces around each
// trimmed); an empty entry is an error.
func SplitSAN(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, t := range strings.Split(list, ",") {
		if t = strings.TrimSpace(t); t == "" {
			return nil, fmt.Errorf("%w %q: an empty name between commas", ErrCertSAN, list)
		}
		out = append(out, t)
	}
	return out, nil
}

// Minting reports whether the certificates are minted (not read from files).
func (cc *ClientCerts) Minting() bool { return cc.ca != nil }

// Certificate returns the certificate of the client with id and index (its index in its
// group): its files read, or a certificate minted for it.
func (cc *ClientCerts) Certificate(id string, index int) (*tls.Certificate, error) {
	if cc.fixed != nil {
		return cc.fixed, nil
	}
	expand := func(t string) string { return expandCert(t, id, index) }
	if cc.ca == nil {
		certFile, keyFile := expand(cc.certTmpl), expand(cc.keyTmpl)
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate %s with key %s: %s", certFile, keyFile, oneLine(err))
		}
		return &c, nil
	}
	cn := ""
	if cc.subject != NoCommonName {
		if cn = expand(cc.subject); cn == "" {
			return nil, errors.New("client certificate subject: empty once expanded")
		}
	}
	var names sanNames
	for _, t := range cc.san {
		if err := names.add(expand(t)); err != nil {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(mintValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames:    names.dns, EmailAddresses: names.email, IPAddresses: names.ip, URIs: names.uri,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, cc.ca, &key.PublicKey, cc.caKey)
	if err != nil {
		return nil, fmt.Errorf("cannot mint the client certificate of %q: %s", cn, oneLine(err))
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
