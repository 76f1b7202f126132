package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// TestMain runs this package's tests, most of which wait on a broker, a sink or a run of
// their own, several at a time (testbroker.MainWaiting), and removes the binary
// testbroker.Binary built.
func TestMain(m *testing.M) { os.Exit(testbroker.MainWaiting(m)) }

// quietIO is the IO of a run in a test: the result on out, the progress on errOut.
func quietIO(out, errOut *bytes.Buffer) IO {
	return IO{Stdout: out, Stderr: errOut, Getenv: func(string) string { return "" }, Version: "test"}
}

// clientsOf lists every client of plan, derived as the engine sees it.
func clientsOf(p *scenario.Plan) []scenario.Client {
	out := make([]scenario.Client, p.Len())
	for i := range out {
		out[i] = p.Client(i)
		out[i].Group = nil // a pointer into the plan's own copy
	}
	return out
}

// TestDoRepeatsFromResult: a run's result records the Spec it ran (its scenario file's
// JSON in it, the password the marker); running that Spec again against the same broker
// plans the same clients and counts the same messages, and records the same Spec.
func TestDoRepeatsFromResult(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	sp := &Spec{Scenario: spec.Scenario{Name: "quick-p2p-100", Set: []string{"publishers.client_count=20",
		"subscribers.client_count=20", "parameters.warmup_sec=0.5", "parameters.drain_sec=1", "parameters.message_count=10", "server.username=u",
		"server.password=<redacted>"}},
		Brokers: []string{m.Addr}, Duration: spec.Duration(2e9), Procs: 1, NoCheck: true,
		Outputs: spec.Outputs{Format: "json", Out: filepath.Join(dir, "first.json")}}
	var out, errOut bytes.Buffer
	o := quietIO(&out, &errOut)
	o.Password = "s3cret" // stands where the Spec holds the marker; mosquitto takes anyone
	first, err := Do(context.Background(), sp, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	doc, err := os.ReadFile(sp.Outputs.Out)
	if err != nil || bytes.Contains(doc, []byte("s3cret")) {
		t.Fatalf("the result %v holds the password, or cannot be read", err)
	}
	again, err := spec.Read(first.Spec)
	if err != nil {
		t.Fatalf("the result's spec: %v\n%s", err, first.Spec)
	}
	if again.Scenario.Name != "quick-p2p-100" || len(again.Scenario.File) == 0 || again.Outputs.Out != sp.Outputs.Out {
		t.Errorf("recorded spec %s: want the scenario's file in it and the outputs", first.Spec)
	}
	builtin, _ := scenario.BuiltinJSON("quick-p2p-100")
	var a, b any
	_ = json.Unmarshal(builtin, &a)
	_ = json.Unmarshal(again.Scenario.File, &b)
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("the recorded scenario is not the file (-file +recorded):\n%s", d)
	}
	p1, ev1, err1 := Plan(sp, o)
	p2, ev2, err2 := Plan(again, o)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if d := cmp.Diff(clientsOf(p1), clientsOf(p2)); d != "" || !cmp.Equal(ev1, ev2) {
		t.Errorf("the plans differ (-first +again):\n%s", d)
	}
	again.Outputs.Out = filepath.Join(dir, "again.json")
	out.Reset()
	second, err := Do(context.Background(), again, o)
	if err != nil {
		t.Fatalf("again: %v\n%s", err, errOut.String())
	}
	for _, r := range []*result.Result{first, second} {
		msg := r.Messages
		if msg.Published != 200 || msg.Received != msg.Expected || msg.Lost != 0 || r.Connections.Established != 40 {
			t.Errorf("published %d (want 20 × 10), expected %d, received %d, lost %d, established %d\n%s", msg.Published, msg.Expected,
				msg.Received, msg.Lost, r.Connections.Established, errOut.String())
		}
	}
	if first.Messages.Expected != second.Messages.Expected || first.Messages.Published != second.Messages.Published {
		t.Errorf("published %d then %d, expected %d then %d", first.Messages.Published, second.Messages.Published,
			first.Messages.Expected, second.Messages.Expected)
	}
	r1, _ := spec.Read(first.Spec)
	r2, _ := spec.Read(second.Spec)
	r2.Outputs.Out = r1.Outputs.Out
	if d := cmp.Diff(r1, r2); d != "" {
		t.Errorf("the second run recorded another spec (-first +second):\n%s", d)
	}
}

// TestDoRefusesBeforeRunning: a Spec's problems are usage errors naming its fields, a bad
// scenario an invalid one, all before any socket (nothing listens on the broker's port).
func TestDoRefusesBeforeRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sp    Spec
		kind  error
		field string
		want  string
	}{
		{Spec{Scenario: spec.Scenario{Name: "quick-conn-100"}, Sink: &spec.Sink{}, Brokers: []string{"127.0.0.1:1"}},
			fail.ErrUsage, "sink", "sink and brokers: pick one"},
		{Spec{Scenario: spec.Scenario{Name: "quick-conn-100"}, Thresholds: []string{"messages.lots==0"}},
			fail.ErrUsage, "thresholds[0]", `thresholds "messages.lots==0": messages has no field "lots"`},
		{Spec{Scenario: spec.Scenario{Name: "quick-conn-100"}, Shard: "0/2"}, fail.ErrUsage, "shard", "carry one run identity"},
		{Spec{Scenario: spec.Scenario{Name: "quick-conn-100"}, Outputs: spec.Outputs{Out: "/nonexistent/dir/r.json"}},
			fail.ErrUsage, "outputs.out", "outputs.out /nonexistent/dir/r.json: cannot write there"},
		{Spec{Scenario: spec.Scenario{Name: "no-such-scenario"}}, fail.ErrInvalid, "", "no such file or built-in scenario"},
		{Spec{Scenario: spec.Scenario{Name: "x", File: json.RawMessage(`{"type":"Fan-Out","publishers":{"client_count":0}}`)}},
			fail.ErrInvalid, "", "x: publishers.client_count: 0"},
		{Spec{Scenario: spec.Scenario{Name: "quick-p2p-100"}, Limit: &spec.Limit{SLO: []string{"latency_us.p99<1"}}, Procs: 2},
			fail.ErrUsage, "procs", "procs 2: limit runs in one process"},
	} {
		var out, errOut bytes.Buffer
		sp := tc.sp
		res, err := Do(context.Background(), &sp, quietIO(&out, &errOut))
		var fe *spec.Error
		switch {
		case res != nil || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: %v, want %v saying %q", sp.JSON(), err, tc.kind, tc.want)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v names %v, want the field %s", sp.JSON(), err, fe, tc.field)
		case strings.Contains(errOut.String(), "connecting"):
			t.Errorf("%s: it started:\n%s", sp.JSON(), errOut.String())
		}
	}
}

// TestDoWorkers: a run in worker processes (the mqblast binary started as run's child,
// each given its part of the Spec on a descriptor, no flag on its command line) gives one
// result whose Spec is the one given, with every client connected.
func TestDoWorkers(t *testing.T) {
	t.Parallel()
	exe := testbroker.Binary(t, "../cmd/mqblast")
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := &Spec{Scenario: spec.Scenario{Name: "quick-conn-100", Set: []string{"publishers.client_count=60"}},
		Brokers: []string{m.Addr}, Duration: spec.Duration(1e9), Procs: 2, NoCheck: true, RunID: "workers"}
	var out, errOut bytes.Buffer
	o := quietIO(&out, &errOut)
	o.Exe = exe
	res, err := Do(context.Background(), sp, o)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if res.Connections.Established != 60 || res.Run == nil || res.Run.ID != "workers" ||
		!strings.Contains(errOut.String(), "60 clients in 2 worker processes") {
		t.Errorf("established %d, run %+v\n%s", res.Connections.Established, res.Run, errOut.String())
	}
	got, err := spec.Read(res.Spec)
	if err != nil || got.Procs != 2 || got.RunID != "workers" || len(got.Scenario.File) == 0 {
		t.Errorf("recorded spec %s (%v)", res.Spec, err)
	}
}
