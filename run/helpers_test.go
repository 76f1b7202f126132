package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/report"
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
	return o.err != nil && o.kind() == nil && !errors.Is(o.err, fail.ErrInterrupted)
}

// said is what the command line's stderr would hold: the run's progress and its error.
func (o ran) said() string {
	if o.err == nil {
		return o.stderr
	}
	return o.stderr + o.err.Error() + "\n"
}

// doSpec runs sp in this process (Do), its child processes (workers, the embedded broker,
// the sink, the run behind the emulator) the mqblast binary built for the test, with no
// $MQBLAST_PASSWORD unless env gives one.
func doSpec(t *testing.T, sp *Spec, env ...string) ran {
	t.Helper()
	return doSpecCtx(context.Background(), t, sp, env...)
}

// doOK is doSpec of a run that must succeed: it fails the test otherwise.
func doOK(t *testing.T, sp *Spec, env ...string) ran {
	t.Helper()
	r := doSpec(t, sp, env...)
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	return r
}

// doSpecCtx is doSpec until ctx ends (an interrupted run: its partial result).
func doSpecCtx(ctx context.Context, t *testing.T, sp *Spec, env ...string) ran {
	t.Helper()
	return goSpec(ctx, t, sp, env...).wait()
}

// going is a run of a Spec going on in a goroutine of its own (goSpec).
type going struct {
	stderr *syncBuffer
	done   chan ran
}

// progress is what the run has written on stderr so far.
func (g *going) progress() string { return g.stderr.String() }

// wait waits for the run to end and returns it.
func (g *going) wait() ran { return <-g.done }

// goSpec starts sp as doSpecCtx runs it, in a goroutine of its own: a run beside the
// test's (another mqblast's), or one the test acts on while it goes on.
func goSpec(ctx context.Context, t *testing.T, sp *Spec, env ...string) *going {
	t.Helper()
	var out bytes.Buffer
	g := &going{stderr: &syncBuffer{}, done: make(chan ran, 1)}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	o := IO{Stdout: &out, Stderr: g.stderr, Exe: testbroker.Binary(t, "../cmd/mqblast"), Version: "test",
		Getenv: func(k string) string { return vars[k] }}
	start := time.Now()
	go func() {
		res, err := Do(ctx, sp, o)
		g.done <- ran{res: res, stdout: out.String(), stderr: g.stderr.String(), err: err, took: time.Since(start)}
	}()
	return g
}

// syncBuffer is a buffer a run writes while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// interruptAfter is a context that ends after d, as Ctrl-C would end a run. The binary the
// run's children run is built first: the time is the run's.
func interruptAfter(t *testing.T, d time.Duration) context.Context {
	testbroker.Binary(t, "../cmd/mqblast")
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

// pubSpec is the Spec of `mqblast pub -t topic` against broker ("": the embedded broker):
// pub's scenario with its defaults (scenario.QuickFile: 200 clients of MQTT 3.1.1 connecting
// at 100/s, each publishing 256 bytes at QoS 0 once a second for 30 s), changed by sets.
// topic is in the scenario's placeholders ($clientindex), not pub's (%i).
func pubSpec(broker, topic string, sets ...string) *Spec {
	return quickFile("pub", broker, fmt.Sprintf(`{"name": "pub", "type": "Publish",
	  "publishers": {"id_prefix": "mqblast-pub-", "protocol_version": 4, "client_count": 200, "clean_session": true,
	    "topics": %q, "qos": 0, "retain": false},
	  "parameters": {"connection_rate": 100, "duration_sec": 30, "keep_alive_sec": 300, "publish_rate": 1,
	    "payload_size": 256, "message_count": 0, "warmup_sec": 0}}`, topic), sets)
}

// subSpec is the Spec of `mqblast sub -t filter` against broker: sub's scenario with its
// defaults (200 clients of MQTT 3.1.1 connecting at 100/s, subscribed at QoS 0 for 60 s),
// changed by sets.
func subSpec(broker, filter string, sets ...string) *Spec {
	return quickFile("sub", broker, fmt.Sprintf(`{"name": "sub", "type": "Subscribe",
	  "subscribers": {"id_prefix": "mqblast-sub-", "protocol_version": 4, "client_count": 200, "clean_session": true,
	    "topics": %q, "qos": 0},
	  "parameters": {"connection_rate": 100, "duration_sec": 60, "keep_alive_sec": 300}}`, filter), sets)
}

// quickFile is the Spec of the scenario file doc, called name, against broker, changed by
// sets.
func quickFile(name, broker, doc string, sets []string) *Spec {
	sp := quick(name, broker, sets...)
	sp.Scenario.File = json.RawMessage(doc)
	return sp
}

// checkDoc fails the test unless the document a run wrote on stdout (outputs.format json)
// adds up (result.CheckDocument); it returns the run's result.
func checkDoc(t *testing.T, r ran) *result.Result {
	t.Helper()
	if err := result.CheckDocument([]byte(r.stdout)); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
	}
	return r.res
}

// goShard starts sp as shard i of n of an Indexed Job (the environment that shard "auto"
// reads), in one process, unchecked, its result written to out.
func goShard(t *testing.T, i, n int, out string, sp *Spec) *going {
	t.Helper()
	sp.Shard, sp.NoCheck, sp.Procs, sp.Outputs.Out = "auto", true, 1, out
	return goSpec(context.Background(), t, sp, fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), fmt.Sprintf("JOB_COMPLETIONS=%d", n))
}

// merged is what `mqblast merge` makes of the result files: their merged document, or why
// it refuses them.
func merged(t *testing.T, files ...string) (*result.Result, error) {
	t.Helper()
	var out bytes.Buffer
	if err := report.MergeFiles(&out, io.Discard, files, "", "json"); err != nil {
		return nil, err
	}
	var res result.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("the merged document: %v", err)
	}
	return &res, nil
}
