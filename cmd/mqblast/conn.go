package main

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
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
	start      int
	hold       time.Duration
	inflight   int
	loops      int
	out        string
	format     string
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
and -p. Progress goes to stderr once a second; Ctrl-C disconnects and still reports.`,
		Example: `  mqblast conn -H 127.0.0.1 -p 1883 -c 1000 -R 500
  mqblast conn -H 10.0.0.5 -c 50000 -R 5000 --ifaddr 10.0.1.1-10.0.1.4 --hold 5m --out conn.json
  mqblast conn -c 100 -i 10 -V 5 --format json | jq .connections`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runConn(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.hosts, "host", "H", "127.0.0.1", "broker host(s), comma-separated; clients round-robin over them")
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
	fl.IntVarP(&f.start, "startnumber", "n", 0, "number of the first client (client id = prefix + number)")
	fl.DurationVar(&f.hold, "hold", 10*time.Second, "how long to hold the connections once connected")
	fl.IntVar(&f.inflight, "max-connecting", 100, "connects in flight at once (TCP start to CONNACK)")
	fl.IntVar(&f.loops, "loops", 0, "event loops (0: one per core)")
	fl.StringVar(&f.out, "out", "", "write the result document (JSON) to this file")
	fl.StringVar(&f.format, "format", "text", "stdout format: text or json")
	return cmd
}

func runConn(cmd *cobra.Command, f *connFlags) error {
	if f.count <= 0 {
		return usageError(fmt.Errorf("--count %d: must be at least 1", f.count))
	}
	if f.version < 3 || f.version > 5 {
		return usageError(fmt.Errorf("--version %d: must be 3 (MQTT 3.1), 4 (3.1.1) or 5 (5.0)", f.version))
	}
	if f.format != "text" && f.format != "json" {
		return usageError(fmt.Errorf("--format %q: must be text or json", f.format))
	}
	if f.keepalive < 0 || f.keepalive > 65535 {
		return usageError(fmt.Errorf("--keepalive %d: must be 0..65535 seconds", f.keepalive))
	}
	rate := f.rate
	if rate <= 0 && f.intervalMS > 0 {
		rate = 1000 / float64(f.intervalMS)
	}
	var brokers []string
	for _, h := range strings.Split(f.hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			brokers = append(brokers, net.JoinHostPort(h, strconv.Itoa(f.port)))
		}
	}
	if len(brokers) == 0 {
		return usageError(errors.New("--host: no broker host given"))
	}
	var pool *reactor.AddrPool
	if f.ifaddr != "" {
		p, err := reactor.ParseAddrs(f.ifaddr, nil)
		if err != nil {
			return usageError(err)
		}
		pool = p
	}
	spec := reactor.ClientSpec{
		Username: f.username, Password: f.password, Version: byte(f.version), CleanStart: f.clean,
		Keepalive: time.Duration(f.keepalive) * time.Second,
	}
	prefix, start := f.prefix, f.start
	run := &bench.ConnRun{
		Engine: reactor.Config{
			Brokers: brokers, Bind: pool, Loops: f.loops, Clients: f.count,
			Client: func(i int) reactor.ClientSpec {
				s := spec
				s.ID = prefix + strconv.Itoa(start+i)
				return s
			},
			ConnectRate: rate, MaxConnecting: f.inflight,
		},
		Hold:        f.hold,
		ToolVersion: version,
		Progress:    cmd.ErrOrStderr(),
	}
	return finishRun(cmd, run, f.out, f.format)
}

// finishRun performs a Connections run and writes its result: the summary or the JSON
// document on stdout, the document to out if given. It maps the outcome to an exit code.
func finishRun(cmd *cobra.Command, run *bench.ConnRun, out, format string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "connecting %d clients to %s\n", run.Engine.Clients, strings.Join(run.Engine.Brokers, ","))
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
	switch {
	case errors.Is(err, bench.ErrInterrupted):
		return withCode(exitInterrupted, errors.New("interrupted: partial result written"))
	case err != nil:
		return err
	case res.Connections.Established == 0:
		return withCode(exitFailed, fmt.Errorf("no connection was established: %s", firstError(res)))
	}
	return nil
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
