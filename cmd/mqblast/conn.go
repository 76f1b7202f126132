package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// quickFlags are the emqtt-bench style flags that conn, pub and sub share.
type quickFlags struct {
	hosts      string
	port       int
	count      int
	intervalMS int
	rate       float64
	keepalive  int
	version    int
	clean      bool
	username   string
	password   string
	ifaddr     string
	prefix     string
	duration   time.Duration
	secure     bool   // --tls, --ssl (tls.go)
	ws         bool   // --ws
	wsPath     string // --ws-path
	run        runFlags
}

func (f *quickFlags) register(cmd *cobra.Command, prefix string, duration time.Duration, durationHelp string) {
	fl := cmd.Flags()
	fl.StringVarP(&f.hosts, "host", "H", "", "broker host(s), comma-separated, clients round-robin (default: start the embedded broker)")
	fl.IntVarP(&f.port, "port", "p", 1883, "broker port")
	fl.IntVarP(&f.count, "count", "c", 200, "number of clients")
	fl.IntVarP(&f.intervalMS, "interval", "i", 10, "interval between connects in ms (ignored when --rate is set)")
	fl.Float64VarP(&f.rate, "rate", "R", 0, "connects per second over the whole run (overrides --interval)")
	fl.IntVarP(&f.keepalive, "keepalive", "k", 300, "keepalive in seconds (0: none)")
	fl.IntVarP(&f.version, "version", "V", 4, "MQTT protocol level: 3 (3.1), 4 (3.1.1) or 5 (5.0)")
	fl.BoolVarP(&f.clean, "clean", "C", true, "clean session / clean start")
	fl.StringVarP(&f.username, "username", "u", "", "username")
	fl.StringVarP(&f.password, "password", "P", "", "password")
	fl.StringVar(&f.ifaddr, "ifaddr", "", "source addresses of the broker's address family: list, range (127.0.0.2-127.0.0.9), CIDR or interface (its addresses of that family)")
	fl.StringVar(&f.prefix, "prefix", prefix, "client id prefix")
	fl.IntVarP(&f.run.sp.IDStart, "startnumber", "n", 0, "number of the first client (client id = prefix + number)")
	fl.DurationVar(&f.duration, "duration", duration, durationHelp)
	fl.BoolVarP(&f.secure, "ssl", "S", false, "connect over TLS (mqtts; with --ws, wss); see --cacert, --cert, --insecure")
	fl.BoolVar(&f.secure, "tls", false, "same as --ssl")
	fl.BoolVar(&f.ws, "ws", false, "connect over WebSocket (subprotocol mqtt, path --ws-path)")
	fl.StringVar(&f.wsPath, "ws-path", "/mqtt", "WebSocket request path, with --ws (\"mqtt\" is taken as \"/mqtt\")")
	f.run.registerCommon(cmd)
	t := &f.run.sp.TLS
	fl.StringVar(&t.CertFile, "certfile", "", "same as --cert (emqtt-bench's name)")
	fl.StringVar(&t.KeyFile, "keyfile", "", "same as --key (emqtt-bench's name)")
	fl.StringVar(&t.CAFile, "cacertfile", "", "same as --cacert")
}

// spec builds the Spec of the scenario of type typ the flags describe: group is the JSON
// group ("publishers" or "subscribers") with the group fields the verb adds, params the
// parameters it adds. The scenario is the Spec's own file; a password given with -P stays
// out of it (the marker stands for it).
func (f *quickFlags) spec(cmd *cobra.Command, typ, group string, fields, params map[string]any) (*spec.Spec, error) {
	data, brokers, err := scenario.QuickFile(scenario.Quick{Verb: cmd.Name(), Type: typ, Group: group, Fields: fields, Params: params,
		Count: f.count, IntervalMS: f.intervalMS, Rate: f.rate, RateGiven: cmd.Flags().Changed("rate"), Keepalive: f.keepalive,
		Version: f.version, Clean: f.clean, Username: f.username, Password: f.password, PasswordFile: f.run.sp.PasswordFile != "",
		Prefix: f.prefix, Duration: f.duration, Hosts: f.hosts, Port: f.port, PortGiven: cmd.Flags().Changed("port"),
		Secure: f.secure, WS: f.ws, WSPath: f.wsPath})
	if err != nil {
		return nil, usageError(err)
	}
	sp, err := f.run.spec(cmd, cmd.Name())
	if err != nil {
		return nil, err
	}
	sp.Scenario.File = secret.RedactJSON(data, "password")
	if f.password != "" {
		f.run.password = f.password
	}
	sp.Brokers = brokers
	if f.ifaddr != "" {
		sp.Bind = []string{f.ifaddr}
	}
	return sp, nil
}

// topicTemplate turns emqtt-bench topic placeholders into the scenario's (scenario.QuickTopic).
func (f *quickFlags) topicTemplate(t string) (string, error) {
	t, err := scenario.QuickTopic(t, f.username, f.run.sp.IDStart)
	if err != nil {
		return "", usageError(err)
	}
	return t, nil
}

func newConnCmd() *cobra.Command {
	var f quickFlags
	cmd := &cobra.Command{
		Use:   "conn -c N [-R rate | -i ms] [flags]",
		Short: "Open N MQTT connections, hold them with keepalive, disconnect (emqtt-bench conn)",
		Long: `Open N MQTT connections at a paced rate, hold them for --duration with PINGREQ every
keepalive, then disconnect, and report connect latency (TCP start to CONNACK), the achieved
rate, refusals by reason, failures by cause and the client's own CPU and memory.

Flags follow emqtt-bench: -c count, -i interval between connects in ms (or -R connects per
second), -k keepalive, -V protocol version, -u/-P credentials (or --password-file, or
$MQBLAST_PASSWORD), --ifaddr source addresses (this host's), --prefix and -n for client
ids. The broker is --host/-H (comma-separated hosts round-robin)
and -p; without --host the embedded broker is started. It is a Connections scenario built
from the flags, run like 'mqblast run' (host checks, --procs, --out, --format, --set on the
scenario the flags built, --threshold with exit 5; see mqblast run --help).`,
		Example: `  mqblast conn -c 1000 -R 500
  mqblast conn -H 10.0.0.5 -c 50000 -R 5000 --ifaddr 10.0.1.1-10.0.1.4 --duration 5m --out conn.json
  mqblast conn -H 127.0.0.1 -p 1883 -c 100 -i 10 -V 5 --format json | jq .connections
  mqblast conn -H 10.0.0.5 -c 10000 -R 2000 --threshold connections.failed==0 --threshold 'connections.connect_latency_us.p99<100000'
  mqblast conn -c 100 --set parameters.reconnect=backoff`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sp, err := f.spec(cmd, "Connections", "publishers", nil, nil)
			if err != nil {
				return err
			}
			return start(cmd, sp, f.run.password)
		},
	}
	f.register(cmd, "mqblast-conn-", 10*time.Second, "how long to hold the connections once connected")
	cmd.Flags().DurationVar(&f.duration, "hold", 10*time.Second, "same as --duration")
	return cmd
}

func newPubCmd() *cobra.Command {
	var (
		f        quickFlags
		topic    string
		qos      int
		size     int
		retain   bool
		interval float64
		msgRate  float64
		limit    int
		inflight int
		warmup   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "pub -c N -t TOPIC [-I ms | --msg-rate N] [-q qos] [-s bytes] [flags]",
		Short: "N clients publish on an open-loop schedule (emqtt-bench pub)",
		Long: `N clients connect, then each publishes one message every -I milliseconds (spread so the
total rate is smooth) until --duration, on an open-loop schedule: a late message is still
stamped with the time it was due. Every payload starts with mqblast's 16-byte header, so
'mqblast sub' (or any scenario's subscribers) measure latency from it.

-I takes fractions of a millisecond as emqtt-bench does (-I 0.1 is 10,000 messages per
second per client); --msg-rate says the same in messages per second per client
(--msg-rate 10000). -R/--rate is the connect rate, not the publish rate. --stages changes
the rate through one run instead, the connections staying up: DURATION:RATE or
DURATION:ramp:RATE stages, comma-separated, RATE per client as --msg-rate
(--stages 10s:100,30s:ramp:1000,10s:100 publishes for 50 s).

Topic placeholders: %i the client's index (from 0), %c its client id, %u the username,
%rand_N a random number from 1 to N drawn for every message. -L stops each client after that
many messages; -F caps the QoS 1/2 messages awaiting their acknowledgement. Publishing
starts once every client has connected (emqtt-bench's -w is always on).`,
		Example: `  mqblast pub -H 10.0.0.5 -c 100 -I 10 -t bench/%i -s 256 -q 1
  mqblast pub -H 10.0.0.5 -c 10 -I 0.1 -t bench/%i        # 10,000 msg/s per client
  mqblast pub -H 10.0.0.5 -c 10 --msg-rate 500 -t bench/%i --threshold 'client.saturated==0'
  mqblast pub -c 10 -t 'sensors/%rand_1000' -I 1 --duration 1m --out pub.json
  mqblast pub -c 50 -t bench/%i --stages 10s:100,30s:ramp:1000,10s:100 --csv pub.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError(errors.New("--topic: give the topic to publish to, e.g. -t bench/%i"))
			}
			rate, err := scenario.QuickPublishRate(interval, msgRate, cmd.Flags().Changed("interval-of-msg"), cmd.Flags().Changed("msg-rate"))
			if err != nil {
				return usageError(err)
			}
			if f.run.sp.Stages != "" {
				for _, name := range []string{"interval-of-msg", "msg-rate", "duration"} {
					if cmd.Flags().Changed(name) {
						return usageError(fmt.Errorf("--stages and --%s: the stages give the rate and the duration; give one of them", name))
					}
				}
			}
			t, err := f.topicTemplate(topic)
			if err != nil {
				return err
			}
			fields := map[string]any{"topics": t, "qos": qos, "retain": retain}
			params := map[string]any{"publish_rate": rate, "payload_size": size,
				"message_count": limit, "warmup_sec": warmup.Seconds()}
			if inflight > 0 {
				params["max_inflight_messages"] = inflight
			}
			sp, err := f.spec(cmd, "Publish", "publishers", fields, params)
			if err != nil {
				return err
			}
			return start(cmd, sp, f.run.password)
		},
	}
	f.register(cmd, "mqblast-pub-", 30*time.Second, "how long to publish (the warm-up included)")
	fl := cmd.Flags()
	fl.StringVarP(&topic, "topic", "t", "", "topic to publish to (placeholders %i %c %u %rand_N)")
	fl.IntVarP(&qos, "qos", "q", 0, "QoS 0, 1 or 2")
	fl.IntVarP(&size, "size", "s", 256, "payload size in bytes (at least 16: the measurement header)")
	fl.BoolVarP(&retain, "retain", "r", false, "publish with the retain flag")
	fl.Float64VarP(&interval, "interval-of-msg", "I", 1000, "ms between the messages of one client; fractions allowed (-I 0.1: 10,000 msg/s per client)")
	fl.Float64Var(&msgRate, "msg-rate", 0, "messages per second per client, instead of -I (--msg-rate 10000 is -I 0.1)")
	fl.IntVarP(&limit, "limit", "L", 0, "messages per client, then stop (0: until --duration)")
	fl.IntVarP(&inflight, "inflight", "F", 0, "QoS 1/2 messages awaiting acknowledgement per client (0: the default 1024)")
	fl.DurationVar(&warmup, "warmup", 0, "the first part of --duration, not measured")
	f.run.registerStages(fl)
	// emqtt-bench's -w: accepted, and always true here.
	fl.BoolP("wait-before-publishing", "w", true, "accepted for emqtt-bench compatibility: publishing always waits for every connect")
	return cmd
}

func newSubCmd() *cobra.Command {
	var (
		f     quickFlags
		topic string
		qos   int
	)
	cmd := &cobra.Command{
		Use:   "sub -c N -t FILTER [-q qos] [flags]",
		Short: "N clients subscribe and count what arrives (emqtt-bench sub)",
		Long: `N clients connect and subscribe to -t (placeholders %i %c %u) with -q, then receive for
--duration. Messages whose payload starts with mqblast's 16-byte header (from 'mqblast pub'
or a scenario) give latency from their due time; others are counted as unmeasured.

sub does not know what its publishers sent: expected and lost are unknown (null in the
result; a threshold on them fails). It counts the messages of every mqblast run, unless it is
given the publishers' --run-id (pub --run-id T, sub --run-id T): then another run's are
unexpected.other_run.`,
		Example: `  mqblast sub -H 10.0.0.5 -c 100 -t 'bench/#' -q 1 --duration 2m
  mqblast sub -c 10 -t 'bench/%i' --format json | jq .latency_us
  mqblast sub -H 10.0.0.5 -c 10 -t 'bench/#' --run-id t1   # beside: mqblast pub -H 10.0.0.5 -t 'bench/%i' --run-id t1
  mqblast sub -c 10 -t 'bench/#' --set subscribers.no_local=true -V 5 --threshold 'messages.received>0'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if topic == "" {
				return usageError(errors.New("--topic: give the filter to subscribe to, e.g. -t 'bench/#'"))
			}
			t, err := f.topicTemplate(topic)
			if err != nil {
				return err
			}
			sp, err := f.spec(cmd, "Subscribe", "subscribers", map[string]any{"topics": t, "qos": qos}, nil)
			if err != nil {
				return err
			}
			return start(cmd, sp, f.run.password)
		},
	}
	f.register(cmd, "mqblast-sub-", 60*time.Second, "how long to receive")
	fl := cmd.Flags()
	fl.StringVarP(&topic, "topic", "t", "", "topic filter (placeholders %i %c %u; wildcards and $share/G/ allowed)")
	fl.IntVarP(&qos, "qos", "q", 0, "subscription QoS 0, 1 or 2")
	return cmd
}
