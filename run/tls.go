package run

import (
	"crypto/tls"
	"errors"
	"strings"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// tlsConfig returns the TLS configuration for brokers (nil when none of them is TLS and no
// TLS option is given). A TLS option without a TLS broker is a usage error.
func tlsConfig(o reactor.TLSOptions, brokers []string) (*tls.Config, error) {
	secure := false
	for _, b := range brokers {
		scheme, _, _, _, err := reactor.ParseBroker(b)
		if err == nil && (scheme == "mqtts" || scheme == "wss") {
			secure = true
		}
	}
	if !secure {
		if tlsGiven(o) {
			return nil, usage(spec.Errorf("tls", "TLS settings ({tls.cacert}, {tls.cert}, {tls.key}, {tls.client_ca}, {tls.client_ca_key}, {tls.client_cert_subject}, {tls.client_cert_san}, {tls.sni}, {tls.insecure}, {tls.alpn}, {tls.tls_version}) need a TLS broker: "+
				"give {brokers} mqtts://HOST:8883 or wss://HOST:8084/mqtt"))
		}
		return nil, nil
	}
	c, err := reactor.TLSConfig(o)
	if err != nil {
		return nil, usage(spec.Errorf("tls", "%v (see {tls.cacert}, {tls.cert}, {tls.key}, {tls.tls_version})", err))
	}
	return c, nil
}

// checkRecordLayer refuses a record layer the engine does not have.
func checkRecordLayer(t spec.TLS) error {
	switch t.RecordLayer {
	case "", reactor.RecordLayerLoop, reactor.RecordLayerTLSConn:
		return nil
	}
	return usage(spec.Errorf("tls.record_layer", "{tls.record_layer} %q: want %s or %s", t.RecordLayer, reactor.RecordLayerLoop, reactor.RecordLayerTLSConn))
}

// tlsOptions are the engine's TLS options of the Spec's settings.
func tlsOptions(t spec.TLS) reactor.TLSOptions {
	return reactor.TLSOptions{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName,
		Insecure: t.Insecure, ALPN: t.ALPN, Version: t.Version, ClientCA: t.ClientCA, ClientCAKey: t.ClientCAKey, CertSubject: t.CertSubject, CertSAN: t.CertSAN}
}

// clientCertOverride is the scenario server's client certificate that the Spec's
// settings give: per-client files or a CA to mint from, or one pair (which then replaces
// the scenario's); the zero value when they give none of these.
func clientCertOverride(t spec.TLS, s *scenario.Scenario) scenario.ClientCert {
	c := scenario.ClientCert{Cert: t.CertFile, Key: t.KeyFile, CA: t.ClientCA, CAKey: t.ClientCAKey, Subject: t.CertSubject, SAN: t.CertSAN}
	if tlsOptions(t).PerClientCerts() || (c.Given() && s.Server.ClientCert.Given()) {
		return c
	}
	return scenario.ClientCert{}
}

// checkClientCerts reads the client CA of the Spec's settings and checks its key, so that
// a key that is not the CA's is refused, naming its file, before anything starts.
func checkClientCerts(t spec.TLS) error {
	if _, err := reactor.NewClientCerts(tlsOptions(t)); err != nil {
		field := "tls.cert"
		switch {
		case errors.Is(err, reactor.ErrCertSAN):
			field = "tls.client_cert_san"
		case t.CertSubject == reactor.NoCommonName && strings.TrimSpace(t.CertSAN) == "":
			field = "tls.client_cert_subject"
		case t.ClientCA != "" && t.ClientCAKey != "" && t.CertFile == "" && t.KeyFile == "":
			field = "tls.client_ca_key"
		case t.ClientCA != "" || t.ClientCAKey != "":
			field = "tls.client_ca"
		case t.CertSAN != "" && t.CertSubject == "":
			field = "tls.client_cert_san"
		case t.CertSubject != "":
			field = "tls.client_cert_subject"
		}
		return kind(errInvalid, spec.Errorf(field, "{"+field+"}: %s", err))
	}
	return nil
}

// planCerts reads the client certificates of the plan's servers and makes its first
// client's (bench.ClientCerts, bench.CheckClientCert): a problem is an invalid input,
// found before any socket opens, named by its flag when the Spec's settings gave the
// scenario's server its certificate.
func planCerts(plan *scenario.Plan, idStart int, t spec.TLS) error {
	certs, err := bench.ClientCerts(plan)
	if err == nil {
		err = bench.CheckClientCert(plan, certs, idStart)
	}
	var se *scenario.Error
	if errors.As(err, &se) && strings.HasPrefix(se.Path, "server.") && plan.Scenario().Server.ClientCert == clientCertOverride(t, plan.Scenario()) {
		field := "tls." + strings.TrimPrefix(se.Path, "server.")
		return kind(errInvalid, spec.Errorf(field, "{"+field+"}: %s", se.Msg))
	}
	return kind(errInvalid, err)
}

// tlsGiven reports whether any TLS option is set.
func tlsGiven(o reactor.TLSOptions) bool {
	return o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.ServerName != "" || o.Insecure || len(o.ALPN) > 0 || o.Version != "" ||
		o.ClientCA != "" || o.ClientCAKey != "" || o.CertSubject != "" || o.CertSAN != ""
}
