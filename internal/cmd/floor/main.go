// Command floor is the client's per-message floor that make bench-floor holds
// 'mqblast run' against: it runs a messaging scenario's clients as the raw-socket client of
// internal/floor (the reads and writes mqblast makes for the plan, with no MQTT state and
// no measurement) and prints one JSON document, the process's CPU time over the measure
// window per PUBLISH read in it (cpu_per_received_us). 'floor keepalive --connections N'
// is the keepalive floor instead (make bench-conn-curve): each side's CPU per PINGREQ and
// PINGRESP exchange over N loopback connections it holds itself (floor.Keepalive). 'floor
// tls --broker HOST:PORT --cacert FILE' is the TLS floor (make bench-tls): bare crypto/tls
// handshakes with the tls.Config mqblast builds from the same options (floor.TLS). It takes a scenario and the
// overrides 'mqblast run' takes, so that both run the same plan. 3.1.1 and 5.0, TCP only,
// no %rand_N topics; connecting is blocking and not part of the figure. It is an
// instrument of the benchmark and not part of the mqblast binary.
//
//	go build -o bin/floor ./internal/cmd/floor
//	bin/floor quick-p2p-100 --broker 127.0.0.1:1883 --set publishers.qos=0 --duration 10s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/floor"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// The exit codes are mqblast's.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInvalid     = 3
	exitInterrupted = 130
)

// drain bounds the floor's drain: its CPU counts only in the window, so the drain only
// lets the last messages arrive before the sockets close.
const drain = 500 * time.Millisecond

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// codeError carries an exit code with its error.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }

func fail(code int, err error) error { return &codeError{code, err} }

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := floorRun(ctx, args, stdout)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "floor: %v\n", err)
	var ce *codeError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	default:
		return exitFailed
	}
}

func floorRun(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "keepalive" {
		return keepaliveRun(args[1:], stdout)
	}
	if len(args) > 0 && args[0] == "tls" {
		return tlsRun(args[1:], stdout)
	}
	var (
		brokers, bind []string
		sets          []string
		duration      time.Duration
		loops         int
		out           string
	)
	fl := pflag.NewFlagSet("floor", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.StringSliceVar(&brokers, "broker", nil, "broker host:port (numeric), replacing the scenario's server")
	fl.StringArrayVar(&sets, "set", nil, "override a scenario field: path=value (repeatable), as for mqblast run")
	fl.StringSliceVar(&bind, "bind", nil, "source addresses, ranges or blocks, as for mqblast run (no interface names)")
	fl.DurationVar(&duration, "duration", 0, "override parameters.duration_sec")
	fl.IntVar(&loops, "loops", 0, "event loops (0: one per core, as mqblast run)")
	fl.StringVar(&out, "out", "", "also write the JSON document to this file")
	if err := fl.Parse(args); errors.Is(err, pflag.ErrHelp) {
		_, err = fmt.Fprintf(stdout, "usage: floor SCENARIO --broker HOST:PORT [flags]\n%s", fl.FlagUsages())
		return err
	} else if err != nil {
		return fail(exitUsage, err)
	}
	if fl.NArg() != 1 {
		return fail(exitUsage, fmt.Errorf("floor takes one scenario (a file or a built-in name), got %d arguments", fl.NArg()))
	}
	s, err := scenario.Resolve(fl.Arg(0))
	if err != nil {
		return fail(exitInvalid, err)
	}
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fail(exitUsage, fmt.Errorf("--set: want path=value, e.g. parameters.publish_rate=500"))
		}
		if err := s.Set(strings.TrimSpace(k), v); err != nil {
			return fail(exitInvalid, err)
		}
	}
	if duration > 0 {
		if err := s.Set("parameters.duration_sec", duration.String()); err != nil {
			return fail(exitInvalid, err)
		}
	}
	if len(brokers) > 0 {
		if err := s.SetBrokers(brokers); err != nil {
			return fail(exitUsage, err)
		}
	}
	if len(bind) > 0 {
		if err := s.SetBind(bind); err != nil {
			return fail(exitUsage, err)
		}
	}
	plan, err := scenario.NewPlan(s)
	if err != nil {
		return fail(exitInvalid, err)
	}
	if len(plan.Brokers()) == 0 {
		return fail(exitUsage, errors.New("floor needs a broker: give --broker HOST:PORT (it starts none)"))
	}
	r, err := bench.NewRunner(plan, nil, 0)
	if err != nil {
		return fail(exitInvalid, err)
	}
	if !r.Messaging {
		return fail(exitInvalid, fmt.Errorf("scenario %q has no messages: the floor is for messaging scenarios", s.Name))
	}
	r.Engine.Loops = loops
	res, err := floor.Run(ctx, floor.Config{Engine: r.Engine,
		Warmup: r.Warmup, Duration: r.Duration, Drain: min(r.Drain, drain)})
	if res != nil {
		if out != "" {
			b, _ := json.MarshalIndent(res, "", "  ")
			if werr := os.WriteFile(out, append(b, '\n'), 0o644); werr != nil {
				return fmt.Errorf("cannot write %s: %w", out, werr)
			}
		}
		if werr := json.NewEncoder(stdout).Encode(res); werr != nil {
			return werr
		}
	}
	return err
}

// keepaliveRun measures the keepalive floor and prints its JSON document.
func keepaliveRun(args []string, stdout io.Writer) error {
	var conns, rounds int
	fl := pflag.NewFlagSet("floor keepalive", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.IntVar(&conns, "connections", 10000, "loopback connections to hold (2 descriptors each)")
	fl.IntVar(&rounds, "rounds", 20, "PINGREQ rounds over every connection to measure")
	if err := fl.Parse(args); errors.Is(err, pflag.ErrHelp) {
		_, err = fmt.Fprintf(stdout, "usage: floor keepalive [flags]\n%s", fl.FlagUsages())
		return err
	} else if err != nil {
		return fail(exitUsage, err)
	}
	res, err := floor.Keepalive(floor.KeepaliveConfig{Conns: conns, Rounds: rounds})
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// tlsRun measures the TLS floor and prints its JSON document.
func tlsRun(args []string, stdout io.Writer) error {
	var (
		addr  string
		conns int
		o     reactor.TLSOptions
	)
	fl := pflag.NewFlagSet("floor tls", pflag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.StringVar(&addr, "broker", "", "the TLS listener, host:port")
	fl.IntVar(&conns, "connections", 2000, "handshakes to measure, one after the other")
	fl.StringVar(&o.CAFile, "cacert", "", "PEM CA certificates to verify the broker with, as for mqblast run")
	fl.StringVar(&o.ServerName, "sni", "", "the server name, as for mqblast run (default: the broker's host)")
	fl.StringVar(&o.Version, "tls-version", "", "1.2 or 1.3, as for mqblast run")
	if err := fl.Parse(args); errors.Is(err, pflag.ErrHelp) {
		_, err = fmt.Fprintf(stdout, "usage: floor tls --broker HOST:PORT [flags]\n%s", fl.FlagUsages())
		return err
	} else if err != nil {
		return fail(exitUsage, err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("--broker %q: want host:port", addr))
	}
	cfg, err := reactor.TLSConfig(o)
	if err != nil {
		return fail(exitUsage, err)
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	res, err := floor.TLS(floor.TLSConfig{Addr: addr, Config: cfg, Conns: conns})
	if err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}
