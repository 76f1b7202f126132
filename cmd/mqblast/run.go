package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/scenario"
)

func init() { register(newRunCmd) }

// runFlags are the flags of `mqblast run`.
type runFlags struct {
	brokers         []string
	sets            []string
	bind            []string
	out             string
	html            string // --html (run.Report)
	duration        time.Duration
	stages          string // --stages (run and pub)
	procs           string
	shard           string
	startAt         string       // --start-at
	start           *run.StartAt // parsed from startAt when the run begins
	runID           string       // --run-id
	runFrom         string       // --run-id-from: a worker's, where its parent's identity came from
	format          string
	outputs         run.Outputs // --csv, --hlog, --metrics (outputs.go)
	noCheck         bool
	loops           int
	worker          bool
	part            string // --part: a worker's part of the plan (of the shard, with --shard)
	idStart         int
	maxPkt          int
	acceptDowngrade bool
	sink            bool          // --sink: a calibration run against mqblast sink (sink.go)
	sinkWait        time.Duration // --sink-flush-delay

	thresholds    []string            // --threshold
	evaluate      []string            // every threshold of the run: the scenario's, then --threshold's
	passwordFile  string              // --password-file (password.go)
	brokerPID     int                 // --broker-pid (watch.go)
	brokerCgroup  string              // --broker-cgroup
	brokerSys     bool                // --broker-sys (watch.go)
	brokerMetrics []string            // --broker-metrics
	metrics       run.MetricsOptions  // --broker-metric, --broker-metrics-*
	net           netFlags            // --net, --net-broker-cmd (net.go)
	netInfo       *result.NetworkInfo // the profile the run goes through, for its result
	tls           reactor.TLSOptions  // --cacert, --cert, ... (tls.go)
	limit         *run.LimitOptions   // mqblast limit's search (limit.go); nil for run
}

// registerShardFlags adds --shard and --start-at, for run and the quick verbs.
func (rf *runFlags) registerShardFlags(fl *pflag.FlagSet) {
	fl.StringVar(&rf.shard, "shard", "", "run shard I of N of the scenario (I/N, 0-based; N at most the largest group's clients), e.g. on several hosts; "+
		"auto: I from $"+run.EnvShardIndex+" (a Kubernetes Indexed Job), N from $"+run.EnvShardCount)
	fl.StringVar(&rf.startAt, "start-at", "", "connect and subscribe, then start publishing at this wall-clock time: "+
		"RFC 3339 (2026-01-02T15:04:05Z) or +DURATION from now (+90s), at most 24h ahead; a run not ready by then starts at once, late (start.late_ms), up to 10m after it")
	fl.StringVar(&rf.runID, "run-id", "", "the run's identity, any text (e.g. a Kubernetes Job's uid): every measured message carries 16 bits "+
		"derived from it, and copies of other runs count as unexpected.other_run; shards of one run need the same one "+
		"(default: derived from --start-at, else random; a sub counts every run's copies unless given the publishers' --run-id)")
}

func (rf *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&rf.brokers, "broker", nil, "broker host:port or URL (mqtts://host:8883, ws://host:8083/mqtt, wss://host:8084/mqtt), replacing the scenario's server (repeat or comma-separate for several)")
	registerTLSFlags(fl, &rf.tls)
	rf.registerScenarioFlags(cmd)
	fl.StringSliceVar(&rf.bind, "bind", nil, "source addresses of the broker's address family: list, range (127.0.0.2-127.0.0.40), CIDR or interface name (its addresses of that family)")
	fl.StringVar(&rf.out, "out", "", "write the result document (JSON) to this file")
	fl.StringVar(&rf.html, "html", "", "write the HTML report of the run to this file (also of an interrupted run)")
	fl.DurationVar(&rf.duration, "duration", 0, "override parameters.duration_sec (how long connections are held)")
	rf.registerStages(fl)
	fl.StringVar(&rf.procs, "procs", "auto", "worker processes: auto (as many as the descriptor limit needs) or N")
	rf.registerShardFlags(fl)
	fl.StringVar(&rf.format, "format", "text", "stdout format: text (summary) or json (the result document)")
	registerOutputFlags(fl, &rf.outputs)
	fl.BoolVar(&rf.noCheck, "no-check", false, "skip the host checks (mqblast check) before the run")
	fl.IntVar(&rf.loops, "loops", 0, "event loops per process (0: one per core; at most 4 per core)")
	fl.BoolVar(&rf.worker, "worker", false, "internal: run as a worker process streaming snapshots on stdout")
	fl.StringVar(&rf.part, "part", "", "internal: with --worker, run part I of N of the (shard's) plan")
	fl.IntVar(&rf.idStart, "id-start", 0, "number client ids from this instead of 0 (Connections runs)")
	rf.registerWatchFlags(fl)
	rf.registerMaxPacket(fl)
	rf.registerAcceptDowngrade(fl)
	fl.BoolVar(&rf.sink, "sink", false, "start mqblast sink on loopback in a child process and run against it: a calibration run (the client host's own ceiling)")
	fl.DurationVar(&rf.sinkWait, "sink-flush-delay", 0, "with --sink: the sink's --flush-delay, 0 to 1s (fewer, larger writes at that cost in latency)")
	fl.StringVar(&rf.runFrom, "run-id-from", run.RunIDGiven, "internal: where a worker's --run-id came from")
	_ = fl.MarkHidden("worker")
	_ = fl.MarkHidden("run-id-from")
	_ = fl.MarkHidden("part")
	rf.registerPasswordFile(fl)
	rf.net.register(fl)
}

// registerStages registers --stages, which run and pub share.
func (rf *runFlags) registerStages(fl *pflag.FlagSet) {
	fl.StringVar(&rf.stages, "stages", "", "change the publish rate through the run, connections staying up: "+scenario.StagesSyntax+
		"; replaces parameters.stages, and the run lasts their total (not with --duration)")
}

// registerMaxPacket registers --max-packet-size, which run and the quick verbs share: the
// engine's errors for a packet over the limit name it.
func (rf *runFlags) registerMaxPacket(fl *pflag.FlagSet) {
	fl.Var(packetSize{&rf.maxPkt}, "max-packet-size", "largest packet a client accepts from the broker (bytes, or 64KiB, 1MiB ...), announced in 5.0 (0: payload_size + 64 KiB, at least 1 MiB)")
}

// registerAcceptDowngrade registers --accept-downgrade, which run and the quick verbs share.
func (rf *runFlags) registerAcceptDowngrade(fl *pflag.FlagSet) {
	fl.BoolVar(&rf.acceptDowngrade, "accept-downgrade", false, "when the broker's 5.0 CONNACK says it lacks what the plan needs "+
		"(Maximum QoS below the plan's, Retain Available 0, no shared or wildcard subscriptions), run at what it grants and say so "+
		"in broker_behaviour (default: the run fails after connecting, in the broker's words)")
}

func newRunCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO [flags]",
		Short: "Run a scenario (a file or a built-in name) against a broker",
		Long: `Run a scenario: a JSON file (docs/scenario.md) or a built-in name (mqblast scenarios).

The host is checked first (mqblast check); a run bound to fail is refused with the
findings (exit 4) unless --no-check. Without --broker and without a server in the file,
the embedded broker is started in a child process on loopback, and the two share the CPU.
When one process cannot hold the run's sockets (RLIMIT_NOFILE), --procs auto starts worker
processes, each with a shard of the plan, and merges their results into one. The workers
dial in turns, no more at once than the host has cores, so that the host dials at the
scenario's connection_rate throughout and each worker fast enough to batch its dials.

Every scenario type runs: Point-To-Point, Fan-In, Fan-Out, Shared-Subscription, Round-Trip,
Publish, Subscribe and Connections (docs/scenario.md describes every field). Flags are
checked before any socket opens: --bind addresses must be this host's (any 127.0.0.0/8
address is), the --out directory writable. --shard I/N runs one shard of the plan and records
it in the result, for 'mqblast merge'; --shard auto takes I from $JOB_COMPLETION_INDEX (a
Kubernetes Indexed Job) and N from $JOB_COMPLETIONS (which its manifest sets: see
deploy/kubernetes). --start-at T (RFC 3339, or +90s from now) connects and subscribes, then
starts publishing at T on every shard; a run not ready by T starts at once and records
start.late_ms. The result has first_publish_at and host.clock (the adjtimex error estimate);
a clock that is not synchronised is warned about. Every measured message carries the run's
identity (--run-id TEXT, else derived from --start-at, else random; the result's run), so
another mqblast run on the same topics counts as unexpected.other_run, never as received or
duplicated (16 bits: two random identities agree once in 65,536); the shards of one run need
the same one, so --shard without --run-id or --start-at is refused. The broker password comes
from --password-file, else --set server.password or the file's server.password, else
$MQBLAST_PASSWORD when the run gives a username; results never hold it. MQTT 3.1.1 sends a
password only with a username.

--stages changes the offered rate while the connections stay up: DURATION:RATE stages (a step
to RATE at the stage's start) or DURATION:ramp:RATE (linear from the previous stage's rate),
comma-separated, RATE in messages per second of each publisher as publish_rate, e.g.
--stages 10s:1000,30s:ramp:20000,10s:500. It sets parameters.stages (which a file or
--set parameters.stages=... gives as well); the run then publishes for the stages' total,
its intervals follow the start of publishing, each with its stage and offered_per_s, and the
result has stages[]: per stage its offered and achieved rates, latency, losses and verdicts.

Progress goes to stderr once a second. Ctrl-C disconnects, writes the partial result and
exits 130.

Thresholds are pass/fail criteria, k6 style: PATH OP NUMBER over the result document, by
its JSON path (messages.lost==0, latency_us.p99<50000, connections.failed<=10,
throughput.receive_per_s>=45000; booleans read as 0 or 1, a missing map key as 0). They
come from the scenario's "thresholds" list and from --threshold; their paths are checked
before the run starts. The result is written with every threshold's value and verdict, and
the run exits 5 when one failed (a failed or interrupted run keeps its own exit code).`,
		Example: `  mqblast run quick-conn-100
  mqblast run singlenode-conn-tcp-10K-100 --broker 127.0.0.1:1883 --out conn.json
  mqblast run conn.json --set parameters.connection_rate=2000 --bind 127.0.0.2-127.0.0.9
  JOB_COMPLETION_INDEX=0 JOB_COMPLETIONS=3 mqblast run p2p.json --shard auto --start-at 2026-01-02T15:04:05Z --format json
  mqblast run quick-p2p-100 --threshold messages.lost==0 --threshold 'latency_us.p99<50000'
  mqblast run quick-p2p-100 --stages 10s:10,30s:ramp:100,10s:20 --html stages.html
  mqblast run singlenode-conn-tcp-1M-5K --broker 10.0.0.5:1883 --procs auto --format json | jq .connections`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("run takes one scenario (a file or a built-in name), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenario.Resolve(args[0])
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if rf.net.profile != "" && !rf.worker {
				o := run.NetOptions{Profile: rf.net.profile, BrokerCmd: rf.net.brokerCmd, Brokers: rf.brokers,
					Args: os.Args[1:], Stdio: run.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, Log: cmd.ErrOrStderr()}
				return run.Net(cmd.Context(), o, func(n *result.NetworkInfo) error {
					rf.netInfo = n
					return executeScenario(cmd, s, &rf)
				})
			}
			if !rf.worker {
				rf.netInfo = run.EmulatedProfile(os.Getenv) // inside the emulator's client namespace
			}
			return executeScenario(cmd, s, &rf)
		},
	}
	rf.register(cmd)
	return cmd
}

// executeScenario applies the overrides to s, checks the host and runs it.
func executeScenario(cmd *cobra.Command, s *scenario.Scenario, rf *runFlags) error {
	if rf.format != "text" && rf.format != "json" {
		return usageError(fmt.Errorf("--format %q: must be text or json", rf.format))
	}
	if rf.startAt != "" && !rf.worker {
		st, err := run.ParseStartAt(rf.startAt, time.Now())
		if err != nil {
			return err
		}
		rf.start = st
		run.WarnClock(cmd.ErrOrStderr(), bench.HostClock())
	}
	shard, err := run.ResolveShard(rf.shard, os.Getenv)
	if err != nil {
		return err
	}
	rf.shard = shard
	id, err := run.ResolveRunID(rf.runID, rf.start)
	if err != nil {
		return err
	}
	if rf.worker && id.From == run.RunIDGiven { // the parent's identity, as it came to the parent
		id.From = rf.runFrom
	}
	if !rf.worker {
		if err := run.CheckShardIdentity(rf.shard, id); err != nil {
			return err
		}
		if err := checkInputs(cmd, rf); err != nil {
			return err
		}
		if err := rf.outputs.Check(); err != nil {
			return err
		}
		cmd.SetErr(bench.ProgressWriter(cmd.ErrOrStderr())) // a connect bar on a terminal
		defer bench.EndProgress(cmd.ErrOrStderr())
	}
	if err := applyOverrides(cmd, s, rf); err != nil {
		return err
	}
	if err := checkThresholds(s, rf); err != nil {
		return err
	}
	if err := run.ResolvePassword(s, rf.passwordFile, cmd.ErrOrStderr()); err != nil {
		return err
	}
	if rf.limit != nil { // the search sets the rate, the duration and the stages
		p, err := scenario.NewPlan(s)
		if err != nil {
			return withCode(exitInvalid, err)
		}
		if err := run.PrepareLimit(s, p.Estimate(), rf.limit); err != nil {
			return err
		}
	}
	plan, err := scenario.NewPlan(s)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	o := run.Options{Loops: rf.loops, IDStart: rf.idStart, MaxPacket: rf.maxPkt, AcceptDowngrade: rf.acceptDowngrade, TLS: rf.tls, Sink: rf.sink,
		SinkFlushDelay: rf.sinkWait, BrokerPID: rf.brokerPID, BrokerCgroup: rf.brokerCgroup, BrokerSys: rf.brokerSys, Start: rf.start, Run: id,
		BrokerMetrics: rf.brokerMetrics, Metrics: rf.metrics,
		Network: rf.netInfo, ToolVersion: version, Log: cmd.ErrOrStderr()}
	if rf.shard != "" {
		if o.Shard, err = run.ParseShard(rf.shard); err != nil {
			return err
		}
		if !rf.worker { // a worker's shard is one of --procs N, which may outnumber the clients
			if err := run.CheckShard(plan, o.Shard); err != nil {
				return err
			}
		}
		plan = plan.Shard(o.Shard.Index, o.Shard.Count)
	}
	if rf.worker {
		if rf.part != "" {
			part, err := run.ParseShard(rf.part)
			if err != nil {
				return err
			}
			plan = plan.Part(part.Index, part.Count, run.DialLanes(plan.ConnectRate(), part.Count))
		}
		return run.Worker(cmd.Context(), plan, o, cmd.InOrStdin(), cmd.OutOrStdout(), codeOf)
	}
	return run.Launch{Procs: rf.procs, Check: !rf.noCheck, Outputs: &rf.outputs, Brokers: len(rf.brokers) > 0,
		Report: runReport(cmd, rf), Limit: rf.limit}.Run(cmd.Context(), plan, o)
}

// applyOverrides applies --set, --duration, --broker and --bind (or --ifaddr) to s.
func applyOverrides(cmd *cobra.Command, s *scenario.Scenario, rf *runFlags) error {
	return run.Overrides{Sets: rf.sets, Duration: rf.duration, Brokers: rf.brokers, Bind: rf.bind,
		BindFlag: bindFlag(cmd), Sink: rf.sink, Stages: rf.stages}.Apply(s)
}
