package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/run/spec"
)

// specFields maps the flags of the verbs that run a scenario to the JSON paths of the Spec
// fields they set. A flag that is not here sets the field of its own name (dashes for
// underscores) at the top of the Spec.
var specFields = map[string]string{
	"broker": "brokers", "set": "scenario.set", "threshold": "thresholds",
	"out": "outputs.out", "html": "outputs.html", "format": "outputs.format", "csv": "outputs.csv", "hlog": "outputs.hlog",
	"metrics": "outputs.metrics", "metrics-public": "outputs.metrics_public", "metrics-hold": "outputs.metrics_hold",
	"remote-write": "outputs.remote_write", "remote-write-auth": "outputs.remote_write_auth",
	"live": "outputs.live", "live-public": "outputs.live_public", "live-hold": "outputs.live_hold", "live-token-file": "outputs.live_token_file",
	"cacert": "tls.cacert", "cert": "tls.cert", "key": "tls.key", "sni": "tls.sni", "insecure": "tls.insecure",
	"alpn": "tls.alpn", "tls-version": "tls.tls_version", "tls-record-layer": "tls.record_layer", "client-ca": "tls.client_ca", "client-ca-key": "tls.client_ca_key", "client-cert-subject": "tls.client_cert_subject", "client-cert-san": "tls.client_cert_san",
	"broker-pid": "watch.broker_pid", "broker-sys": "watch.broker_sys", "broker-cgroup": "watch.broker_cgroup",
	"broker-metrics": "watch.broker_metrics", "broker-metric": "watch.broker_metric",
	"broker-metrics-auth": "watch.broker_metrics_auth", "broker-metrics-process": "watch.broker_metrics_process",
	"broker-metrics-timeout": "watch.broker_metrics_timeout",
	"sink":                   "sink", "sink-flush-delay": "sink.flush_delay", "sink-tls": "sink.tls", "sink-ws": "sink.ws", "net": "net.profile", "net-broker-cmd": "net.broker_cmd",
	"slo": "limit.slo", "start-rate": "limit.start_rate", "max-rate": "limit.max_rate", "precision": "limit.precision",
	"factor": "limit.factor", "step": "limit.step", "settle": "limit.settle", "pause": "limit.pause",
	"max-duration": "limit.max_duration", "confirm": "limit.confirm", "vary": "limit.vary", "find": "limit.find",
	"sustain": "sustain", "sustain-window": "sustain_window",
	// the quick verbs' own names
	"ifaddr": "bind", "startnumber": "id_start",
}

// pathOf is the JSON path of the Spec field the flag name of cmd sets; "" for a flag that
// sets none (a quick verb's scenario flags, --spec).
func pathOf(cmd *cobra.Command, name string) string {
	if p, ok := specFields[name]; ok {
		return p
	}
	switch name {
	case "bind", "duration", "stages", "procs", "loops", "shard", "start-at", "run-id", "id-start", "max-packet-size",
		"accept-downgrade", "no-check", "password-file", "credentials":
		if isQuick(cmd) && (name == "duration" || name == "bind" || name == "id-start") {
			return "" // a quick verb's scenario has them
		}
		return strings.ReplaceAll(name, "-", "_")
	}
	return ""
}

// isQuick reports whether cmd is one of the emqtt-bench style verbs (conn, pub, sub).
func isQuick(cmd *cobra.Command) bool { return cmd.Flags().Lookup("ifaddr") != nil }

// flagOf returns the flag of cmd that sets the Spec field at path ("--broker"), "" when no
// flag of cmd sets it.
func flagOf(cmd *cobra.Command, path string) string {
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	found := ""
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if found == "" && pathOf(cmd, f.Name) == path {
			found = "--" + f.Name
		}
	})
	switch {
	case found != "":
		return found
	case path == "net":
		return flagOf(cmd, "net.profile")
	case path == "brokers" && isQuick(cmd):
		return "--host"
	case path == "scenario.name":
		return "the scenario"
	}
	return ""
}

// errorText is err's message, a Spec field named by the flag of cmd that gave it (with
// --spec FILE, a field no flag beside it gave by its JSON path in the file).
func errorText(cmd *cobra.Command, err error) string {
	if cmd == nil {
		return err.Error()
	}
	fromFile := cmd.Flags().Changed("spec")
	return spec.Text(err, func(path string) string {
		f := flagOf(cmd, path)
		if fl := cmd.Flags().Lookup(strings.TrimPrefix(f, "--")); fromFile && (fl == nil || !fl.Changed) {
			return ""
		}
		return f
	})
}
