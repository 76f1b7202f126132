package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/watch"
)

// PasswordEnv names the environment variable that gives the broker password when neither
// the flags nor the scenario give one (and the run gives a username). Worker processes
// receive the password through it too, so that it is never in their argv, in the scenario
// file they read, or in a result.
const PasswordEnv = secret.PasswordEnv

// workerScenario is where a worker reads its scenario: the file runWorkers hands it as its
// descriptor 3.
const workerScenario = "/dev/fd/3"

// runWorkers runs the plan in o.Procs worker processes and merges their results.
func runWorkers(ctx context.Context, plan *scenario.Plan, o *Options, brokers []string, watch *watch.Watch) (*result.Result, error) {
	procs := o.Procs
	s := plan.Scenario()
	// The workers read the scenario from a file that has no name once written: they inherit
	// it as their descriptor 3, and nothing is left behind however this process ends (a
	// SIGKILL skips every defer). Its password is the marker: the workers take the password
	// from their environment.
	scen, err := os.CreateTemp("", "mqblast-scenario-*.json")
	if err != nil {
		return nil, fmt.Errorf("cannot write the scenario for the workers: %w", err)
	}
	_ = os.Remove(scen.Name())
	defer scen.Close() //nolint:errcheck
	if _, err := scen.Write(effectiveJSON(s)); err != nil {
		return nil, fmt.Errorf("cannot write the scenario for the workers: %w", err)
	}
	fmt.Fprintf(o.Log, "%d clients in %d worker processes (RLIMIT_NOFILE is per process)\n", plan.Len(), procs)
	// The workers share the cores: without --loops, each gets its share of them, at least
	// one loop. Fewer loops dial in bigger batches and wake less (make bench-conn, 6 workers
	// on 2 cores).
	loops := o.Loops
	if loops == 0 {
		loops = max(1, runtime.NumCPU()/procs)
	}
	var streams []io.Reader
	var workers []*child.Process
	defer func() {
		for _, w := range workers {
			_ = w.Stdin.Close()
		}
		for _, w := range workers {
			_ = w.Wait()
			w.Close()
		}
	}()
	for i := 0; i < procs; i++ {
		// Worker i runs part i of this process's plan: of the shard, when this is one.
		args := []string{"run", workerScenario, "--worker", "--no-check", "--part", fmt.Sprintf("%d/%d", i, procs)}
		if o.Shard != nil {
			args = append(args, "--shard", o.Shard.String())
		}
		args = append(args, "--broker", strings.Join(brokers, ","), "--loops", strconv.Itoa(loops),
			"--id-start", strconv.Itoa(o.IDStart), "--max-packet-size", strconv.Itoa(o.MaxPacket),
			"--run-id", o.Run.ID, "--run-id-from", o.Run.From)
		args = append(args, tlsArgs(o.TLS)...)
		if o.AcceptDowngrade {
			args = append(args, "--accept-downgrade")
		}
		w, err := child.Start(child.Spec{Name: fmt.Sprintf("worker %d", i), Args: args, Env: secret.Env(os.Environ(), s.Server.Password),
			Log: o.Log, Stdin: true, Files: []*os.File{scen}})
		if err != nil {
			for _, w := range workers { // the others stop as on Ctrl-C, and are waited for
				w.Signal(os.Interrupt)
			}
			return nil, err
		}
		streams = append(streams, w.Output)
		workers = append(workers, w)
	}
	// Ctrl-C reaches the workers through the process group; forward SIGTERM-style cancels too.
	stopForward := context.AfterFunc(ctx, func() {
		for _, w := range workers {
			w.Signal(os.Interrupt)
		}
	})
	defer stopForward()
	stdins := make([]io.WriteCloser, len(workers))
	for i, w := range workers {
		stdins[i] = w.Stdin
	}
	var startAt func() time.Time
	if o.Start != nil && s.Type != scenario.TypeConnections { // which connects and holds at once
		startAt = func() time.Time { return o.Start.ready(o.Log) }
	}
	res, gerr := bench.Gather(bench.GatherOptions{Streams: streams, Starts: stdins, StartAt: startAt,
		Target: plan.Len(), Interval: time.Second, Progress: o.Log, Watch: watch, OnInterval: o.OnInterval})
	if res == nil {
		return nil, fmt.Errorf("no worker produced a result: %w", gerr)
	}
	res.Broker = brokers
	res.Scenario = effectiveJSON(s)
	res.Join = res.Join.Prune(plan.Publishes, plan.ReceivedOutside) // what crosses this shard
	return res, gerr
}

// Worker is the body of a worker process: it runs the shard plan, streams snapshots and the
// result on out, and waits on in for the start. code gives the exit code the parent is told
// for an error.
func Worker(ctx context.Context, plan *scenario.Plan, o Options, in io.Reader, out io.Writer, code func(error) int) error {
	ww := bench.NewWorkerWriter(out)
	brokers := plan.Brokers()
	tlsConf, terr := tlsConfig(o.TLS, brokers)
	r, err := newRunner(plan, brokers, &o, tlsConf)
	if err == nil {
		err = terr
	}
	if err != nil {
		err = kind(ErrInvalid, err)
		_ = ww.Final(nil, err, code(err))
		return err
	}
	r.OnInterval = func(iv result.Interval, s *result.Snapshot) { _ = ww.Interval(iv, s) }
	r.StreamOnly = true
	r.StartGate = func() (time.Time, error) { return ww.AwaitStart(in) }
	r.HoldGate = r.StartGate
	res, err := r.Run(ctx)
	if werr := ww.Final(res, err, code(err)); werr != nil {
		return werr
	}
	return err
}
