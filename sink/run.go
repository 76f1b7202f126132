package sink

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"
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
	ChildArgs func(listen string) []string
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
			fmt.Fprintf(o.Stderr, "mqblast sink: an instrument, not a broker (no retained messages, sessions or authentication); relaying on %s in 1 process, Ctrl-C prints the counters\n", addr)
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
	if n := s.RelayedTotal(); n > 0 {
		fmt.Fprintf(w, "  cpu per relayed message %.3f µs\n", l.CPUS*1e6/float64(n))
	}
}

// runParent runs o.Procs child processes on one port and sums their counters.
func runParent(ctx context.Context, cfg Config, o RunOptions) error {
	po := ProcsOptions{Procs: o.Procs, Listen: cfg.Addr, Log: o.Stderr, Interval: o.Interval, Args: o.ChildArgs,
		Ready: func(addr string) {
			fmt.Fprintf(o.Stderr, "ready %s\n", addr)
			fmt.Fprintf(o.Stderr, "mqblast sink: an instrument, not a broker; %d processes on %s (SO_REUSEPORT), relaying only within each process; Ctrl-C prints the summed counters\n", o.Procs, addr)
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

// ParseProcs reads --procs: a number from 1 to 1024, or auto (ProcsFor connections).
func ParseProcs(procs string, connections int) (int, error) {
	if procs != "auto" {
		n, err := strconv.Atoi(procs)
		if err != nil || n < 1 || n > 1024 {
			return 0, fmt.Errorf("--procs %q: want a number from 1 to 1024, or auto", procs)
		}
		return n, nil
	}
	return ProcsFor(connections), nil
}
