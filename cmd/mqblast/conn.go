package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// quickFlags are the emqtt-bench style flags that conn, pub and sub share: most of them
// describe the scenario (scenario.Quick), the rest the run.
type quickFlags struct {
	q      scenario.Quick
	ifaddr string
	run    runFlags
}

func (f *quickFlags) register(cmd *cobra.Command, prefix string, duration time.Duration, durationHelp string) {
	fl, q := cmd.Flags(), &f.q
	fl.StringVarP(&q.Hosts, "host", "H", "", "broker host(s), comma-separated, clients round-robin (default: start the embedded broker)")
	fl.IntVarP(&q.Port, "port", "p", 1883, "broker port")
	fl.IntVarP(&q.Count, "count", "c", 200, "number of clients")
	fl.IntVarP(&q.IntervalMS, "interval", "i", 10, "interval between connects in ms (ignored when --rate is set)")
	fl.Float64VarP(&q.Rate, "rate", "R", 0, "connects per second over the whole run (overrides --interval)")
	fl.IntVarP(&q.Keepalive, "keepalive", "k", 300, "keepalive in seconds (0: none)")
	fl.IntVarP(&q.Version, "version", "V", 4, "MQTT protocol level: 3 (3.1), 4 (3.1.1) or 5 (5.0)")
	fl.BoolVarP(&q.Clean, "clean", "C", true, "clean session / clean start")
	fl.StringVarP(&q.Username, "username", "u", "", "username")
	fl.StringVarP(&q.Password, "password", "P", "", "password")
	fl.StringVar(&f.ifaddr, "ifaddr", "", "source addresses of the broker's address family: list, range (127.0.0.2-127.0.0.9), CIDR or interface (its addresses of that family)")
	fl.StringVar(&q.Prefix, "prefix", prefix, "client id prefix")
	fl.IntVarP(&f.run.sp.IDStart, "startnumber", "n", 0, "number of the first client (client id = prefix + number)")
	fl.DurationVar(&q.Duration, "duration", duration, durationHelp)
	fl.BoolVarP(&q.Secure, "ssl", "S", false, "connect over TLS (mqtts; with --ws, wss); see --cacert, --cert, --insecure")
	fl.BoolVar(&q.Secure, "tls", false, "same as --ssl")
	fl.BoolVar(&q.WS, "ws", false, "connect over WebSocket (subprotocol mqtt, path --ws-path)")
	fl.StringVar(&q.WSPath, "ws-path", "/mqtt", "WebSocket request path, with --ws (\"mqtt\" is taken as \"/mqtt\")")
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
	q := f.q
	q.Verb, q.Type, q.Group, q.Fields, q.Params = cmd.Name(), typ, group, fields, params
	q.RateGiven, q.PortGiven, q.PasswordFile = cmd.Flags().Changed("rate"), cmd.Flags().Changed("port"), f.run.sp.PasswordFile != ""
	data, brokers, err := scenario.QuickFile(q)
	if err != nil {
		return nil, usageError(err)
	}
	sp, err := f.run.spec(cmd, cmd.Name())
	if err != nil {
		return nil, err
	}
	sp.Scenario.File, sp.Brokers = secret.RedactJSON(data, "password"), brokers
	if q.Password != "" {
		f.run.password = q.Password
	}
	if f.ifaddr != "" {
		sp.Bind = []string{f.ifaddr}
	}
	return sp, nil
}

// topicTemplate turns emqtt-bench topic placeholders into the scenario's (scenario.QuickTopic).
func (f *quickFlags) topicTemplate(t string) (string, error) {
	t, err := scenario.QuickTopic(t, f.q.Username, f.run.sp.IDStart)
	if err != nil {
		return "", usageError(err)
	}
	return t, nil
}

func newConnCmd() *cobra.Command {
	var f quickFlags
	cmd := &cobra.Command{
		Use:     "conn -c N [-R rate | -i ms] [flags]",
		Short:   "Open N MQTT connections, hold them with keepalive, disconnect (emqtt-bench conn)",
		Long:    helpText("conn"),
		Example: examples("conn"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sp, err := f.spec(cmd, "Connections", "publishers", nil, nil)
			if err != nil {
				return err
			}
			return start(cmd, sp, f.run.passwords())
		},
	}
	f.register(cmd, "mqblast-conn-", 10*time.Second, "how long to hold the connections once connected")
	cmd.Flags().DurationVar(&f.q.Duration, "hold", 10*time.Second, "same as --duration")
	return cmd
}

func newPubCmd() *cobra.Command {
	var (
		f quickFlags
		p scenario.QuickPub
	)
	cmd := &cobra.Command{
		Use:     "pub -c N -t TOPIC [-I ms | --msg-rate N] [-q qos] [-s bytes] [flags]",
		Short:   "N clients publish on an open-loop schedule (emqtt-bench pub)",
		Long:    helpText("pub"),
		Example: examples("pub"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			p.IntervalGiven, p.MsgRateGiven, p.Stages = fl.Changed("interval-of-msg"), fl.Changed("msg-rate"), f.run.sp.Stages != ""
			for _, name := range []string{"duration", "msg-rate", "interval-of-msg"} {
				if fl.Changed(name) {
					p.Replaced = name
				}
			}
			p.Username, p.IDStart = f.q.Username, f.run.sp.IDStart
			p.SizeGiven = cmd.Flags().Changed("size")
			fields, params, err := p.Parts()
			if err != nil {
				return usageError(err)
			}
			sp, err := f.spec(cmd, "Publish", "publishers", fields, params)
			if err != nil {
				return err
			}
			return start(cmd, sp, f.run.passwords())
		},
	}
	f.register(cmd, "mqblast-pub-", 30*time.Second, "how long to publish (the warm-up included)")
	fl := cmd.Flags()
	fl.StringVarP(&p.Topic, "topic", "t", "", "topic to publish to (placeholders %i %c %u %rand_N)")
	fl.IntVarP(&p.QoS, "qos", "q", 0, "QoS 0, 1 or 2")
	fl.IntVarP(&p.Size, "size", "s", 256, "payload size in bytes (at least 16: the measurement header)")
	fl.StringVar(&p.PayloadTemplate, "payload-template", "", "the text or JSON every message carries after its measurement bytes, "+
		"with placeholders rendered per message ({{client_id}}, {{seq}}, {{rfc3339}}, {{rand_float 20 30}}, {{mark}} ...); the payload size follows from it (not with --size)")
	fl.StringVar(&p.PayloadFile, "payload-file", "", "payloads from a file instead: a directory (each file one payload), a JSON-lines file (.jsonl: each line one) "+
		"or one file, sent in turn after the measurement bytes (not with --size or --payload-template)")
	fl.BoolVarP(&p.Retain, "retain", "r", false, "publish with the retain flag")
	fl.Float64VarP(&p.IntervalMS, "interval-of-msg", "I", 1000, "ms between the messages of one client; fractions allowed (-I 0.1: 10,000 msg/s per client)")
	fl.Float64Var(&p.MsgRate, "msg-rate", 0, "messages per second per client, instead of -I (--msg-rate 10000 is -I 0.1)")
	fl.IntVarP(&p.Limit, "limit", "L", 0, "messages per client, then stop (0: until --duration)")
	fl.IntVarP(&p.Inflight, "inflight", "F", 0, "QoS 1/2 messages awaiting acknowledgement per client (0: the default 1024)")
	fl.DurationVar(&p.Warmup, "warmup", 0, "the first part of --duration, not measured")
	fl.StringVar(&p.Arrival, "arrival", "", `how messages fall due at the rate: "constant" (the default), "poisson" or "burst"`)
	fl.IntVar(&p.BurstSize, "burst-size", 0, `with --arrival burst: messages due at once, every burst-size/rate seconds`)
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
		Use:     "sub -c N -t FILTER [-q qos] [flags]",
		Short:   "N clients subscribe and count what arrives (emqtt-bench sub)",
		Long:    helpText("sub"),
		Example: examples("sub"),
		Args:    cobra.NoArgs,
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
			return start(cmd, sp, f.run.passwords())
		},
	}
	f.register(cmd, "mqblast-sub-", 60*time.Second, "how long to receive")
	fl := cmd.Flags()
	fl.StringVarP(&topic, "topic", "t", "", "topic filter (placeholders %i %c %u; wildcards and $share/G/ allowed)")
	fl.IntVarP(&qos, "qos", "q", 0, "subscription QoS 0, 1 or 2")
	return cmd
}
