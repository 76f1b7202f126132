package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/secret"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// Spec describes a run end to end (package spec).
type Spec = spec.Spec

// IO is what a run reads and writes besides its Spec: its standard streams, the password
// a command line was given, the environment, and the binary its child processes run.
type IO struct {
	// Stdin is read by nothing but a worker process (its start line); Stdout takes the
	// result (the summary or the document, Spec.Outputs.Format); Stderr the progress,
	// notices and what was written where. Nil: the process's own. Neither need be safe for
	// concurrent use: the run's children write to them from goroutines of their own (a
	// file is given to a child as it is), and the run serialises every write to them.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Password is the broker password given outside the Spec (a command line's -P or
	// --set server.password): it stands where the Spec or its scenario hold the marker
	// that stands for the password, before $MQBLAST_PASSWORD does. It never reaches a
	// result, a log or a child's command line.
	Password string
	// GroupPasswords are the passwords of client groups' own servers given outside the
	// Spec (a command line's --set groups.NAME.server.password), by group name: each
	// stands where its group's server.password is the marker, before
	// $MQBLAST_GROUP_PASSWORDS does. They never reach a result, a log or a command line.
	GroupPasswords map[string]string
	// Getenv reads the environment (nil: os.Getenv): $MQBLAST_PASSWORD, the Indexed Job's
	// shard variables, the broker host's credentials.
	Getenv func(string) string
	// Exe is the mqblast binary that child processes run: workers, the embedded broker,
	// the sink, the run in the packet emulator's namespace ("": this process's own).
	Exe string
	// Version is mqblast's version, for the result.
	Version string
}

func (o *IO) defaults() {
	if o.Stdin == nil {
		o.Stdin = os.Stdin
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	// One lock for both: they may be one writer.
	mu := new(sync.Mutex)
	for _, w := range []*io.Writer{&o.Stdout, &o.Stderr} {
		switch (*w).(type) {
		case *os.File, *lockedWriter:
		default:
			*w = &lockedWriter{mu: mu, w: *w}
		}
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
}

// lockedWriter is a writer that is not a file, given to the run as IO.Stdout or Stderr:
// its writes are serialised.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Do runs sp and returns its result, written where sp's outputs say (also the partial
// result of an interrupted or failed run). The recipe is Do's alone: the scenario read and
// changed as sp says, planned once, sharded, the host checked, the outputs served, the
// network profile put around the run, the run executed (or the broker's limit searched)
// in this process or in worker processes, the thresholds judged, the result written.
//
// Its error says what kind of failure it is (internal/fail: ErrUsage, with a *spec.Error that
// names the field at fault, ErrInvalid, ErrNotReady, ErrThreshold, ErrInterrupted, or a child's
// ExitStatus); a nil result comes with the error that prevented the run.
func Do(ctx context.Context, sp *Spec, o IO) (*result.Result, error) {
	o.defaults()
	if err := sp.Validate(); err != nil {
		return nil, usage(err)
	}
	return (&doer{sp: sp, io: o}).do(ctx)
}

// doer is one run of Do: its Spec, its IO and, in the emulator's client namespace, what
// the run there was told.
type doer struct {
	sp     *Spec
	io     IO
	inside *emulated // nil outside the emulator's client namespace
	raw    []byte    // the scenario file's JSON, as read
	// brokers, if set, are the brokers the run goes to instead of the Spec's (the one
	// behind the emulator), which the result's Spec does not record.
	brokers []string
}

// do reads the scenario and runs it, within the network profile when the Spec has one.
func (d *doer) do(ctx context.Context) (*result.Result, error) {
	s, err := d.scenario()
	if err != nil {
		return nil, err
	}
	if d.sp.Net != nil && d.inside == nil {
		return d.net(ctx, s)
	}
	var network *result.NetworkInfo
	if d.inside != nil {
		network = d.inside.network()
	}
	return d.run(ctx, s, network)
}

// scenario reads the Spec's scenario: its file's JSON, or the file or built-in it names.
func (d *doer) scenario() (*scenario.Scenario, error) {
	sc := d.sp.Scenario
	data := []byte(sc.File)
	if len(data) == 0 {
		var err error
		if data, err = scenario.ReadFile(sc.Name); err != nil {
			return nil, kind(errInvalid, err)
		}
	}
	name := sc.Name
	if name == "" {
		name = "spec"
	}
	s, err := scenario.Parse(name, data)
	if err != nil {
		return nil, kind(errInvalid, err)
	}
	d.raw = data
	return s, nil
}

// run runs s as the Spec says, on this host's network (network: the profile it goes
// through, for the result).
func (d *doer) run(ctx context.Context, s *scenario.Scenario, network *result.NetworkInfo) (*result.Result, error) {
	sp, log := d.sp, d.io.Stderr
	var start *startAt
	if sp.StartAt != "" {
		var err error
		if start, err = parseStartAt(sp.StartAt, time.Now()); err != nil {
			return nil, err
		}
		warnClock(log, bench.HostClock())
	}
	shard, err := resolveShard(sp.Shard, d.io.Getenv)
	if err != nil {
		return nil, err
	}
	id, err := resolveRunID(sp.RunID, start)
	if err != nil {
		return nil, err
	}
	if err := checkShardIdentity(shard, id); err != nil {
		return nil, err
	}
	if err := d.checkInputs(); err != nil {
		return nil, err
	}
	outs := &outputs{CSV: sp.Outputs.CSV, Hlog: sp.Outputs.Hlog, Metrics: sp.Outputs.Metrics,
		MetricsPublic: sp.Outputs.MetricsPublic, MetricsHold: sp.Outputs.MetricsHold.D(),
		RemoteWrite: sp.Outputs.RemoteWrite, RemoteWriteAuth: sp.Outputs.RemoteWriteAuth, getenv: d.io.Getenv}
	outs.liveOutput = liveOutput{Live: sp.Outputs.Live, LivePublic: sp.Outputs.LivePublic, LiveHold: sp.Outputs.LiveHold.D(),
		LiveTokenFile: sp.Outputs.LiveTokenFile, getenv: d.io.Getenv}
	if err := outs.Check(); err != nil {
		return nil, err
	}
	log = bench.ProgressWriter(log) // a connect bar on a terminal
	defer bench.EndProgress(log)
	log = outs.Tee(log) // the live page's log
	plan, evaluate, lo, err := d.prepare(s, log)
	if err != nil {
		return nil, err
	}
	if err := resolveBrokers(ctx, plan, len(d.overrides().Brokers) > 0, s.File()); err != nil {
		return nil, err
	}
	if err := planCerts(plan, sp.IDStart, sp.TLS); err != nil {
		return nil, err
	}
	o := options{Loops: sp.Loops, IDStart: sp.IDStart, MaxPacket: sp.MaxPacketSize, AcceptDowngrade: sp.AcceptDowngrade,
		TLS: sp.TLS, Sink: sp.Sink != nil, BrokerPID: sp.Watch.BrokerPID, BrokerCgroup: sp.Watch.BrokerCgroup,
		BrokerSys: sp.Watch.BrokerSys, Start: start, Run: id, BrokerMetrics: sp.Watch.BrokerMetrics,
		Metrics: metricsOptions{Series: sp.Watch.Series, AuthFile: sp.Watch.MetricsAuth, Process: sp.Watch.MetricsProcess,
			Timeout: sp.Watch.MetricsTimeout.D()},
		Network: network, ToolVersion: d.io.Version, Log: log, exe: d.io.Exe, getenv: d.io.Getenv}
	if sp.Sink != nil {
		o.SinkFlushDelay, o.SinkTLS, o.SinkWS = sp.Sink.FlushDelay.D(), sp.Sink.TLS, sp.Sink.WS
	}
	if shard != "" {
		if o.Shard, err = parseShard(shard); err != nil {
			return nil, err
		}
		if err := checkShard(plan, o.Shard); err != nil {
			return nil, err
		}
		plan = plan.Shard(o.Shard.Index, o.Shard.Count)
	}
	rec := d.recorded(shard)
	fin := finisher{Evaluate: evaluate, Outputs: outs, Out: sp.Outputs.Out, HTML: sp.Outputs.HTML, Format: sp.Outputs.Format,
		Stdout: d.io.Stdout, Stderr: log, spec: rec}
	return d.launch(ctx, plan, o, outs, fin, lo)
}

// prepare changes s as the Spec says, checks the thresholds, sets the password, prepares
// the search for the broker's limit when there is one, and plans s: the whole plan, the
// thresholds the run judges, the search's settings (nil: none). Notices go to log.
func (d *doer) prepare(s *scenario.Scenario, log io.Writer) (*scenario.Plan, []string, *searchOptions, error) {
	sp := d.sp
	if err := d.overrides().Apply(s); err != nil {
		return nil, nil, nil, err
	}
	evaluate, err := checkThresholds(s, sp.Thresholds)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := resolvePassword(s, sp.PasswordFile, log, secrets{d.io.Password, d.io.GroupPasswords}, d.io.Getenv); err != nil {
		return nil, nil, nil, err
	}
	if err := prepareSoak(s, sp); err != nil {
		return nil, nil, nil, err
	}
	var lo *searchOptions
	if sp.Limit != nil { // the search sets the rate, the duration and the stages
		lo = newSearchOptions(sp.Limit)
		p, err := scenario.NewPlan(s)
		if err != nil {
			return nil, nil, nil, kind(errInvalid, err)
		}
		if err := prepareLimit(s, p.Estimate(), lo); err != nil {
			return nil, nil, nil, err
		}
		if lo.Sustain, lo.Window = sp.Sustain.D(), sp.SustainWindows(); lo.Sustain > 0 {
			// the hold after the search, its pause and its drain, and the drain of a last
			// step that ran past the search's time
			s.Parameters.Duration += lo.Sustain + lo.Pause + 2*bench.MaxDrain
		}
	}
	plan, err := scenario.NewPlan(s)
	if err != nil {
		return nil, nil, nil, kind(errInvalid, err)
	}
	return plan, evaluate, lo, nil
}

// Plan reads and changes the Spec's scenario as Do does and returns its whole plan (not a
// shard's) and the thresholds its run judges, running nothing: what a Spec would run.
func Plan(sp *Spec, o IO) (*scenario.Plan, []string, error) {
	o.defaults()
	if err := sp.Validate(); err != nil {
		return nil, nil, usage(err)
	}
	d := &doer{sp: sp, io: o}
	s, err := d.scenario()
	if err != nil {
		return nil, nil, err
	}
	plan, evaluate, _, err := d.prepare(s, o.Stderr)
	return plan, evaluate, err
}

// launch chooses the processes, checks the host, serves the outputs, executes plan with o
// (or searches for the broker's limit, lo) and finishes the run's report.
func (d *doer) launch(ctx context.Context, plan *scenario.Plan, o options, outs *outputs, fin finisher, lo *searchOptions) (*result.Result, error) {
	var err error
	procs := d.sp.Procs
	if procs == 0 && lo != nil {
		procs = 1 // a search changes the rate of one engine
	}
	if o.Procs, err = chooseProcs(procs, plan); err != nil {
		return nil, err
	}
	if !d.sp.NoCheck {
		if o.Checks, err = checkHost(o.Log, plan, o.Procs); err != nil {
			return nil, err
		}
	}
	if err := outs.Serve(o.Log, plan.Len()); err != nil {
		return nil, err
	}
	var groups []string
	for _, g := range plan.Groups() {
		groups = append(groups, g.Name)
	}
	outs.SetGroups(groups)
	defer outs.Stop(ctx, o.Log)
	// The live API's stop ends the run as an interrupt does; the outputs outlive it.
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	control := &runControl{stop: stop}
	if lo != nil {
		control.attach(nil, "a search for the broker's limit sets the rate itself")
	}
	o.control, o.steerable = control, outs.steerable()
	if err := outs.serveLive(o.Log, plan, o.ToolVersion, control); err != nil {
		return nil, err
	}
	o.OnInterval = outs.OnInterval(o.Log)
	o.OnStep = outs.OnStep()
	if lo == nil && d.sp.Sustain > 0 && o.Procs <= 1 { // worker processes' intervals are timed from each one's start
		liveSoakOf(&o, outs.Soak(), d.sp.SustainWindows())
	}
	var res *result.Result
	if lo != nil {
		lo.SoakLive = outs.Soak()
		res, err = searchLimit(runCtx, plan, o, *lo)
	} else {
		res, err = execute(runCtx, plan, o)
		if res != nil && d.sp.Sustain > 0 {
			res.Soak = runSoak(res, d.sp.SustainWindows())
			fmt.Fprintf(o.Log, "soak: %s\n", res.Soak.Verdict)
		}
	}
	if res == nil {
		return nil, err
	}
	groups, carriers, payloads := plan.Measurement()
	for i := range groups {
		res.Measurement = append(res.Measurement, result.GroupMeasurement{Group: groups[i], Carrier: carriers[i], Payload: payloads[i]})
	}
	return res, fin.Finish(runCtx, res, err)
}

// checkInputs checks what of the Spec needs the host before any socket opens: the loops
// against the cores, the sink's flush delay, the source addresses, the output files.
func (d *doer) checkInputs() error {
	sp := d.sp
	in := inputs{Loops: sp.Loops, Bind: sp.Bind, HTML: sp.Outputs.HTML, Out: sp.Outputs.Out}
	if sp.Sink != nil {
		in.Sink, in.SinkDelay = true, sp.Sink.FlushDelay.D()
	}
	if err := in.Check(); err != nil {
		return err
	}
	return checkClientCerts(sp.TLS) // the client CA and its key belong together
}

// overrides are the Spec's changes to its scenario.
func (d *doer) overrides() changes {
	sp := d.sp
	brokers := sp.Brokers
	if d.brokers != nil {
		brokers = d.brokers
	}
	dur := sp.Duration.D()
	if sp.Sustain > 0 && sp.Limit == nil { // a fixed-rate soak measures for its hold
		dur = sp.Sustain.D()
	}
	return changes{Sets: sp.Scenario.Set, Duration: dur, Brokers: brokers, Bind: sp.Bind,
		Sink: sp.Sink != nil, Stages: sp.Stages, Credentials: sp.Credentials, TLS: sp.TLS}
}

// recorded is the Spec as the result records it: the scenario file's JSON in it (the
// file is not read again when the run is repeated from its result), the shard resolved,
// every password replaced by the marker.
func (d *doer) recorded(shard string) json.RawMessage {
	c := d.sp.Clone()
	c.Scenario.File = secret.RedactJSON(d.raw, "password")
	c.Scenario.Set = redactSets(c.Scenario.Set)
	c.Shard = shard
	return c.JSON()
}

// redactSets returns sets with the value of every change of a secret field replaced by
// the marker (a new slice).
func redactSets(sets []string) []string {
	out := make([]string, len(sets))
	for i, kv := range sets {
		out[i] = kv
		if k, _, ok := strings.Cut(kv, "="); ok && scenario.SecretPath(strings.TrimSpace(k)) {
			out[i] = k + "=" + scenario.RedactedPassword
		}
	}
	return out
}

// passwordOf returns the value of the last change of the run's password in sets ("":
// none), and those of groups' own passwords by group name (nil: none).
func passwordOf(sets []string) (string, map[string]string) {
	pw := ""
	var groups map[string]string
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || v == scenario.RedactedPassword {
			continue
		}
		switch g, secret := scenario.PasswordPath(k); {
		case !secret:
		case g == "":
			pw = v
		default:
			if groups == nil {
				groups = map[string]string{}
			}
			groups[g] = v
		}
	}
	return pw, groups
}

// errNoSpec is the error of a child started without its envelope.
var errNoSpec = errors.New("no spec on descriptor 3: this command is mqblast's own, for the processes it starts")
