package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/child"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/watch"
)

// PasswordEnv names the environment variable that gives the broker password when neither
// the Spec nor the scenario give one (and the run gives a username). Child processes
// receive the password through it too, so that it is never in their argv, in the Spec they
// read, or in a result.
const PasswordEnv = secret.PasswordEnv

// runWorkers runs the plan in o.Procs worker processes and merges their results.
func runWorkers(ctx context.Context, plan *scenario.Plan, o *options, brokers []string, watch *watch.Watch) (*result.Result, error) {
	procs := o.Procs
	s := plan.Scenario()
	fmt.Fprintf(o.Log, "%d clients in %d worker processes (RLIMIT_NOFILE is per process)\n", plan.Len(), procs)
	// The workers share the cores: without loops given, each gets its share of them, at
	// least one loop. Fewer loops dial in bigger batches and wake less (make bench-conn, 6
	// workers on 2 cores).
	loops := o.Loops
	if loops == 0 {
		loops = max(1, runtime.NumCPU()/procs)
	}
	// Every worker runs the effective scenario (its passwords the marker: the workers take
	// the passwords from their environment) against the brokers this run resolved.
	wsp := spec.Spec{Scenario: spec.Scenario{Name: s.File(), File: effectiveJSON(s)}, Brokers: []string{strings.Join(brokers, ",")},
		RunID: o.Run.ID, Loops: loops, IDStart: o.IDStart, MaxPacketSize: o.MaxPacket, AcceptDowngrade: o.AcceptDowngrade,
		TLS: o.TLS, NoCheck: true}
	if o.Shard != nil {
		wsp.Shard = o.Shard.String()
	}
	steer := workersSteer(plan, o)
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
		env := &envelope{Spec: wsp, Worker: &workerPart{Part: fmt.Sprintf("%d/%d", i, procs), RunFrom: o.Run.From, Steerable: steer != nil && o.steerable}}
		f, err := env.file()
		if err == nil {
			var w *child.Process
			w, err = child.Start(child.Spec{Name: fmt.Sprintf("worker %d", i), Exe: o.exe, Args: []string{ChildVerb},
				Env: withoutLiveToken(secret.EnvGroups(secret.Env(os.Environ(), s.Server.Password), groupPasswords(s))), Log: o.Log, Stdin: true, Files: []*os.File{f}})
			_ = f.Close()
			if err == nil {
				streams = append(streams, w.Output)
				workers = append(workers, w)
			}
		}
		if err != nil {
			for _, w := range workers { // the others stop as on Ctrl-C, and are waited for
				w.Signal(os.Interrupt)
			}
			return nil, err
		}
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
	if o.Start != nil && !plan.Holds() { // a plan that publishes nothing connects and holds at once
		startAt = func() time.Time { return o.Start.ready(o.Log) }
	}
	gopt := bench.GatherOptions{Streams: streams, Starts: stdins, StartAt: startAt,
		Target: plan.Len(), Interval: time.Second, Progress: o.Log, Watch: watch, OnInterval: o.OnInterval}
	if steer != nil {
		for _, in := range stdins {
			steer.stdins = append(steer.stdins, in)
		}
		par := &s.Parameters
		gopt.Started = func(at time.Time) {
			steer.start(bench.NewStagePlan(par.Stages, par.Duration, par.PublishRate, at, gopt.Interval))
		}
	}
	res, gerr := bench.Gather(gopt)
	if steer != nil {
		steer.close()
	}
	if res == nil {
		return nil, fmt.Errorf("no worker produced a result: %w", gerr)
	}
	res.Broker = brokers
	res.Scenario = effectiveJSON(s)
	res.SettleSilent(plan.ReceivedOutside)                          // those whose receivers all ran here
	res.Join = res.Join.Prune(plan.Publishes, plan.ReceivedOutside) // what crosses this shard
	return res, gerr
}

// newWorkerWriter is the writer of a worker's side of the worker protocol on out.
func newWorkerWriter(out io.Writer) *bench.WorkerWriter { return bench.NewWorkerWriter(out) }

// runWorker runs a worker's part of the plan: it streams snapshots and the result on out,
// and waits on in for the start. code gives the exit code the parent is told for an error.
func runWorker(ctx context.Context, plan *scenario.Plan, o options, in io.Reader, out io.Writer, code func(error) int) error {
	ww := newWorkerWriter(out)
	brokers := plan.Brokers()
	tlsConf, terr := tlsConfig(tlsOptions(o.TLS), brokers)
	r, err := newRunner(plan, brokers, &o, tlsConf)
	if err == nil {
		err = terr
	}
	if err != nil {
		err = kind(errInvalid, err)
		_ = ww.Final(nil, err, code(err))
		return err
	}
	r.OnInterval = func(iv result.Interval, s *result.Snapshot) { _ = ww.Interval(iv, s) }
	r.StreamOnly = true
	var steering sync.Once
	r.StartGate = func() (time.Time, error) {
		at, err := ww.AwaitStart(in)
		if err == nil && o.steerable {
			r.Steerable = r.BaseRate > 0
			steering.Do(func() { go readSteers(ww, in, r, o.Log) })
		}
		return at, err
	}
	r.HoldGate = r.StartGate
	res, err := r.Run(ctx)
	if werr := ww.Final(res, err, code(err)); werr != nil {
		return werr
	}
	return err
}

// workersSteer is the steering of plan's workers when the live API may change their rate,
// or their stages for the live page without it (nil: neither), attached to o's control.
func workersSteer(plan *scenario.Plan, o *options) *workersTarget {
	if o.control == nil {
		return nil
	}
	s := plan.Scenario()
	par := &s.Parameters
	switch rated := plan.Estimate().Publishers > 0 && par.PublishRate > 0 && (!s.Mixed() || len(par.Stages) > 0); {
	case o.steerable && !rated:
		o.control.attach(nil, notSteerable)
		return nil
	case !o.steerable && (!rated || len(par.Stages) == 0):
		return nil // no stages to show
	}
	t := &workersTarget{}
	o.control.attach(t, "")
	return t
}

// readSteers makes every change the parent's steer lines on in ask for (a worker's).
func readSteers(ww *bench.WorkerWriter, in io.Reader, r *bench.Runner, log io.Writer) {
	ww.ReadSteers(in, func(at time.Time, rate float64, source string) {
		if err := r.Steer(at, rate, source); err != nil {
			fmt.Fprintf(log, "warning: the parent's rate change to %v/s at %s: %v\n", rate, at.UTC().Format(time.RFC3339Nano), err)
		}
	}, func(line string) {
		fmt.Fprintf(log, "warning: a line from the parent that is not a rate change: %.80q\n", line)
	})
}

// groupPasswords returns the passwords of s's groups' own servers by group name (nil:
// none), for the workers' environment.
func groupPasswords(s *scenario.Scenario) map[string]string {
	var out map[string]string
	for _, g := range s.Groups {
		if g == nil || g.Server == nil || g.Server.Password == "" {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[g.Name] = g.Server.Password
	}
	return out
}
