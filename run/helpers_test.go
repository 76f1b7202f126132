package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// ran is a run of a Spec in this process as a test sees it: its result, what it wrote
// on stdout and stderr, its error and how long it took.
type ran struct {
	res            *result.Result
	stdout, stderr string
	err            error
	took           time.Duration
}

// kind is the kind of the run's failure (internal/fail): nil for a run that succeeded or
// failed without one (the command line's exit 1).
func (o ran) kind() error { return fail.KindOf(o.err) }

// failed reports whether the run failed without a kind (the command line's exit 1).
func (o ran) failed() bool {
	return o.err != nil && o.kind() == nil && !errors.Is(o.err, fail.Interrupted)
}

// doSpec runs sp in this process (Do), its child processes (workers, the embedded broker,
// the sink, the run behind the emulator) the mqblast binary built for the test, with no
// $MQBLAST_PASSWORD unless env gives one.
func doSpec(t *testing.T, sp *Spec, env ...string) ran {
	t.Helper()
	return doSpecCtx(context.Background(), t, sp, env...)
}

// doSpecCtx is doSpec until ctx ends (an interrupted run: its partial result).
func doSpecCtx(ctx context.Context, t *testing.T, sp *Spec, env ...string) ran {
	t.Helper()
	var out, errOut bytes.Buffer
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	o := IO{Stdout: &out, Stderr: &errOut, Exe: testbroker.Binary(t, "../cmd/mqblast"), Version: "test",
		Getenv: func(k string) string { return vars[k] }}
	start := time.Now()
	res, err := Do(ctx, sp, o)
	return ran{res: res, stdout: out.String(), stderr: errOut.String(), err: err, took: time.Since(start)}
}

// interruptAfter is a context that ends after d, as Ctrl-C would end a run.
func interruptAfter(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// quick is a Spec of the built-in scenario name changed by sets (PATH=VALUE) against
// broker ("": the embedded broker), checked against the host unless the test says not.
func quick(name, broker string, sets ...string) *Spec {
	sp := &Spec{Scenario: spec.Scenario{Name: name, Set: sets}}
	if broker != "" {
		sp.Brokers = []string{broker}
	}
	return sp
}

// sets returns PATH=VALUE changes from path, value pairs.
func sets(kv ...any) []string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fmt.Sprintf("%v=%v", kv[i], kv[i+1]))
	}
	return out
}
