package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// runFlags are the flags of the verbs that run a scenario (run, limit, conn, pub, sub):
// each sets a field of the run's Spec (fieldOf names it).
type runFlags struct {
	sp        spec.Spec
	procs     procsFlag
	sink      bool          // --sink
	sinkDelay time.Duration // --sink-flush-delay
	sinkTLS   bool          // --sink-tls
	sinkWS    bool          // --sink-ws
	net       spec.Net      // --net, --net-broker-cmd
	specFile  string        // --spec
	password  string        // the password a flag gave (-P): kept out of the Spec
	// groupPasswords are the groups' own passwords --set gave, by group name: kept out of
	// the Spec too.
	groupPasswords map[string]string
	// payloadTemplate is --payload-template: parameters.payload_template, the default of
	// every publishing group's.
	payloadTemplate string
	// payloadFile is --payload-file: parameters.payload_file.
	payloadFile string
}

// passwords are the broker passwords a command line gave, kept out of the Spec: the
// run's (-P, --set server.password) and groups' own (--set groups.NAME.server.password).
type passwords struct {
	run    string
	groups map[string]string
}

// passwords returns the passwords rf's flags gave.
func (rf *runFlags) passwords() passwords { return passwords{rf.password, rf.groupPasswords} }

// registerShardFlags adds --shard, --start-at and --run-id, for run and the quick verbs.
func (rf *runFlags) registerShardFlags(fl *pflag.FlagSet) {
	fl.StringVar(&rf.sp.Shard, "shard", "", "run shard I of N of the scenario (I/N, 0-based; N at most the largest group's clients), e.g. on several hosts; "+
		"auto: I from $"+run.EnvShardIndex+" (a Kubernetes Indexed Job), N from $"+run.EnvShardCount)
	fl.StringVar(&rf.sp.StartAt, "start-at", "", "connect and subscribe, then start publishing at this wall-clock time: "+
		"RFC 3339 (2026-01-02T15:04:05Z) or +DURATION from now (+90s), at most 24h ahead; a run not ready by then starts at once, late (start.late_ms), up to 10m after it")
	fl.StringVar(&rf.sp.RunID, "run-id", "", "the run's identity, any text (e.g. a Kubernetes Job's uid): every measured message carries 16 bits "+
		"derived from it, and copies of other runs count as unexpected.other_run; shards of one run need the same one "+
		"(default: derived from --start-at, else random; a sub counts every run's copies unless given the publishers' --run-id)")
}

// registerCommon adds the flags that run, limit and the quick verbs share.
func (rf *runFlags) registerCommon(cmd *cobra.Command) {
	fl := cmd.Flags()
	sp := &rf.sp
	fl.StringArrayVar(&sp.Scenario.Set, "set", nil, "override a scenario field: path=value, e.g. parameters.connection_rate=500 (repeatable)")
	fl.StringArrayVar(&sp.Thresholds, "threshold", nil, "pass/fail criterion PATH OP NUMBER on the result document, e.g. messages.lost==0 or "+
		"'latency_us.p99<50000' (< <= > >= == !=; repeatable, added to the scenario's; exit 5 when one fails)")
	fl.StringVar(&sp.Outputs.Out, "out", "", "write the result document (JSON) to this file")
	fl.StringVar(&sp.Outputs.HTML, "html", "", "write the HTML report of the run to this file (also of an interrupted run)")
	fl.StringVar(&sp.Outputs.Format, "format", "text", "stdout format: text (summary) or json (the result document)")
	fl.StringVar(&sp.Outputs.CSV, "csv", "", "write one CSV row per interval to this file (columns: docs/outputs.md)")
	fl.StringVar(&sp.Outputs.Hlog, "hlog", "", "write the intervals' latency histograms as an HdrHistogram interval log (tags latency, latency_raw, connect; µs)")
	fl.StringVar(&sp.Outputs.Metrics, "metrics", "", "serve live Prometheus metrics at http://ADDR/metrics during the run, e.g. 127.0.0.1:9464 (loopback only unless --metrics-public)")
	fl.BoolVar(&sp.Outputs.MetricsPublic, "metrics-public", false, "allow a --metrics address that is not loopback (the metrics are then open to the network)")
	fl.DurationVar((*time.Duration)(&sp.Outputs.MetricsHold), "metrics-hold", 0, "keep serving /metrics this long after the run ended, so that a scraper sees the final figures (e.g. 30s)")
	fl.StringVar(&sp.Outputs.RemoteWrite, "remote-write", "", "push the series of --metrics to this Prometheus remote-write URL once per interval and at the end, "+
		"e.g. http://127.0.0.1:9090/api/v1/write (a push that fails is retried, never delays the run; counted in the result's remote_write)")
	fl.StringVar(&sp.Outputs.RemoteWriteAuth, "remote-write-auth", "", "a file with the remote-write receiver's credentials: lines username=, password= or bearer_token= "+
		"(default: $MQBLAST_REMOTE_WRITE_USERNAME, $MQBLAST_REMOTE_WRITE_PASSWORD, $MQBLAST_REMOTE_WRITE_TOKEN); never on the command line")
	fl.StringVar(&sp.Outputs.Live, "live", "", "serve the run's live page at http://ADDR/ during the run: its report, updated as each interval closes, "+
		"and the steering API under /api/ (with a token), e.g. 127.0.0.1:8080 (loopback only unless --live-public)")
	fl.BoolVar(&sp.Outputs.LivePublic, "live-public", false, "allow a --live address that is not loopback (the page and the API are then open to the network)")
	fl.DurationVar((*time.Duration)(&sp.Outputs.LiveHold), "live-hold", 0, "keep serving the live page this long after the run ended, with its final report (e.g. 10m)")
	fl.StringVar(&sp.Outputs.LiveTokenFile, "live-token-file", "", "the steering API's token: the first line of FILE (default $"+run.LiveTokenEnv+"; "+
		"neither: the API answers 403); requests give it as Authorization: Bearer TOKEN")
	fl.Var(&rf.procs, "procs", "worker processes: auto (as many as the descriptor limit needs) or N")
	fl.BoolVar(&sp.NoCheck, "no-check", false, "skip the host checks (mqblast check) before the run")
	fl.IntVar(&sp.Loops, "loops", 0, "event loops per process (0: one per core; at most 4 per core)")
	fl.Var(packetSize{&sp.MaxPacketSize}, "max-packet-size", "largest packet a client accepts from the broker (bytes, or 64KiB, 1MiB ...), announced in 5.0 (0: payload_size + 64 KiB, at least 1 MiB)")
	fl.BoolVar(&sp.AcceptDowngrade, "accept-downgrade", false, "when the broker's 5.0 CONNACK says it lacks what the plan needs "+
		"(Maximum QoS below the plan's, Retain Available 0, no shared or wildcard subscriptions), run at what it grants and say so "+
		"in broker_behaviour (default: the run fails after connecting, in the broker's words)")
	fl.StringVar(&sp.PasswordFile, "password-file", "", "read the broker password from the first line of FILE "+
		"(precedence: --password-file, then -P or --set server.password, then the scenario's server.password, then $"+run.PasswordEnv+
		" when a username is given)")
	fl.StringVar(&sp.Credentials, "credentials", "", "a CSV file of each client's username and password, its header naming its columns among "+
		"client_id, client_index, username and password (rows matched by client id, else by index, else in order); "+
		"sets the scenario's credentials_file: the result names the file, never its contents")
	t := &sp.TLS
	fl.StringVar(&t.CAFile, "cacert", "", "PEM file of the CA(s) that signed the broker's certificate (default: the system's)")
	fl.StringVar(&t.CertFile, "cert", "", "PEM client certificate, for a broker that requires one (mutual TLS); "+
		"with $clientid or $clientindex a file per client (certs/$clientid.pem)")
	fl.StringVar(&t.KeyFile, "key", "", "PEM private key of --cert (a template like it: certs/$clientid.key)")
	fl.StringVar(&t.ClientCA, "client-ca", "", "PEM certificate of a CA that mints each client a certificate of its own "+
		"(ECDSA P-256, as the client dials; with --client-ca-key)")
	fl.StringVar(&t.ClientCAKey, "client-ca-key", "", "PEM private key of --client-ca (read by each process from this file; never in a result)")
	fl.StringVar(&t.CertSubject, "client-cert-subject", "", "common name of the minted certificates, a template (default $clientid; none: no common name, with --client-cert-san)")
	fl.StringVar(&t.CertSAN, "client-cert-san", "", "subject alternative names of the minted certificates, templates separated by commas: "+
		"with :// or urn: a URI, with @ an email, an IP address an IP, else a DNS name ($clientid.devices.example,urn:dev:$clientid)")
	fl.StringVar(&t.ServerName, "sni", "", "TLS server name: sent as SNI and verified (default: the broker's host)")
	fl.BoolVar(&t.Insecure, "insecure", false, "do not verify the broker's certificate")
	fl.StringSliceVar(&t.ALPN, "alpn", nil, "ALPN protocols to offer, comma-separated (default: none)")
	fl.StringVar(&t.Version, "tls-version", "", "offer only this TLS version: 1.2 or 1.3 (default: both)")
	fl.StringVar(&t.RecordLayer, "tls-record-layer", "", "what seals and opens the records of established TLS connections: "+
		"loop (the event loop's own, for TLS 1.3 with AES-GCM or ChaCha20-Poly1305; TLS 1.2 keeps crypto/tls) or tls.Conn (crypto/tls's for every connection) "+
		"(default loop; the result's transport.record_layer counts each)")
	w := &sp.Watch
	fl.IntVar(&w.BrokerPID, "broker-pid", 0, "the broker's process, sampled for CPU, RSS and descriptors each interval (default: found when the broker is local)")
	fl.BoolVar(&w.BrokerSys, "broker-sys", false, "read the broker's $SYS topics on one extra connection (not counted) and put its own counts beside the run's; "+
		"as fresh as the broker refreshes them (Mosquitto: sys_interval, 10 s by default): the run waits for one refresh before its first socket and one after its end")
	fl.StringVar(&w.BrokerCgroup, "broker-cgroup", "", "the broker's cgroup, sampled for CPU and memory (a cgroup v2 directory, or a v1 path such as /docker/ID)")
	fl.StringArrayVar(&w.BrokerMetrics, "broker-metrics", nil, "a Prometheus endpoint of the broker's host, scraped once per interval (repeatable): "+
		"node_exporter (http://HOST:9100/metrics) gives the host's CPU, memory and network, process-exporter (:9256) or any endpoint "+
		"with the standard process collector the broker process's CPU, RSS and descriptors; an endpoint that does not answer at the start is refused")
	fl.StringArrayVar(&w.Series, "broker-metric", nil, "another series to record from the --broker-metrics endpoints (repeatable): "+
		`NAME or NAME{label="value"}, summed over matching series; a counter as its rate per second, a gauge as its value `+
		"(e.g. rabbitmq_global_messages_received_total)")
	fl.StringVar(&w.MetricsAuth, "broker-metrics-auth", "", "a file with the endpoints' credentials: lines username=, password= or bearer_token= "+
		"(default: $MQBLAST_METRICS_USERNAME, $MQBLAST_METRICS_PASSWORD, $MQBLAST_METRICS_TOKEN); never on the command line")
	fl.StringVar(&w.MetricsProcess, "broker-metrics-process", "", "the process-exporter group that is the broker (default: the only group, or the one named like a broker)")
	fl.DurationVar((*time.Duration)(&w.MetricsTimeout), "broker-metrics-timeout", 0, "the longest one scrape may take (default 800ms, at most 900ms: a slow endpoint leaves a gap, never a late interval)")
	rf.registerShardFlags(fl)
}

// register adds the flags of `mqblast run` (and limit).
func (rf *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	sp := &rf.sp
	fl.StringSliceVar(&sp.Brokers, "broker", nil, "broker host:port or URL (mqtts://host:8883, ws://host:8083/mqtt, wss://host:8084/mqtt), replacing the scenario's server (repeat or comma-separate for several)")
	fl.StringSliceVar(&sp.Bind, "bind", nil, "source addresses of the broker's address family: list, range (127.0.0.2-127.0.0.40), CIDR or interface name (its addresses of that family)")
	fl.DurationVar((*time.Duration)(&sp.Duration), "duration", 0, "override parameters.duration_sec (how long connections are held)")
	rf.registerStages(fl)
	fl.StringVar(&rf.payloadTemplate, "payload-template", "", "the text or JSON every message carries after its measurement bytes, "+
		"with placeholders rendered per message ({{seq}}, {{unix_ms}}, {{rand_int 1 9}}, {{mark}} ...): parameters.payload_template, "+
		"the default of every publishing group's; the payload size follows from it")
	fl.StringVar(&rf.payloadFile, "payload-file", "", "payloads from a file instead: a directory (each file one payload), a JSON-lines file "+
		"(.jsonl: each line one) or one file, sent in turn (--set parameters.payload_order=random: at random) after the measurement bytes, "+
		"or as they are with --set parameters.measure=none (unmeasured, never lost): parameters.payload_file")
	fl.DurationVar((*time.Duration)(&sp.Sustain), "sustain", 0, "soak: hold the load this long and judge its drift by window "+
		"(latency, losses, refusals, the broker's RSS slope): limit holds its answer after the search; run measures this long "+
		"(it replaces parameters.duration_sec; not with --duration or --stages); at least two windows")
	fl.DurationVar((*time.Duration)(&sp.SustainWindow), "sustain-window", 0, "with --sustain: the windows' length, whole seconds "+
		"(default: a minute, or a tenth of --sustain when shorter; at most 1,440 windows)")
	fl.IntVar(&sp.IDStart, "id-start", 0, "number client ids from this instead of 0 (Connections runs)")
	fl.BoolVar(&rf.sink, "sink", false, "start mqblast sink on loopback in a child process and run against it: a calibration run (the client host's own ceiling)")
	fl.BoolVar(&rf.sinkTLS, "sink-tls", false, "with --sink: the sink speaks mqtts (TLS 1.3) with a certificate made for the run, which the clients trust; measures the client's TLS ceiling")
	fl.BoolVar(&rf.sinkWS, "sink-ws", false, "with --sink: the sink speaks MQTT over WebSocket (ws://, path /mqtt; with --sink-tls wss://); measures the client's WebSocket ceiling")
	fl.DurationVar(&rf.sinkDelay, "sink-flush-delay", 0, "with --sink: the sink's --flush-delay, 0 to 1s (fewer, larger writes at that cost in latency)")
	fl.StringVar(&rf.net.Profile, "net", "", "network profile between client and broker (local, optimal, typical, worst, cloud or "+
		"delay=2ms,jitter=0.4ms,loss=0.03%; see 'mqblast net'): tc netem toward --broker where the kernel has it, "+
		"else the broker runs behind the packet emulator (root)")
	fl.StringVar(&rf.net.BrokerCmd, "net-broker-cmd", "", "with --net: the broker to start behind the packet emulator (sh -c, "+
		"listening on 10.211.0.1:1883 or every address; default: Mosquitto)")
	rf.registerCommon(cmd)
}

// registerStages registers --stages, which run and pub share.
func (rf *runFlags) registerStages(fl *pflag.FlagSet) {
	fl.StringVar(&rf.sp.Stages, "stages", "", "change the publish rate through the run, connections staying up: "+scenario.StagesSyntax+
		"; replaces parameters.stages, and the run lasts their total (not with --duration)")
}

// spec is the Spec the flags give for the scenario named arg.
func (rf *runFlags) spec(cmd *cobra.Command, arg string) (*spec.Spec, error) {
	sp := rf.sp
	sp.Scenario.Name = arg
	sp.Procs = spec.Procs(rf.procs)
	switch {
	case rf.sink:
		sp.Sink = &spec.Sink{FlushDelay: spec.Duration(rf.sinkDelay), TLS: rf.sinkTLS, WS: rf.sinkWS}
	case rf.sinkTLS:
		return nil, usageError(errors.New("--sink-tls: the sink that --sink starts speaks mqtts with it; add --sink, or leave it out"))
	case rf.sinkWS:
		return nil, usageError(errors.New("--sink-ws: the sink that --sink starts speaks MQTT over WebSocket with it; add --sink, or leave it out"))
	case rf.sinkDelay != 0:
		return nil, usageError(fmt.Errorf("--sink-flush-delay %v: it is the --flush-delay of the sink that --sink starts; add --sink, or leave it out", rf.sinkDelay))
	}
	if rf.net.Profile != "" {
		n := rf.net
		sp.Net = &n
	} else if rf.net.BrokerCmd != "" {
		return nil, usageError(errors.New("--net-broker-cmd: it starts the broker of --net; add --net PROFILE, or leave it out"))
	}
	if f := cmd.Flags().Lookup("duration"); f != nil && f.Changed && rf.sp.Duration <= 0 && cmd.Name() == "run" {
		return nil, usageError(fmt.Errorf("--duration %v: must be more than 0 (e.g. --duration 30s)", rf.sp.Duration.D()))
	}
	// A password given on the command line stays out of the Spec: the run takes it from IO.
	var sets []string
	for _, kv := range sp.Scenario.Set {
		k, v, ok := strings.Cut(kv, "=")
		group, secretPath := scenario.PasswordPath(k)
		switch {
		case !ok || !secretPath || v == secret.Marker:
		case group == "":
			rf.password, kv = v, k+"="+secret.Marker
		default:
			if rf.groupPasswords == nil {
				rf.groupPasswords = map[string]string{}
			}
			rf.groupPasswords[group], kv = v, k+"="+secret.Marker
		}
		sets = append(sets, kv)
	}
	if rf.payloadTemplate != "" {
		sets = append(sets, "parameters.payload_template="+rf.payloadTemplate)
	}
	if rf.payloadFile != "" {
		sets = append(sets, "parameters.payload_file="+rf.payloadFile)
	}
	sp.Scenario.Set = sets
	if rf.specFile == "" {
		return &sp, nil
	}
	return rf.fromFile(cmd, &sp)
}

// fromFile is the Spec of --spec FILE, with the flags given beside it in place of its
// fields (--out, --format, ...).
func (rf *runFlags) fromFile(cmd *cobra.Command, flags *spec.Spec) (*spec.Spec, error) {
	data, err := os.ReadFile(rf.specFile)
	if err != nil {
		return nil, usageError(fmt.Errorf("--spec %s: %w", rf.specFile, err))
	}
	file, err := spec.Read(data)
	if err != nil {
		return nil, usageError(fmt.Errorf("--spec %s: %w", rf.specFile, err))
	}
	var paths, bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if p := pathOf(cmd, f.Name); p != "" {
			paths = append(paths, p)
		} else if f.Name != "spec" {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return nil, usageError(fmt.Errorf("--spec with %s: the spec has no field for it", strings.Join(bad, ", ")))
	}
	return file.With(flags, paths)
}

func newRunCmd() *cobra.Command { return runCmd(new(runFlags)) }

// runCmd is `mqblast run` with its flags in rf.
func runCmd(rf *runFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "run SCENARIO [flags] | run --spec FILE [flags]",
		Short:   "Run a scenario (a file or a built-in name) against a broker",
		Long:    helpText("run"),
		Example: examples("run"),
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case rf.specFile != "" && len(args) > 0:
				return usageError(fmt.Errorf("--spec %s and the scenario %q: the spec names its scenario; give one of them", rf.specFile, args[0]))
			case rf.specFile == "" && len(args) != 1:
				return usageError(fmt.Errorf("run takes one scenario (a file or a built-in name), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			sp, err := rf.spec(cmd, arg)
			if err != nil {
				return err
			}
			return start(cmd, sp, rf.passwords())
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&rf.specFile, "spec", "", "run the spec in FILE (a result's \"spec\", or one written by hand) instead of a scenario and flags")
	return cmd
}

// start runs the Spec a verb built (runSpec); tests replace it to see that Spec.
var start = runSpec

// runSpec runs sp (run.Do); pw are the passwords the command line gave, kept out of sp.
func runSpec(cmd *cobra.Command, sp *spec.Spec, pw passwords) error {
	_, err := run.Do(cmd.Context(), sp, run.IO{Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Password: pw.run, GroupPasswords: pw.groups, Version: version})
	return err
}

// procsFlag is --procs: auto (0) or a number.
type procsFlag spec.Procs

func (p *procsFlag) String() string { return spec.Procs(*p).String() }

func (p *procsFlag) Set(s string) error {
	n, err := spec.ParseProcs(s)
	*p = procsFlag(n)
	return err
}

func (*procsFlag) Type() string { return "procs" }
