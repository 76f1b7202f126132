package run

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/mqblast/mqblast/reactor"
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
			return nil, usage(errors.New("TLS flags (--cacert, --cert, --key, --sni, --insecure, --alpn, --tls-version) need a TLS broker: give --broker mqtts://HOST:8883 or wss://HOST:8084/mqtt (or --tls with -H)"))
		}
		return nil, nil
	}
	c, err := reactor.TLSConfig(o)
	if err != nil {
		return nil, usage(fmt.Errorf("%w (see --cacert, --cert, --key, --tls-version)", err))
	}
	return c, nil
}

// tlsArgs are the flags that give a worker process the same TLS settings.
func tlsArgs(o reactor.TLSOptions) []string {
	var a []string
	for _, f := range [][2]string{{"--cacert", o.CAFile}, {"--cert", o.CertFile}, {"--key", o.KeyFile}, {"--sni", o.ServerName}, {"--tls-version", o.Version}} {
		if f[1] != "" {
			a = append(a, f[0], f[1])
		}
	}
	if o.Insecure {
		a = append(a, "--insecure")
	}
	if len(o.ALPN) > 0 {
		a = append(a, "--alpn", strings.Join(o.ALPN, ","))
	}
	return a
}

// tlsGiven reports whether any TLS option is set.
func tlsGiven(o reactor.TLSOptions) bool {
	return o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.ServerName != "" || o.Insecure || len(o.ALPN) > 0 || o.Version != ""
}
