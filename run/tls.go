package run

import (
	"crypto/tls"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/run/spec"
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
			return nil, usage(spec.Errorf("tls", "TLS settings ({tls.cacert}, {tls.cert}, {tls.key}, {tls.sni}, {tls.insecure}, {tls.alpn}, {tls.tls_version}) need a TLS broker: "+
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

// tlsOptions are the engine's TLS options of the Spec's settings.
func tlsOptions(t spec.TLS) reactor.TLSOptions {
	return reactor.TLSOptions{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile, ServerName: t.ServerName,
		Insecure: t.Insecure, ALPN: t.ALPN, Version: t.Version}
}

// tlsGiven reports whether any TLS option is set.
func tlsGiven(o reactor.TLSOptions) bool {
	return o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.ServerName != "" || o.Insecure || len(o.ALPN) > 0 || o.Version != ""
}
