package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

// ChildVerb is the hidden command of mqblast that the processes a run starts of its own
// binary run: a worker, or the run in the packet emulator's client namespace. It takes no
// flags and no arguments: what it runs comes as an envelope (a Spec and the child's part)
// on its descriptor 3, from a file that has no name (Child).
const ChildVerb = "child"

// envelope is what a child process is given: the Spec it runs, and what it is.
type envelope struct {
	Spec spec.Spec `json:"spec"`
	// Worker, if set, makes the child a worker: it runs its part of the Spec's plan (of the
	// Spec's shard) and speaks the worker protocol on its stdin and stdout.
	Worker *workerPart `json:"worker,omitempty"`
	// Emulated, if set, makes the child the run in the packet emulator's client
	// namespace: the Spec's run, with its outputs, against the broker behind the emulator.
	Emulated *emulated `json:"emulated,omitempty"`
}

// workerPart is a worker's part of its parent's plan.
type workerPart struct {
	Part    string `json:"part"`     // I/N of the parent's plan
	RunFrom string `json:"run_from"` // where the run's identity (Spec.RunID) came from
	// Steerable: the parent may change the rate (steer lines after the start line).
	Steerable bool `json:"steerable,omitempty"`
}

// emulated is what the run in the emulator's client namespace is told.
type emulated struct {
	Profile string `json:"profile"`          // the network profile it goes through
	Broker  string `json:"broker,omitempty"` // the broker behind the emulator, when the Spec names none
}

// network is the profile the run goes through, for its result.
func (e *emulated) network() *result.NetworkInfo {
	p, err := tuning.ParseProfile(e.Profile)
	if err != nil {
		return &result.NetworkInfo{Profile: e.Profile, Via: "emulator"}
	}
	return &result.NetworkInfo{Profile: p.String(), Up: result.Path(p.Up), Down: result.Path(p.Down), Via: "emulator"}
}

// file writes the envelope into a file that has no name once written, read from its
// start: the child inherits it as its descriptor 3, and nothing is left behind however
// this process ends (a SIGKILL skips every defer). The caller closes it.
func (e *envelope) file() (*os.File, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("cannot write a child's spec: %w", err)
	}
	f, err := os.CreateTemp("", "mqblast-spec-*.json")
	if err != nil {
		return nil, fmt.Errorf("cannot write a child's spec: %w", err)
	}
	_ = os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cannot write a child's spec: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cannot write a child's spec: %w", err)
	}
	return f, nil
}

// inner is the Spec as a child is given it: every password out of it (the child takes the
// password from its environment, PasswordEnv).
func (d *doer) inner() *Spec {
	c := d.sp.Clone()
	c.Scenario.Set = redactSets(c.Scenario.Set)
	return c
}

// password is the broker password a child takes from its environment: a change of a
// secret field's, else the one given outside the Spec ("": none; a password file the
// child reads itself, $MQBLAST_PASSWORD it inherits). groups are the passwords of groups'
// own servers the same way, by group name (those the Spec's changes give, else those
// given outside it; nil: none, or $MQBLAST_GROUP_PASSWORDS it inherits).
func (d *doer) password() (run string, groups map[string]string) {
	run, set := passwordOf(d.sp.Scenario.Set)
	if run == "" {
		run = d.io.Password
	}
	for g, pw := range d.io.GroupPasswords {
		if _, ok := set[g]; !ok {
			if set == nil {
				set = map[string]string{}
			}
			set[g] = pw
		}
	}
	return run, set
}

// Child is the body of ChildVerb: it reads its envelope from in (its descriptor 3) and
// runs as it says: a worker's part, or the run in the emulator's client namespace. code
// gives the exit code a worker's parent is told for an error.
func Child(ctx context.Context, in io.Reader, o IO, code func(error) int) error {
	o.defaults()
	var env envelope
	b, err := io.ReadAll(in)
	if err == nil && len(b) == 0 {
		err = errNoSpec
	}
	if err == nil {
		err = json.Unmarshal(b, &env)
	}
	if err != nil {
		return usage(fmt.Errorf("%s: %w", ChildVerb, err))
	}
	switch {
	case env.Worker != nil:
		return worker(ctx, &env, o, code)
	case env.Emulated != nil:
		sp := &env.Spec
		if err := sp.Validate(); err != nil {
			return usage(err)
		}
		d := &doer{sp: sp, io: o, inside: env.Emulated}
		if env.Emulated.Broker != "" {
			// The broker behind the emulator; the result records the Spec as given.
			d.brokers = []string{env.Emulated.Broker}
		}
		_, err := d.do(ctx)
		return err
	}
	return usage(errors.New(ChildVerb + ": the spec says neither worker nor emulated"))
}

// worker is the body of a worker process: it runs its part of the plan, streams snapshots
// and the result on o.Stdout, and waits on o.Stdin for the start.
func worker(ctx context.Context, env *envelope, o IO, code func(error) int) error {
	sp := &env.Spec
	s, err := scenario.Parse(sp.Scenario.Name, sp.Scenario.File)
	var plan *scenario.Plan
	if err == nil {
		err = resolvePassword(s, "", io.Discard, secrets{}, o.Getenv)
	}
	if err == nil && len(sp.Brokers) > 0 {
		err = s.SetBrokers(sp.Brokers)
	}
	if err == nil {
		plan, err = scenario.NewPlan(s)
	}
	if err == nil && sp.Shard != "" {
		var sh *result.ShardInfo
		if sh, err = parseShard(sp.Shard); err == nil {
			plan = plan.Shard(sh.Index, sh.Count)
		}
	}
	if err == nil {
		var part *result.ShardInfo
		if part, err = parseShard(env.Worker.Part); err == nil {
			plan = plan.Part(part.Index, part.Count, dialLanes(plan.ConnectRate(), part.Count))
		}
	}
	opt := options{Loops: sp.Loops, IDStart: sp.IDStart, MaxPacket: sp.MaxPacketSize, AcceptDowngrade: sp.AcceptDowngrade,
		TLS: sp.TLS, Run: runIdentity(sp.RunID, env.Worker.RunFrom), exe: o.Exe, getenv: o.Getenv, steerable: env.Worker.Steerable, Log: o.Stderr}
	if err != nil {
		err = kind(errInvalid, err)
		_ = newWorkerWriter(o.Stdout).Final(nil, err, code(err))
		return err
	}
	return runWorker(ctx, plan, opt, o.Stdin, o.Stdout, code)
}
