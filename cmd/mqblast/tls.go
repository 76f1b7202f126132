package main

import (
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/reactor"
)

// registerTLSFlags adds the TLS settings of run, conn, pub and sub to fl, for brokers given
// as mqtts:// or wss:// URLs.
func registerTLSFlags(fl *pflag.FlagSet, t *reactor.TLSOptions) {
	fl.StringVar(&t.CAFile, "cacert", "", "PEM file of the CA(s) that signed the broker's certificate (default: the system's)")
	fl.StringVar(&t.CertFile, "cert", "", "PEM client certificate, for a broker that requires one (mutual TLS)")
	fl.StringVar(&t.KeyFile, "key", "", "PEM private key of --cert")
	fl.StringVar(&t.ServerName, "sni", "", "TLS server name: sent as SNI and verified (default: the broker's host)")
	fl.BoolVar(&t.Insecure, "insecure", false, "do not verify the broker's certificate")
	fl.StringSliceVar(&t.ALPN, "alpn", nil, "ALPN protocols to offer, comma-separated (default: none)")
	fl.StringVar(&t.Version, "tls-version", "", "offer only this TLS version: 1.2 or 1.3 (default: both)")
}

// registerEmqttTLSAliases adds emqtt-bench's spellings of the client certificate flags.
func registerEmqttTLSAliases(fl *pflag.FlagSet, t *reactor.TLSOptions) {
	fl.StringVar(&t.CertFile, "certfile", "", "same as --cert (emqtt-bench's name)")
	fl.StringVar(&t.KeyFile, "keyfile", "", "same as --key (emqtt-bench's name)")
	fl.StringVar(&t.CAFile, "cacertfile", "", "same as --cacert")
}
