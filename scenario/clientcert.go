package scenario

import (
	"strconv"
	"strings"
)

// ClientCert says where the TLS client certificate of each client of a server comes from
// (mqblast's additions to "server", the scenario's or a group's): a file pair, named by a
// template when each client has its own ("cert", "key": "certs/$clientid.pem"), or minted
// by mqblast from a CA as the client dials ("client_ca", "client_ca_key",
// "client_cert_subject", the certificate's common name, default $clientid, "none" for none,
// and "client_cert_san", its subject alternative names). Paths and
// templates only: the files are read by the run, the CA's key in each process that mints.
// A group's own server gives its clients' certificate for the run's TLS brokers; the
// scenario's server gives that of the other clients.
type ClientCert struct {
	Cert, Key string // "cert", "key"
	CA, CAKey string // "client_ca", "client_ca_key"
	Subject   string // "client_cert_subject"
	// SAN ("client_cert_san") lists the minted certificate's subject alternative names,
	// templates separated by commas: one with "://" (or "urn:") a URI, with "@" an email address, an
	// IP address an IP, else a DNS name.
	SAN string
}

// NoCommonName as client_cert_subject mints certificates without a common name (their
// SANs name the client).
const NoCommonName = "none"

// Given reports whether any of the fields is set.
func (c ClientCert) Given() bool {
	return c.Cert != "" || c.Key != "" || c.CA != "" || c.CAKey != "" || c.Subject != "" || c.SAN != ""
}

// checkClientCert checks the certificate fields of a server at path ("server." or
// "groups[i].server."): both files of a pair, both of a CA, not both ways, a subject only
// to mint, and no placeholder but $clientid and $clientindex (zero-padded as :W, no modulo).
func checkClientCert(l *errList, path string, c ClientCert) {
	switch {
	case c.Cert != "" && c.Key == "":
		l.Add(path+"key", "missing: server.cert %s needs its private key's file", show(c.Cert))
	case c.Key != "" && c.Cert == "":
		l.Add(path+"cert", "missing: server.key %s needs its certificate's file", show(c.Key))
	case c.CA != "" && c.CAKey == "":
		l.Add(path+"client_ca_key", "missing: client_ca %s mints with its private key: give the key's file", show(c.CA))
	case c.CAKey != "" && c.CA == "":
		l.Add(path+"client_ca", "missing: client_ca_key %s needs the CA's certificate file", show(c.CAKey))
	case c.CA != "" && c.Cert != "":
		l.Add(path+"client_ca", "given with cert: client certificates are either given (cert, key) or minted from a CA (client_ca, client_ca_key), not both")
	case c.Subject != "" && c.CA == "":
		l.Add(path+"client_cert_subject", "%s without client_ca: the subject is that of minted certificates", show(c.Subject))
	case c.SAN != "" && c.CA == "":
		l.Add(path+"client_cert_san", "%s without client_ca: the SANs are those of minted certificates", show(c.SAN))
	case c.Subject == NoCommonName && strings.TrimSpace(c.SAN) == "":
		l.Add(path+"client_cert_subject", "%q (no common name) without client_cert_san: a certificate needs a name of the client", NoCommonName)
	}
	if c.SAN != "" {
		for _, name := range strings.Split(c.SAN, ",") {
			if strings.TrimSpace(name) == "" {
				l.Add(path+"client_cert_san", "%s has an empty name between commas (want names separated by commas)", show(c.SAN))
				break
			}
		}
	}
	for _, f := range []struct{ name, v string }{{"cert", c.Cert}, {"key", c.Key}, {"client_cert_subject", c.Subject}, {"client_cert_san", c.SAN}} {
		ph, unknown := unknownPlaceholder(f.v)
		t := compileTemplate(f.v)
		switch err := checkModulo(&t, false, "a certificate is one client's"); {
		case unknown:
			l.Add(path+f.name, "%s: unknown placeholder %s (want %s or %s)", show(f.v), show(ph), PlaceholderID, PlaceholderIndex)
		case err != nil:
			l.Add(path+f.name, "%s %v", show(f.v), err)
		}
	}
}

// unknownPlaceholder returns the first "$client..." word of s that is neither $clientid
// nor $clientindex.
func unknownPlaceholder(s string) (string, bool) {
	for {
		i := strings.Index(s, "$client")
		if i < 0 {
			return "", false
		}
		s = s[i:]
		if strings.HasPrefix(s, PlaceholderIndex) {
			s = s[len(PlaceholderIndex):]
			continue
		}
		if strings.HasPrefix(s, PlaceholderID) {
			s = s[len(PlaceholderID):]
			continue
		}
		end := len("$client")
		for end < len(s) && (s[end] >= 'a' && s[end] <= 'z' || s[end] >= 'A' && s[end] <= 'Z' || s[end] == '_') {
			end++
		}
		return s[:end], true
	}
}

// CertSource is a server that gives its clients' TLS certificate: the scenario's or a
// group's own.
type CertSource struct {
	Path string // the JSON path of its fields, up to their names: "server." or "groups[2].server."
	Cert ClientCert
}

// CertSources lists the servers of s that give a client certificate (Client.ClientCert is
// one of theirs).
func (s *Scenario) CertSources() []CertSource {
	var out []CertSource
	if s.Server.ClientCert.Given() {
		out = append(out, CertSource{Path: "server.", Cert: s.Server.ClientCert})
	}
	for i, g := range s.Groups {
		if g != nil && g.Server != nil && g.Server.ClientCert.Given() {
			out = append(out, CertSource{Path: "groups[" + strconv.Itoa(i) + "].server.", Cert: g.Server.ClientCert})
		}
	}
	return out
}
