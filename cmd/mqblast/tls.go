package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/reactor"
)

// tlsFlags are the TLS settings of run, conn, pub and sub (DESIGN.md §8), for brokers given
// as mqtts:// or wss:// URLs.
type tlsFlags struct {
	cacert, cert, key, sni, version string
	insecure                        bool
	alpn                            []string
}

func (t *tlsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&t.cacert, "cacert", "", "PEM file of the CA(s) that signed the broker's certificate (default: the system's)")
	fl.StringVar(&t.cert, "cert", "", "PEM client certificate, for a broker that requires one (mutual TLS)")
	fl.StringVar(&t.key, "key", "", "PEM private key of --cert")
	fl.StringVar(&t.sni, "sni", "", "TLS server name: sent as SNI and verified (default: the broker's host)")
	fl.BoolVar(&t.insecure, "insecure", false, "do not verify the broker's certificate")
	fl.StringSliceVar(&t.alpn, "alpn", nil, "ALPN protocols to offer, comma-separated (default: none)")
	fl.StringVar(&t.version, "tls-version", "", "offer only this TLS version: 1.2 or 1.3 (default: both)")
}

// registerEmqttAliases adds emqtt-bench's spellings of the client certificate flags.
func (t *tlsFlags) registerEmqttAliases(fl *pflag.FlagSet) {
	fl.StringVar(&t.cert, "certfile", "", "same as --cert (emqtt-bench's name)")
	fl.StringVar(&t.key, "keyfile", "", "same as --key (emqtt-bench's name)")
	fl.StringVar(&t.cacert, "cacertfile", "", "same as --cacert")
}

func (t *tlsFlags) given() bool {
	return t.cacert != "" || t.cert != "" || t.key != "" || t.sni != "" || t.insecure || len(t.alpn) > 0 || t.version != ""
}

// config returns the TLS configuration for brokers (nil when none of them is TLS and no
// TLS flag is given). A TLS flag without a TLS broker is a usage error.
func (t *tlsFlags) config(brokers []string) (*tls.Config, error) {
	secure := false
	for _, b := range brokers {
		scheme, _, _, _, err := reactor.ParseBroker(b)
		if err == nil && (scheme == "mqtts" || scheme == "wss") {
			secure = true
		}
	}
	if !secure {
		if t.given() {
			return nil, errors.New("TLS flags (--cacert, --cert, --key, --sni, --insecure, --alpn, --tls-version) need a TLS broker: give --broker mqtts://HOST:8883 or wss://HOST:8084/mqtt (or --tls with -H)")
		}
		return nil, nil
	}
	c, err := reactor.TLSConfig(reactor.TLSOptions{CAFile: t.cacert, CertFile: t.cert, KeyFile: t.key,
		ServerName: t.sni, Insecure: t.insecure, ALPN: t.alpn, Version: t.version})
	if err != nil {
		return nil, fmt.Errorf("%w (see --cacert, --cert, --key, --tls-version)", err)
	}
	return c, nil
}

// args are the flags that give a worker process the same TLS settings.
func (t *tlsFlags) args() []string {
	var a []string
	for _, f := range [][2]string{{"--cacert", t.cacert}, {"--cert", t.cert}, {"--key", t.key}, {"--sni", t.sni}, {"--tls-version", t.version}} {
		if f[1] != "" {
			a = append(a, f[0], f[1])
		}
	}
	if t.insecure {
		a = append(a, "--insecure")
	}
	if len(t.alpn) > 0 {
		a = append(a, "--alpn", strings.Join(t.alpn, ","))
	}
	return a
}

// quickBroker returns the broker address of host and port for the quick verbs' --tls/--ssl
// and --ws: host:port (TCP), mqtts://, ws:// or wss:// with path.
func quickBroker(hostPort string, secure, ws bool, path string) string {
	switch {
	case ws && secure:
		return "wss://" + hostPort + path
	case ws:
		return "ws://" + hostPort + path
	case secure:
		return "mqtts://" + hostPort
	}
	return hostPort
}
