package sink

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// RunOptions say how Run serves (in this process, or in Procs processes on one port) and
// where it reports.
type RunOptions struct {
	// Procs is the number of processes; more than one, and Run starts them as children
	// (ServeProcs) unless Child.
	Procs int
	// Child says this process is one of a parent's: it shares the port (SO_REUSEPORT) and
	// writes its ready line and its Lines on Stdout, for the parent.
	Child bool
	// StatsJSON writes the Lines on Stdout every Interval and at the end.
	StatsJSON bool
	Interval  time.Duration
	// ChildArgs are the arguments of `mqblast` that run one process of a parent listening on
	// listen (ProcsOptions.Args).
	ChildArgs func(listen string, turn Turn) []string
	// Connections, when above 0, is how many connections the processes are to hold: they
	// take them in turns, an equal share each (ProcsOptions.Fill).
	Connections int
	// Stdout takes the Lines (and a child's ready line), Stderr the ready line and the
	// summary for a person.
	Stdout, Stderr io.Writer
}

// Run runs the sink of cfg until ctx ends, then prints its counters on o.Stderr (not as a
// child: the parent prints them).
func Run(ctx context.Context, cfg Config, o RunOptions) error {
	if o.Procs > 1 && !o.Child {
		return runParent(ctx, cfg, o)
	}
	cfg.SharePort = o.Child
	so := ServeOptions{Interval: o.Interval}
	if o.StatsJSON || o.Child {
		so.Lines = o.Stdout
	}
	if o.Child {
		so.Ready = func(addr string) { fmt.Fprintf(o.Stdout, "ready %s\n", addr) }
	} else {
		so.Ready = func(addr string) {
			fmt.Fprintf(o.Stderr, "ready %s\n", addr)
			fmt.Fprintf(o.Stderr, "mqblast sink: an instrument, not a broker (no retained messages, sessions or authentication); relaying on %s%s in 1 process, Ctrl-C prints the counters\n", addr, overTLS(cfg))
		}
	}
	final, err := Serve(ctx, cfg, so)
	if err != nil {
		return err
	}
	if !o.Child {
		WriteSummary(o.Stderr, &final)
	}
	return nil
}

// WriteSummary prints the counters for a person.
func WriteSummary(w io.Writer, l *Line) {
	s := &l.Stats
	fmt.Fprintf(w, "sink %s: %d process(es), %.1fs, cpu %.2fs, rss %.1f MiB\n", l.Addr, s.Procs, l.TS, l.CPUS, float64(l.RSSBytes)/(1<<20))
	fmt.Fprintf(w, "  connections  %d open, %d accepted, %d connected, %d refused, %d closed for protocol errors, %d over --max-held\n",
		s.Connections, s.ConnectionsTotal, s.Connected, s.Refused, s.ProtocolErrors, s.HeldOver)
	fmt.Fprintf(w, "  publish in   %d (qos0 %d, qos1 %d, qos2 %d), %d matched no subscription\n",
		s.PublishInTotal(), s.PublishIn[0], s.PublishIn[1], s.PublishIn[2], s.NoSubscribers)
	fmt.Fprintf(w, "  relayed      %d (qos0 %d, qos1 %d, qos2 %d) in %d writes; acked %d, unacked %d\n",
		s.RelayedTotal(), s.Relayed[0], s.Relayed[1], s.Relayed[2], s.Writes, s.Acked, s.Unacked)
	fmt.Fprintf(w, "  dropped      %d (output_full %d, too_large %d, receive_maximum %d)\n",
		s.Dropped.Total(), s.Dropped.OutputFull, s.Dropped.TooLarge, s.Dropped.ReceiveMaximum)
	fmt.Fprintf(w, "  bytes        in %d, out %d, held now for packets not yet whole %d\n", s.BytesIn, s.BytesOut, s.HeldBytes)
	if t := &s.TLS; *t != (TLSStats{}) {
		c := &t.Closed
		fmt.Fprintf(w, "  tls          %d handshakes, %d failed, %d queued; closed by the record layer %d (close_notify %d, alert %d, record_overflow %d, bad_record_mac %d, unexpected_message %d, decode_error %d, key_update_storm %d)\n",
			t.Handshakes, t.HandshakeFailures, t.Queued, c.Total(), c.CloseNotify, c.Alert, c.RecordOverflow, c.BadRecordMAC, c.Unexpected, c.DecodeError, c.KeyUpdateStorm)
	}
	if ws := &s.WS; *ws != (WSStats{}) {
		fmt.Fprintf(w, "  websocket    %d upgrades, %d refused; %d pings answered, %d close frames from clients, %d closed for a frame error\n",
			ws.Upgrades, ws.Refused, ws.Pings, ws.CloseFrames, ws.ProtocolErrors)
	}
	if n := s.RelayedTotal(); n > 0 {
		fmt.Fprintf(w, "  cpu per relayed message %.3f µs\n", l.CPUS*1e6/float64(n))
	}
}

// runParent runs o.Procs child processes on one port and sums their counters.
func runParent(ctx context.Context, cfg Config, o RunOptions) error {
	po := ProcsOptions{Procs: o.Procs, Listen: cfg.Addr, Log: o.Stderr, Interval: o.Interval, Args: o.ChildArgs,
		Fill: (o.Connections + o.Procs - 1) / o.Procs,
		Ready: func(addr string) {
			fmt.Fprintf(o.Stderr, "ready %s\n", addr)
			fmt.Fprintf(o.Stderr, "mqblast sink: an instrument, not a broker; %d processes on %s%s (SO_REUSEPORT), relaying only within each process; Ctrl-C prints the summed counters\n", o.Procs, addr, overTLS(cfg))
		}}
	if o.StatsJSON {
		po.Lines = o.Stdout
	}
	final, err := ServeProcs(ctx, po)
	if final.Addr == "" {
		return err
	}
	WriteSummary(o.Stderr, &final)
	return err
}

// Bounds of the sink's flags.
const (
	// MaxProcs is the most processes --procs takes.
	MaxProcs = 1024
	// ProcsPerCore bounds --procs without connections that need more: each process has one
	// event loop, and processes beyond a few per core only take turns on the cores.
	ProcsPerCore = 4
	// AutoFill is the share of what one process holds (PerProcess) that --procs auto plans
	// for: the hash of SO_REUSEPORT gives some processes more than the mean (a few hundred
	// over 20,000 a process), and a full process refuses connections.
	AutoFill = 0.95
	// MaxFlushDelay bounds --flush-delay: a relayed copy waits up to the delay, so beyond
	// it a run measures the sink's delay, not the client.
	MaxFlushDelay = time.Second
)

// PerProcess is how many connections one sink process holds: its descriptor hard limit
// (Go raises the soft one to it) less a few for the process itself; 1000 when the limit is
// not known or small.
func PerProcess() int {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Max > 1064 {
		return int(min(lim.Max, 1<<24)) - 64
	}
	return 1000
}

// ParseProcs reads --procs, a number or auto (ProcsFor connections), and checks it with
// --connections (0: not given): at most N × PerProcess connections for N processes, at
// most MaxProcs × PerProcess for any, and no more processes than ProcsPerCore per core
// unless the connections need them.
func ParseProcs(procs string, connections int) (int, error) {
	per := PerProcess()
	switch {
	case connections < 0:
		return 0, fmt.Errorf("--connections %d: want 0 (not known) or the number of connections to hold", connections)
	case connections > MaxProcs*per:
		return 0, fmt.Errorf("--connections %d: more than %d processes can hold (%d each: the descriptor hard limit less 64); "+
			"raise the hard limit (mqblast tune apply) or spread the connections over several hosts", connections, MaxProcs, per)
	}
	if procs == "auto" {
		return ProcsFor(connections), nil
	}
	n, err := strconv.Atoi(procs)
	if err != nil || n < 1 || n > MaxProcs {
		return 0, fmt.Errorf("--procs %q: want a number from 1 to %d, or auto", procs, MaxProcs)
	}
	need := (connections + per - 1) / per
	if connections > n*per {
		return 0, fmt.Errorf("--procs %d holds at most %d connections (%d per process: the descriptor hard limit less 64), "+
			"not --connections %d: give --procs %d or more, or --procs auto", n, n*per, per, connections, need)
	}
	if most := max(ProcsPerCore*runtime.NumCPU(), need); n > most {
		return 0, fmt.Errorf("--procs %d: more than %d processes (%d per core on this host's %d cores) only take turns on the cores; "+
			"more are for connections one process cannot hold (%d each): give --connections with them, or --procs %d or fewer",
			n, most, ProcsPerCore, runtime.NumCPU(), per, most)
	}
	return n, nil
}

// CheckFlushDelay checks a flush delay given to flag (--flush-delay, run --sink-flush-delay):
// 0 to MaxFlushDelay.
func CheckFlushDelay(flag string, d time.Duration) error {
	if d < 0 || d > MaxFlushDelay {
		return fmt.Errorf("%s %v: want 0 (each write at the end of the loop's round) to %v: a relayed copy waits up to "+
			"the delay, so a longer one measures the sink, not the client; e.g. %s 200µs", flag, d, MaxFlushDelay, flag)
	}
	return nil
}

// CheckMaxConnections checks --max-connections: 0 (no limit) up to what one process holds
// (PerProcess), beyond which the limit would never refuse anything.
func CheckMaxConnections(n int) error {
	per := PerProcess()
	switch {
	case n < 0:
		return fmt.Errorf("--max-connections %d: want 0 (no limit) or the most connections a process keeps open, e.g. 10000", n)
	case n > per:
		return fmt.Errorf("--max-connections %d: one process holds at most %d connections (the descriptor hard limit less 64), "+
			"so it would never refuse one: give at most %d, or raise the hard limit (mqblast tune apply)", n, per, per)
	}
	return nil
}

// overTLS says so when the sink speaks TLS.
func overTLS(cfg Config) string {
	if cfg.WS {
		return overWS(cfg)
	}
	if cfg.TLS == nil {
		return ""
	}
	if cfg.TLS.ClientCAs != nil {
		return " over TLS 1.3 (mqtts, client certificates required)"
	}
	return " over TLS 1.3 (mqtts)"
}
