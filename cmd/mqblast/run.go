package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/sink"
	"github.com/mqblast/mqblast/tuning"
)

func init() { register(newRunCmd) }

// runFlags are the flags of `mqblast run` (DESIGN.md §5).
type runFlags struct {
	brokers  []string
	sets     []string
	bind     []string
	out      string
	html     string // --html (report.go)
	duration time.Duration
	procs    string
	shard    string
	startAt  string   // --start-at
	start    *startAt // parsed from startAt when the run begins
	format   string
	outputs  outputFlags // --csv, --hlog, --metrics (outputs.go)
	noCheck  bool
	checks   json.RawMessage // the host checks' report, for the result's host.checks
	loops    int
	worker   bool
	idStart  int
	maxPkt   int
	sink     bool          // --sink: a calibration run against mqblast sink (sink.go)
	sinkWait time.Duration // --sink-flush-delay

	thresholds   []string           // --threshold
	evaluate     []string           // every threshold of the run: the scenario's, then --threshold's
	passwordFile string             // --password-file (password.go)
	brokerPID    int                // --broker-pid (watch.go)
	brokerCgroup string             // --broker-cgroup
	net          netFlags           // --net, --net-broker-cmd (net.go)
	netInfo      *bench.NetworkInfo // the profile the run goes through, for its result
	tls          tlsFlags           // --cacert, --cert, ... (tls.go)
}

// registerShardFlags adds --shard and --start-at (shard.go), for run and the quick verbs.
func (rf *runFlags) registerShardFlags(fl *pflag.FlagSet) {
	fl.StringVar(&rf.shard, "shard", "", "run shard I of N of the scenario (I/N, 0-based), e.g. on several hosts; "+
		"auto: I from $"+envShardIndex+" (a Kubernetes Indexed Job), N from $"+envShardCount)
	fl.StringVar(&rf.startAt, "start-at", "", "connect and subscribe, then start publishing at this wall-clock time: "+
		"RFC 3339 (2026-01-02T15:04:05Z) or +DURATION from now (+90s); a run not ready by then starts at once, late (start.late_ms)")
}

func (rf *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&rf.brokers, "broker", nil, "broker host:port or URL (mqtts://host:8883, ws://host:8083/mqtt, wss://host:8084/mqtt), replacing the scenario's server (repeat or comma-separate for several)")
	rf.tls.register(fl)
	rf.registerScenarioFlags(cmd)
	fl.StringSliceVar(&rf.bind, "bind", nil, "source addresses: list, range (127.0.0.2-127.0.0.40), CIDR or interface name")
	fl.StringVar(&rf.out, "out", "", "write the result document (JSON) to this file")
	fl.StringVar(&rf.html, "html", "", "write the HTML report of the run to this file (also of an interrupted run)")
	fl.DurationVar(&rf.duration, "duration", 0, "override parameters.duration_sec (how long connections are held)")
	fl.StringVar(&rf.procs, "procs", "auto", "worker processes: auto (as many as the descriptor limit needs) or N")
	rf.registerShardFlags(fl)
	fl.StringVar(&rf.format, "format", "text", "stdout format: text (summary) or json (the result document)")
	rf.outputs.register(fl) // outputs.go
	fl.BoolVar(&rf.noCheck, "no-check", false, "skip the host checks (mqblast check) before the run")
	fl.IntVar(&rf.loops, "loops", 0, "event loops per process (0: one per core)")
	fl.BoolVar(&rf.worker, "worker", false, "internal: run as a worker process streaming snapshots on stdout")
	fl.IntVar(&rf.idStart, "id-start", 0, "number client ids from this instead of 0 (Connections runs)")
	rf.registerWatchFlags(fl)
	fl.Var(packetSize{&rf.maxPkt}, "max-packet-size", "largest packet a client accepts from the broker (bytes, or 64KiB, 1MiB ...), announced in 5.0 (0: payload_size + 64 KiB, at least 1 MiB)")
	fl.BoolVar(&rf.sink, "sink", false, "start mqblast sink on loopback in a child process and run against it: a calibration run (the client host's own ceiling)")
	fl.DurationVar(&rf.sinkWait, "sink-flush-delay", 0, "with --sink: the sink's --flush-delay (fewer, larger writes at that cost in latency)")
	_ = fl.MarkHidden("worker")
	rf.registerPasswordFile(fl)
	rf.net.register(fl)
}

func newRunCmd() *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "run SCENARIO [flags]",
		Short: "Run a scenario (a file or a built-in name) against a broker",
		Long: `Run a scenario: a JSON file (DESIGN.md §4) or a built-in name (mqblast scenarios).

The host is checked first (mqblast check); a run bound to fail is refused with the
findings (exit 4) unless --no-check. Without --broker and without a server in the file,
the embedded broker is started in a child process on loopback, and the two share the CPU.
When one process cannot hold the run's sockets (RLIMIT_NOFILE), --procs auto starts worker
processes, each with a shard of the plan, and merges their results into one.

Every scenario type runs: Point-To-Point, Fan-In, Fan-Out, Shared-Subscription, Round-Trip,
Publish, Subscribe and Connections (docs/scenario.md describes every field). Flags are
checked before any socket opens: --bind addresses must be this host's (any 127.0.0.0/8
address is), the --out directory writable. --shard I/N runs one shard of the plan and records
it in the result, for 'mqblast merge'; --shard auto takes I from $JOB_COMPLETION_INDEX (a
Kubernetes Indexed Job) and N from $JOB_COMPLETIONS (which its manifest sets: see
deploy/kubernetes). --start-at T (RFC 3339, or +90s from now) connects and subscribes, then
starts publishing at T on every shard; a run not ready by T starts at once and records
start.late_ms. The result has first_publish_at and host.clock (the adjtimex error estimate);
a clock that is not synchronised is warned about. The broker password comes from --password-file, else
--set server.password or the file's server.password, else $MQBLAST_PASSWORD; results
never hold it.

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
				return runWithNet(cmd, &rf, func() error { return executeScenario(cmd, s, &rf) })
			}
			if !rf.worker {
				rf.netInfo = emulatedProfile(os.Getenv) // inside the emulator's client namespace
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
		st, err := parseStartAt(rf.startAt, time.Now())
		if err != nil {
			return usageError(err)
		}
		rf.start = st
		warnClock(cmd.ErrOrStderr(), bench.HostClock())
	}
	if err := resolveShard(rf, os.Getenv); err != nil { // shard.go
		return err
	}
	if !rf.worker {
		if err := checkInputs(cmd, rf); err != nil { // flagcheck.go
			return err
		}
		if err := rf.outputs.check(); err != nil { // outputs.go
			return err
		}
		cmd.SetErr(progressWriter(cmd.ErrOrStderr())) // a connect bar on a terminal (progress.go)
		defer endProgress(cmd.ErrOrStderr())
	}
	if err := applyOverrides(s, rf); err != nil {
		return err
	}
	if err := checkThresholds(s, rf); err != nil {
		return err
	}
	if err := resolvePassword(s, rf); err != nil {
		return err
	}
	plan, err := scenario.NewPlan(s)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	if rf.shard != "" {
		i, n, err := parseShard(rf.shard)
		if err != nil {
			return usageError(err)
		}
		plan = plan.Shard(i, n)
	}
	if rf.worker {
		return runWorker(cmd, plan, rf)
	}
	procs, err := chooseProcs(rf.procs, plan)
	if err != nil {
		return err
	}
	if !rf.noCheck {
		if err := preflight(cmd, plan, procs, rf); err != nil {
			return err
		}
	}
	if err := rf.outputs.serve(cmd, plan.Len()); err != nil { // --metrics
		return err
	}
	defer rf.outputs.stop(cmd)
	brokers := plan.Brokers()
	embeddedPID := 0
	if rf.sink {
		if len(rf.brokers) > 0 {
			return usageError(errors.New("--sink and --broker: pick one (--sink starts its own server on loopback)"))
		}
		sc, err := sink.StartChild(rf.sinkWait, plan.Len())
		if err != nil {
			return err
		}
		defer sc.Stop()
		how := "a child process"
		if sc.Procs {
			how = "child processes (--procs auto: relaying only within each)"
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "--sink: started mqblast sink on %s in %s: a calibration run, "+
			"it measures this client host's own ceiling (the sink shares its CPU), not a broker\n", sc.Addr, how)
		brokers, embeddedPID = []string{sc.Addr}, sc.Pid()
	} else if len(brokers) == 0 {
		addr, pid, stop, err := startEmbeddedBroker(cmd)
		if err != nil {
			return err
		}
		defer stop()
		brokers, embeddedPID = []string{addr}, pid
	}
	watch, err := newWatch(cmd, rf, brokers, embeddedPID)
	if err != nil {
		return err
	}
	tlsConf, err := rf.tls.config(brokers)
	if err != nil {
		return usageError(err)
	}
	if procs > 1 {
		return runWorkers(cmd, plan, rf, procs, brokers, watch)
	}
	run, err := bench.NewRunner(plan, brokers, rf.idStart)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	run.Engine.TLS = tlsConf
	run.Engine.Loops = rf.loops
	run.Engine.MaxInbound = cmp.Or(rf.maxPkt, run.Engine.MaxInbound)
	run.ToolVersion, run.Scenario, run.Progress = version, effectiveJSON(s), cmd.ErrOrStderr()
	run.Watch = watch
	run.OnInterval = rf.outputs.onInterval(cmd.ErrOrStderr())
	if st := rf.start; st != nil {
		run.StartGate = func() (time.Time, error) { return st.ready(cmd.ErrOrStderr()), nil }
	}
	return finishRun(cmd, run, rf)
}

func applyOverrides(s *scenario.Scenario, rf *runFlags) error {
	for _, kv := range rf.sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usageError(fmt.Errorf("--set %q: want path=value, e.g. parameters.connection_rate=500", redactSet(kv)))
		}
		if err := s.Set(strings.TrimSpace(k), v); err != nil {
			return withCode(exitInvalid, err)
		}
	}
	if rf.duration > 0 {
		if err := s.Set("parameters.duration_sec", rf.duration.String()); err != nil {
			return withCode(exitInvalid, err)
		}
	}
	if len(rf.brokers) > 0 {
		if err := s.SetBrokers(rf.brokers); err != nil {
			return usageError(err)
		}
	}
	if len(rf.bind) > 0 {
		addrs, err := expandInterfaces(rf.bind)
		if err != nil {
			return usageError(err)
		}
		if err := s.SetBind(addrs); err != nil {
			return usageError(err)
		}
	}
	return nil
}

// expandInterfaces replaces interface names in a --bind list by their addresses.
func expandInterfaces(items []string) ([]string, error) {
	var out []string
	for _, item := range items {
		for _, a := range strings.Split(item, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			ifc, err := net.InterfaceByName(a)
			if err != nil { // not an interface: an address, range or block for scenario to read
				out = append(out, a)
				continue
			}
			as, err := ifc.Addrs()
			if err != nil {
				return nil, fmt.Errorf("--bind %s: cannot read its addresses: %w", a, err)
			}
			n := 0
			for _, x := range as {
				if ipn, ok := x.(*net.IPNet); ok && !ipn.IP.IsLinkLocalUnicast() {
					out = append(out, ipn.IP.String())
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("--bind %s: the interface has no usable address", a)
			}
		}
	}
	return out, nil
}

func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return i, n, nil
}

// fdHeadroom is what a process needs besides its connections' sockets: stdio, an epoll
// set and an eventfd per event loop, the result file, the embedded broker's pipe.
const fdHeadroom = 64

// chooseProcs turns --procs into a number: auto takes as many processes as the descriptor
// hard limit requires.
func chooseProcs(flag string, plan *scenario.Plan) (int, error) {
	if flag != "auto" {
		n, err := strconv.Atoi(flag)
		if err != nil || n < 1 || n > 256 {
			return 0, usageError(fmt.Errorf("--procs %q: want auto or a number from 1 to 256", flag))
		}
		return n, nil
	}
	lim, err := tuning.ProcessNoFile()
	if err != nil || lim.Hard == 0 {
		return 1, nil
	}
	per := int(min(lim.Hard, 1<<30)) - fdHeadroom
	if per < 100 {
		return 1, nil
	}
	return max(1, (plan.Len()+per-1)/per), nil
}

// preflight runs the host checks for the plan and refuses a run bound to fail.
// Its findings go into the result (host.checks).
func preflight(cmd *cobra.Command, plan *scenario.Plan, procs int, rf *runFlags) error {
	needs := needsOf(plan)
	needs.Procs = procs
	r := tuning.Check("/", needs)
	if b, err := json.Marshal(r.Findings); err == nil {
		rf.checks = b
	}
	if r.Ready() {
		return nil
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintln(w, "the host is not ready for this run (mqblast check; --no-check skips it):")
	_ = r.WriteText(w)
	return withCode(exitNotReady, fmt.Errorf("host not ready: %d checks failed", r.Count(tuning.Fail)))
}

// effectiveJSON is the scenario as run, for the result document.
func effectiveJSON(s *scenario.Scenario) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return b
}

// startEmbeddedBroker starts `mqblast broker` in a child process (the descriptor limit is
// per process) on a free loopback port and returns its address and a stop function.
func startEmbeddedBroker(cmd *cobra.Command) (string, int, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, fmt.Errorf("cannot find the mqblast binary to start the embedded broker: %w", err)
	}
	c := exec.Command(exe, "broker", "--listen", "127.0.0.1:0")
	c.Stderr = io.Discard
	out, err := c.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := c.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("cannot start the embedded broker: %w", err)
	}
	stop := func() {
		_ = c.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		stop()
		if err == nil {
			err = errors.New("no listening address")
		}
		return "", 0, nil, fmt.Errorf("the embedded broker did not start (it printed %q): %w", line, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "no broker given: started the embedded broker (mochi-mqtt) on %s in a child process; "+
		"it shares this host's CPU, so measure your real broker with --broker\n", addr)
	return addr, c.Process.Pid, stop, nil
}

// runWorker is the body of a worker process: run the shard, stream snapshots and the result.
func runWorker(cmd *cobra.Command, plan *scenario.Plan, rf *runFlags) error {
	ww := bench.NewWorkerWriter(cmd.OutOrStdout())
	run, err := bench.NewRunner(plan, nil, rf.idStart)
	if err == nil {
		run.Engine.TLS, err = rf.tls.config(run.Engine.Brokers)
	}
	if err != nil {
		_ = ww.Final(nil, err, exitInvalid)
		return withCode(exitInvalid, err)
	}
	run.Engine.Loops = rf.loops
	run.Engine.MaxInbound = cmp.Or(rf.maxPkt, run.Engine.MaxInbound)
	run.ToolVersion, run.Scenario = version, effectiveJSON(plan.Scenario())
	run.OnInterval = func(iv bench.Interval, s *bench.Snapshot) { _ = ww.Interval(iv, s) }
	run.StartGate = func() (time.Time, error) { return awaitStart(ww, cmd.InOrStdin()) }
	res, err := run.Run(cmd.Context())
	code := exitOK
	if err != nil {
		code = exitFailed
		if errors.Is(err, bench.ErrInterrupted) {
			code = exitInterrupted
		}
	}
	if werr := ww.Final(res, err, code); werr != nil {
		return werr
	}
	return withCode(code, err)
}

// awaitStart tells the parent that this worker's subscriptions are in place and waits for
// its "go UNIXNANO" line: the wall-clock time at which every worker starts publishing.
func awaitStart(ww *bench.WorkerWriter, in io.Reader) (time.Time, error) {
	if err := ww.Ready(); err != nil {
		return time.Time{}, err
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil {
		return time.Time{}, fmt.Errorf("no start from the parent process: %w", err)
	}
	ns, ok := strings.CutPrefix(strings.TrimSpace(line), "go ")
	v, perr := strconv.ParseInt(ns, 10, 64)
	if !ok || perr != nil {
		return time.Time{}, fmt.Errorf("bad start line %q from the parent process", line)
	}
	return time.Unix(0, v), nil
}

// runWorkers runs the plan in procs worker processes and merges their results.
func runWorkers(cmd *cobra.Command, plan *scenario.Plan, rf *runFlags, procs int, brokers []string, watch *bench.Watch) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the mqblast binary to start workers: %w", err)
	}
	s := plan.Scenario()
	scen, err := os.CreateTemp("", "mqblast-scenario-*.json")
	if err != nil {
		return fmt.Errorf("cannot write the scenario for the workers: %w", err)
	}
	defer os.Remove(scen.Name()) //nolint:errcheck
	// Without the password: the workers take it from their environment (workerEnv).
	if _, err := scen.Write(workerScenarioJSON(s)); err != nil {
		return fmt.Errorf("cannot write the scenario for the workers: %w", err)
	}
	_ = scen.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "%d clients in %d worker processes (RLIMIT_NOFILE is per process)\n", plan.Len(), procs)
	// The workers share the cores: without --loops, each gets its share of them, at least
	// one loop. Fewer loops dial in bigger batches and wake less (make bench-conn, 6 workers
	// on 2 cores).
	loops := rf.loops
	if loops == 0 {
		loops = max(1, runtime.NumCPU()/procs)
	}
	var streams []io.Reader
	var cmds []*exec.Cmd
	var stdins []io.WriteCloser
	for i := 0; i < procs; i++ {
		args := []string{"run", scen.Name(), "--worker", "--no-check", "--shard", fmt.Sprintf("%d/%d", i, procs),
			"--broker", strings.Join(brokers, ","), "--loops", strconv.Itoa(loops),
			"--id-start", strconv.Itoa(rf.idStart), "--max-packet-size", strconv.Itoa(rf.maxPkt)}
		args = append(args, rf.tls.args()...)
		c := exec.Command(exe, args...)
		c.Env = workerEnv(s.Server.Password)
		c.Stderr = cmd.ErrOrStderr()
		out, err := c.StdoutPipe()
		if err != nil {
			return err
		}
		in, err := c.StdinPipe()
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return fmt.Errorf("cannot start worker %d: %w", i, err)
		}
		streams = append(streams, out)
		stdins = append(stdins, in)
		cmds = append(cmds, c)
	}
	// Ctrl-C reaches the workers through the process group; forward SIGTERM-style cancels too.
	go func() {
		<-cmd.Context().Done()
		for _, c := range cmds {
			_ = c.Process.Signal(os.Interrupt)
		}
	}()
	// Every worker subscribed: all start publishing at one wall-clock time.
	// With --start-at, at that instant (or at once when it has passed).
	release := func() {
		at := time.Now().Add(200 * time.Millisecond)
		if rf.start != nil {
			at = rf.start.ready(cmd.ErrOrStderr())
		}
		for _, in := range stdins {
			_, _ = fmt.Fprintf(in, "go %d\n", at.UnixNano())
		}
	}
	res, gerr := bench.Gather(streams, plan.Len(), time.Second, cmd.ErrOrStderr(), release, watch,
		rf.outputs.onInterval(cmd.ErrOrStderr()))
	for _, in := range stdins {
		_ = in.Close()
	}
	for _, c := range cmds {
		_ = c.Wait()
	}
	if res == nil {
		return fmt.Errorf("no worker produced a result: %w", gerr)
	}
	res.Broker = brokers
	res.Scenario = effectiveJSON(s)
	res.Shard = shardOf(rf)
	res.Start = rf.start.info()
	return report(cmd, res, gerr, rf)
}

// outcome maps a finished run to its exit code.
func outcome(res *bench.Result, err error, ctx context.Context) error {
	var we *bench.WorkerError
	switch {
	case res.Interrupted || errors.Is(err, bench.ErrInterrupted) || ctx.Err() != nil:
		return withCode(exitInterrupted, errors.New("interrupted: partial result written"))
	case errors.As(err, &we) && we.Code != 0:
		return withCode(we.Code, err)
	case err != nil:
		return err
	case res.Connections.Established == 0:
		return withCode(exitFailed, fmt.Errorf("no connection was established: %s", firstError(res)))
	}
	return nil
}
