package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

func init() { register(newConnCmd) }

// connFlags are the emqtt-bench style flags of `mqblast conn`.
type connFlags struct {
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
	hold       time.Duration
	run        runFlags
}

func newConnCmd() *cobra.Command {
	var f connFlags
	cmd := &cobra.Command{
		Use:   "conn -c N [-R rate | -i ms] [flags]",
		Short: "Open N MQTT connections, hold them with keepalive, disconnect (emqtt-bench conn)",
		Long: `Open N MQTT connections at a paced rate, hold them for --hold with PINGREQ every keepalive,
then disconnect, and report connect latency (TCP start to CONNACK), the achieved rate,
refusals by reason, failures by cause and the client's own CPU and memory.

Flags follow emqtt-bench: -c count, -i interval between connects in ms (or -R connects per
second), -k keepalive, -V protocol version, -u/-P credentials, --ifaddr source addresses,
--prefix and -n for client ids. The broker is --host/-H (comma-separated hosts round-robin)
and -p; without --host the embedded broker is started. It is a Connections scenario built
from the flags, run like 'mqblast run' (host checks, --procs, --out, --format).`,
		Example: `  mqblast conn -c 1000 -R 500
  mqblast conn -H 10.0.0.5 -c 50000 -R 5000 --ifaddr 10.0.1.1-10.0.1.4 --hold 5m --out conn.json
  mqblast conn -H 127.0.0.1 -p 1883 -c 100 -i 10 -V 5 --format json | jq .connections`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.scenario(cmd)
			if err != nil {
				return err
			}
			return executeScenario(cmd, s, &f.run)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.hosts, "host", "H", "", "broker host(s), comma-separated, clients round-robin (default: start the embedded broker)")
	fl.IntVarP(&f.port, "port", "p", 1883, "broker port")
	fl.IntVarP(&f.count, "count", "c", 200, "number of connections")
	fl.IntVarP(&f.intervalMS, "interval", "i", 10, "interval between connects in ms (ignored when --rate is set)")
	fl.Float64VarP(&f.rate, "rate", "R", 0, "connects per second over the whole run (overrides --interval)")
	fl.IntVarP(&f.keepalive, "keepalive", "k", 300, "keepalive in seconds (0: none)")
	fl.IntVarP(&f.version, "version", "V", 4, "MQTT protocol level: 3 (3.1), 4 (3.1.1) or 5 (5.0)")
	fl.BoolVarP(&f.clean, "clean", "C", true, "clean session / clean start")
	fl.StringVarP(&f.username, "username", "u", "", "username")
	fl.StringVarP(&f.password, "password", "P", "", "password")
	fl.StringVar(&f.ifaddr, "ifaddr", "", "source addresses: list, range (127.0.0.2-127.0.0.9), CIDR or interface")
	fl.StringVar(&f.prefix, "prefix", "mqblast-conn-", "client id prefix")
	fl.IntVarP(&f.run.idStart, "startnumber", "n", 0, "number of the first client (client id = prefix + number)")
	fl.DurationVar(&f.hold, "hold", 10*time.Second, "how long to hold the connections once connected")
	fl.StringVar(&f.run.out, "out", "", "write the result document (JSON) to this file")
	fl.StringVar(&f.run.format, "format", "text", "stdout format: text (summary) or json (the result document)")
	fl.StringVar(&f.run.procs, "procs", "auto", "worker processes: auto (as many as the descriptor limit needs) or N")
	fl.BoolVar(&f.run.noCheck, "no-check", false, "skip the host checks before the run")
	fl.IntVar(&f.run.loops, "loops", 0, "event loops per process (0: one per core)")
	return cmd
}

// scenario builds the Connections scenario the flags describe.
func (f *connFlags) scenario(cmd *cobra.Command) (*scenario.Scenario, error) {
	switch {
	case f.count <= 0:
		return nil, usageError(fmt.Errorf("--count %d: must be at least 1", f.count))
	case f.version < 3 || f.version > 5:
		return nil, usageError(fmt.Errorf("--version %d: must be 3 (MQTT 3.1), 4 (3.1.1) or 5 (5.0)", f.version))
	case f.keepalive < 0 || f.keepalive > 65535:
		return nil, usageError(fmt.Errorf("--keepalive %d: must be 0..65535 seconds", f.keepalive))
	case f.hold < 0:
		return nil, usageError(fmt.Errorf("--hold %v: must not be negative", f.hold))
	}
	rate := f.rate
	if !cmd.Flags().Changed("rate") {
		if f.intervalMS <= 0 {
			return nil, usageError(fmt.Errorf("--interval %d: must be at least 1 ms (or give --rate)", f.intervalMS))
		}
		rate = 1000 / float64(f.intervalMS)
	}
	if rate <= 0 {
		return nil, usageError(fmt.Errorf("--rate %v: must be more than 0", f.rate))
	}
	var pv any = f.version
	if f.version == 3 {
		pv = "3.1"
	}
	doc := map[string]any{
		"name": fmt.Sprintf("conn-%d", f.count),
		"type": "Connections",
		"publishers": map[string]any{
			"id_prefix": f.prefix, "protocol_version": pv, "client_count": f.count, "clean_session": f.clean,
		},
		"parameters": map[string]any{
			"connection_rate": rate, "duration_sec": f.hold.Seconds(), "keep_alive_sec": f.keepalive,
		},
	}
	if f.username != "" || f.password != "" {
		doc["server"] = map[string]any{"username": f.username, "password": f.password}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	s, err := scenario.Parse("conn", data)
	if err != nil {
		return nil, usageError(err)
	}
	if f.hosts != "" {
		var bs []string
		for _, h := range strings.Split(f.hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				bs = append(bs, fmt.Sprintf("%s:%d", h, f.port))
			}
		}
		f.run.brokers = bs
	}
	if f.ifaddr != "" {
		f.run.bind = []string{f.ifaddr}
	}
	return s, nil
}

// finishRun performs a Connections run and writes its result: the summary or the JSON
// document on stdout, the document to out if given. It maps the outcome to an exit code.
func finishRun(cmd *cobra.Command, run *bench.Runner, out, format string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "connecting %d clients to %s at %.0f/s\n", run.Engine.Clients,
		strings.Join(run.Engine.Brokers, ","), run.Engine.ConnectRate)
	res, err := run.Run(cmd.Context())
	if res == nil {
		if errors.Is(err, reactor.ErrAddrCapacity) {
			return withCode(exitNotReady, err)
		}
		return err
	}
	if werr := writeResult(cmd, res, out, format); werr != nil {
		return werr
	}
	return outcome(res, err, cmd.Context())
}

func firstError(res *bench.Result) string {
	if len(res.Errors) == 0 {
		return "no error recorded"
	}
	e := res.Errors[0]
	return fmt.Sprintf("%s x%d (%s)", e.Kind, e.Count, e.Example)
}

func writeResult(cmd *cobra.Command, res *bench.Result, out, format string) error {
	if out != "" {
		if err := writeFile(out, res.WriteJSON); err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "result written to %s\n", out)
	}
	if format == "json" {
		return res.WriteJSON(cmd.OutOrStdout())
	}
	return res.WriteSummary(cmd.OutOrStdout())
}
