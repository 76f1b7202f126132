package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/sink"
)

// sinkFlags are the flags of `mqblast sink`; a parent passes them on to its children.
type sinkFlags struct {
	listen      string
	allowRemote bool
	procs       string
	connections int
	statsJSON   bool
	interval    time.Duration
	recvMax     int
	aliasMax    int
	maxPacket   string
	maxOutput   string
	maxHeld     string
	flushDelay  time.Duration
	maxConns    int
	child       bool   // internal: a process of a --procs parent
	turn        string // internal: the child's sink.Turn
}

func newSinkCmd() *cobra.Command {
	var sf sinkFlags
	cmd := &cobra.Command{
		Use:   "sink [--listen ADDR] [--procs N|auto] [--stats-json]",
		Short: "Run a near-free MQTT relay (an instrument, not a broker) to measure the client's ceiling",
		Long: `Run mqblast's sink: a minimal MQTT 3.1.1/5.0 server on gnet that relays every PUBLISH to the
matching subscribers of its process (exact, +, #, $share/<group>/ one member per group, round
robin) at min(published, granted) QoS, and costs almost nothing. It is an INSTRUMENT, not a
broker: no retained messages, no sessions or persistence, no authentication, no will, no
keep-alive enforcement; QoS 1/2 copies are acknowledged by the subscriber and counted, never
resent. A run against it measures the client host's own ceiling (mqblast run --sink).

It listens on loopback (127.0.0.1, a free port unless --listen gives one); another address
needs --allow-remote. "ready ADDR" on stderr says it is listening.

--procs N runs N processes on one port (SO_REUSEPORT), so that it holds more connections than
one process's descriptor limit; auto takes enough for --connections, at least one per core.
Relaying happens only WITHIN each process: a publisher and its subscribers on different
processes do not meet, so messaging runs use one process (the default). Each process has one
event loop. With --connections the processes take the new connections in turns, an equal
share each, one process after the other (Linux); a full process passes the turn on, the last
to the first, so that reconnects go to the processes with room. A process accepting at the
whole rate costs less per connection than many each woken for a few.

A packet cut by a read waits for the rest; --max-held bounds the bytes a process holds so
over all its connections: the connection whose cut packet passes it is closed and counted.

Counters (connections, publishes in by QoS, relayed, dropped by cause, bytes) are printed on
stderr at exit (SIGINT/SIGTERM); --stats-json writes them as one JSON line on stdout every
--interval and at exit (the parent of --procs sums its processes).`,
		Example: `  mqblast sink
  mqblast sink --listen 127.0.0.1:18830 --stats-json
  mqblast sink --procs auto --connections 1000000 --stats-json --interval 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSink(cmd, &sf) },
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.listen, "listen", "127.0.0.1:0", "address to listen on (loopback unless --allow-remote; port 0 picks a free port)")
	fl.BoolVar(&sf.allowRemote, "allow-remote", false, "allow a --listen address that is not loopback")
	fl.StringVar(&sf.procs, "procs", "1", "processes on the one port (SO_REUSEPORT), or auto; relaying stays within each process; at most 4 per core unless --connections needs more")
	fl.IntVar(&sf.connections, "connections", 0, "connections to hold: --procs auto takes this / descriptor limit processes (at least one per core), and the processes take them in turns, an equal share each")
	fl.BoolVar(&sf.statsJSON, "stats-json", false, "write the counters as a JSON line on stdout every --interval and at exit")
	fl.DurationVar(&sf.interval, "interval", time.Second, "interval of --stats-json lines")
	fl.IntVar(&sf.recvMax, "receive-maximum", sink.DefaultReceiveMaximum, "5.0 CONNACK Receive Maximum (1-65535)")
	fl.IntVar(&sf.aliasMax, "topic-alias-maximum", 16, "5.0 CONNACK Topic Alias Maximum (0-65535; 0: no aliases)")
	fl.StringVar(&sf.maxPacket, "max-packet-size", "1MiB", "largest packet accepted, also the 5.0 CONNACK Maximum Packet Size")
	fl.StringVar(&sf.maxOutput, "max-output", "1MiB", "unsent bytes per connection beyond which relayed copies are dropped (counted)")
	fl.StringVar(&sf.maxHeld, "max-held", "64MiB", "bytes held per process for packets not yet whole; the connection whose cut packet passes it is closed (counted)")
	fl.DurationVar(&sf.flushDelay, "flush-delay", 0, "shortest time between two writes of relayed copies to a subscriber: a copy waits at most this long, none after a quiet spell (0: at the end of the loop's round; at most 1s)")
	fl.IntVar(&sf.maxConns, "max-connections", 0, "refuse connections beyond this many per process (0: what the descriptor hard limit lets one process hold, less 64; at most that)")
	fl.BoolVar(&sf.child, "child", false, "internal: run as one process of a --procs parent")
	_ = fl.MarkHidden("child")
	fl.StringVar(&sf.turn, "turn", "0/0/0", "internal: a child's turn among the processes, index/procs/fill")
	_ = fl.MarkHidden("turn")
	return cmd
}

// sinkConfig checks the flags and builds the sink's configuration.
func sinkConfig(sf *sinkFlags) (sink.Config, error) {
	cfg := sink.Config{Addr: sf.listen, AllowRemote: sf.allowRemote, FlushDelay: sf.flushDelay,
		MaxConnections: sf.maxConns}
	if err := sink.CheckAddr(sf.listen, sf.allowRemote); err != nil {
		if errors.Is(err, sink.ErrNotLoopback) {
			return cfg, fmt.Errorf("--listen %s is not a loopback address: the sink is an instrument without authentication; pass --allow-remote to listen there anyway", sf.listen)
		}
		return cfg, fmt.Errorf("--listen: %w", err)
	}
	if sf.recvMax < 1 || sf.recvMax > 65535 {
		return cfg, fmt.Errorf("--receive-maximum %d: want 1 to 65535", sf.recvMax)
	}
	if sf.aliasMax < 0 || sf.aliasMax > 65535 {
		return cfg, fmt.Errorf("--topic-alias-maximum %d: want 0 to 65535", sf.aliasMax)
	}
	cfg.ReceiveMaximum, cfg.TopicAliasMaximum = uint16(sf.recvMax), uint16(sf.aliasMax)
	var err error
	if cfg.MaxPacketSize, err = scenario.ParseSize(sf.maxPacket); err != nil || cfg.MaxPacketSize < 64 || cfg.MaxPacketSize > maxPacket {
		return cfg, fmt.Errorf("--max-packet-size %q: want a size from 64 to 256MiB (bytes, or with a unit: %s), e.g. 1MiB", sf.maxPacket, scenario.SizeUnits)
	}
	if cfg.MaxOutput, err = scenario.ParseSize(sf.maxOutput); err != nil || cfg.MaxOutput < 1024 {
		return cfg, fmt.Errorf("--max-output %q: want a size of at least 1KiB (bytes, or with a unit: %s), e.g. 1MiB", sf.maxOutput, scenario.SizeUnits)
	}
	if cfg.MaxHeld, err = scenario.ParseSize(sf.maxHeld); err != nil || cfg.MaxHeld < cfg.MaxPacketSize {
		return cfg, fmt.Errorf("--max-held %q: want a size of at least --max-packet-size (%s; bytes, or with a unit: %s), e.g. 64MiB",
			sf.maxHeld, sf.maxPacket, scenario.SizeUnits)
	}
	if sf.interval <= 0 {
		return cfg, fmt.Errorf("--interval %v: want a positive duration, e.g. 1s", sf.interval)
	}
	if err := sink.CheckFlushDelay("--flush-delay", sf.flushDelay); err != nil {
		return cfg, err
	}
	if cfg.Turn, err = sink.ParseTurn(sf.turn); err != nil {
		return cfg, fmt.Errorf("--turn: %w", err)
	}
	return cfg, sink.CheckMaxConnections(sf.maxConns)
}

// maxPacket is the largest MQTT packet: a remaining length of 268,435,455 bytes and the
// five bytes of its fixed header.
const maxPacket = codec.MaxRemainingLength + 5

// packetSize is a flag holding a packet size in bytes, given as scenario.ParseSize reads it:
// 0 (the default it stands for) or 64 bytes to MQTT's largest packet.
type packetSize struct{ p *int }

func (v packetSize) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v packetSize) Set(s string) error {
	n, err := scenario.ParseSize(s)
	if err != nil || (n != 0 && (n < 64 || n > maxPacket)) {
		return fmt.Errorf("want 0 or a size from 64 to 256MiB (bytes, or with a unit: %s), e.g. 1MiB", scenario.SizeUnits)
	}
	*v.p = n
	return nil
}

func (packetSize) Type() string { return "size" }

func runSink(cmd *cobra.Command, sf *sinkFlags) error {
	cfg, err := sinkConfig(sf)
	if err != nil {
		return usageError(err)
	}
	procs, err := sink.ParseProcs(sf.procs, sf.connections)
	if err != nil {
		return usageError(err)
	}
	return sink.Run(cmd.Context(), cfg, sink.RunOptions{Procs: procs, Child: sf.child, StatsJSON: sf.statsJSON,
		Interval: sf.interval, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Connections: sf.connections,
		ChildArgs: func(addr string, turn sink.Turn) []string {
			return []string{"sink", "--child", "--turn", turn.String(), "--listen", addr, "--allow-remote=" + strconv.FormatBool(sf.allowRemote),
				"--interval", sf.interval.String(), "--receive-maximum", strconv.Itoa(sf.recvMax),
				"--topic-alias-maximum", strconv.Itoa(sf.aliasMax), "--max-packet-size", sf.maxPacket,
				"--max-output", sf.maxOutput, "--max-held", sf.maxHeld, "--flush-delay", sf.flushDelay.String(),
				"--max-connections", strconv.Itoa(sf.maxConns)}
		}})
}
