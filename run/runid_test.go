package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// stranger starts another mqblast run beside the test's: a pub run of n clients on topic
// against addr, 50 messages a second each, under its own run identity. It publishes until
// the test ends it (stop: its partial result).
func stranger(t *testing.T, addr, topic string, n int) (stop func() *result.Result) {
	t.Helper()
	sp := pubSpec(addr, topic, sets("publishers.client_count", n, "parameters.publish_rate", 50, "publishers.qos", 1,
		"parameters.payload_size", 16, "parameters.duration_sec", 60, "publishers.id_prefix", "stranger-")...)
	sp.NoCheck, sp.Procs, sp.RunID = true, 1, "a-stranger"
	ctx, cancel := context.WithCancel(context.Background())
	run := goSpec(ctx, t, sp)
	done := false
	stop = func() *result.Result {
		if done {
			return nil
		}
		done = true
		cancel()
		r := run.wait()
		if r.res == nil {
			t.Fatalf("the stranger's result: %v\n%s", r.err, r.stderr)
		}
		return r.res
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(run.progress(), "sent") { // its first progress line with messages
		if time.Now().After(deadline) {
			t.Fatalf("the stranger did not start publishing:\n%s", run.progress())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stop
}

// p2pPlan is quick-p2p-100 of pairs pairs against brokers, as a run plans it.
func p2pPlan(t *testing.T, pairs int, brokers []string) *scenario.Plan {
	t.Helper()
	sp := quick("quick-p2p-100", "", sets("publishers.client_count", pairs, "subscribers.client_count", pairs)...)
	sp.Brokers = brokers
	p, _, err := Plan(sp, IO{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// summary is the text summary of r.
func summary(t *testing.T, r *result.Result) string {
	t.Helper()
	var b strings.Builder
	if err := report.WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkIdentities asserts the accounting identities of one run's document.
func checkIdentities(t *testing.T, name string, m result.Messages) {
	t.Helper()
	if m.Scheduled != m.Published+m.UnsentTotal {
		t.Errorf("%s: scheduled %d != published %d + unsent %d", name, m.Scheduled, m.Published, m.UnsentTotal)
	}
	if m.Expected != m.Received+m.Lost+m.InFlightAtEnd+m.InFlightLost {
		t.Errorf("%s: expected %d != received %d + lost %d + in flight at end %d + in flight lost %d",
			name, m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.InFlightLost)
	}
}

// TestStrangerFillsNoLoss is the audit's case: a P2P run whose publisher and subscriber
// sit on two brokers that are not bridged delivers nothing, while a stranger (another pub
// run, same topic, same publisher number and sequence numbers) publishes to the
// subscriber's broker. The stranger's copies are unexpected.other_run, never received: every
// expected copy is lost, and the threshold messages.lost==0 fails the run.
func TestStrangerFillsNoLoss(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	a := testbroker.StartMosquitto(t, testbroker.Options{})
	b := testbroker.StartMosquitto(t, testbroker.Options{})
	brokers := []string{a.Addr, b.Addr}
	plan := p2pPlan(t, 1, brokers)
	var subBroker, pubBroker, topic string
	for i := range plan.Len() {
		c := plan.Client(i)
		if c.Role.Subscribes() {
			subBroker = brokers[c.Broker]
		} else {
			pubBroker, topic = brokers[c.Broker], c.Topic
		}
	}
	if subBroker == pubBroker || topic == "" {
		t.Fatalf("the plan puts the subscriber on %s and the publisher of %q on %s: want two brokers", subBroker, topic, pubBroker)
	}
	stop := stranger(t, subBroker, topic, 1)
	sp := quick("quick-p2p-100", a.Addr+","+b.Addr, sets("publishers.client_count", 1, "subscribers.client_count", 1,
		"parameters.duration_sec", "4s", "parameters.warmup_sec", "1s", "parameters.drain_sec", "1s")...)
	sp.NoCheck, sp.Procs, sp.RunID, sp.Thresholds = true, 1, "the-audited-run", []string{"messages.lost==0"}
	r := doSpec(t, sp)
	strange := stop()
	if r.res == nil {
		t.Fatalf("no result: %v\n%s", r.err, r.stderr)
	}
	res := r.res
	m := res.Messages
	t.Logf("expected %d, received %d, lost %d, duplicated %d, unexpected %v; the stranger published %d",
		m.Expected, m.Received, m.Lost, m.Duplicated, m.Unexpected, strange.Messages.Published)
	if !errors.Is(r.err, fail.ErrThreshold) {
		t.Errorf("%v, want %v (messages.lost==0 fails)\n%s", r.err, fail.ErrThreshold, r.stderr)
	}
	checkIdentities(t, "the run", m)
	if m.Expected < 30 || m.Received != 0 || m.Lost != m.Expected || m.Duplicated != 0 || m.Unexpected["other_run"] == 0 {
		t.Errorf("want every expected copy lost, none received or duplicated, the stranger's copies other_run")
	}
	if res.Run == nil || res.Run.ID != "the-audited-run" || res.Run.From != "run-id" || strange.Run == nil || strange.Run.Tag == res.Run.Tag {
		t.Errorf("run %v, the stranger's %v: want the given id, and another tag for the stranger", res.Run, strange.Run)
	}
}

// TestStrangerBesideHealthyRun: a P2P run of 5 pairs on one Mosquitto, and a stranger
// publishing on the same 5 topics with the same publisher numbers: the run's figures are
// its own (nothing lost, nothing duplicated, the identities hold) and the stranger's copies
// are unexpected.other_run; the stranger, a Publish run, expects nothing of anyone.
func TestStrangerBesideHealthyRun(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	stop := stranger(t, m.Addr, "quick/p2p/$clientindex", 5)
	sp := quick("quick-p2p-100", m.Addr, sets("publishers.client_count", 5, "subscribers.client_count", 5,
		"parameters.duration_sec", "3s", "parameters.warmup_sec", "1s")...)
	sp.NoCheck, sp.Procs, sp.Thresholds = true, 1, []string{"messages.lost==0", "messages.duplicated==0"}
	r := doSpec(t, sp)
	strange := stop()
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	res := r.res
	msg := res.Messages
	t.Logf("expected %d, received %d, lost %d, duplicated %d, unexpected %v; the stranger published %d",
		msg.Expected, msg.Received, msg.Lost, msg.Duplicated, msg.Unexpected, strange.Messages.Published)
	checkIdentities(t, "the run", msg)
	if msg.Expected < 100 || msg.Received != msg.Expected || msg.Duplicated != 0 || msg.OutOfOrder != 0 || msg.Unexpected["other_run"] < 100 {
		t.Errorf("want all received once, and the stranger's copies (over 100) other_run")
	}
	if res.Run == nil || res.Run.From != "generated" || len(res.Run.ID) != 4 {
		t.Errorf("run %v: want a generated identity of 4 hex digits", res.Run)
	}
	if sum := summary(t, res); !strings.Contains(sum, res.Run.ID+" (tag "+res.Run.ID+", generated)") || !strings.Contains(sum, "other_run") {
		t.Errorf("the summary does not show the run id and the other run's copies:\n%s", sum)
	}
	checkIdentities(t, "the stranger", strange.Messages)
}

// TestWorkersShareRunIdentity: a fan-out run in two worker processes (the publisher in one,
// its subscribers in both) without a run_id: the parent draws the identity and hands it to
// both, so every copy is received, none is another run's.
func TestWorkersShareRunIdentity(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-fanout-1-100", m.Addr, "subscribers.client_count=10", "parameters.duration_sec=2s", "parameters.warmup_sec=500ms")
	sp.NoCheck, sp.Procs = true, 2
	res := doOK(t, sp).res
	msg := res.Messages
	checkIdentities(t, "the run", msg)
	if res.Host.Procs != 2 || msg.Expected < 100 || msg.Received != msg.Expected || msg.UnexpectedTotal != 0 {
		t.Errorf("procs %d: expected %d, received %d, unexpected %v: want all received across the workers",
			res.Host.Procs, msg.Expected, msg.Received, msg.Unexpected)
	}
	if res.Run == nil || res.Run.From != "generated" {
		t.Errorf("run %v: want the parent's generated identity", res.Run)
	}
}

// TestShardsShareRunIdentity: two shards of a fan-out (the publisher in shard 0, its
// subscribers in both) given one start_at derive one run identity from it, so the
// subscribers of shard 1 receive shard 0's messages and the merge loses nothing; a shard
// without run_id or start_at is refused before it connects, saying how to fix it.
func TestShardsShareRunIdentity(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	testbroker.Binary(t, "../cmd/mqblast") // built before the clock starts
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	files := make([]string, 2)
	runs := make([]*going, 2)
	for i := range 2 {
		files[i] = filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		sp := quick("quick-fanout-1-100", m.Addr, "subscribers.client_count=10", "parameters.duration_sec=2s", "parameters.warmup_sec=500ms")
		sp.StartAt = at
		runs[i] = goShard(t, i, 2, files[i], sp)
	}
	for i, g := range runs {
		if r := g.wait(); r.err != nil {
			t.Fatalf("shard %d: %v\n%s", i, r.err, r.stderr)
		}
	}
	s0, s1 := readResult(t, files[0]), readResult(t, files[1])
	if s0.Run == nil || s1.Run == nil || *s0.Run != *s1.Run || s0.Run.From != "start-at" {
		t.Fatalf("shard identities %v and %v: want one, from start_at", s0.Run, s1.Run)
	}
	if s1.Messages.Received == 0 || s1.Messages.UnexpectedTotal != 0 {
		t.Errorf("shard 1 (subscribers only): received %d, unexpected %v", s1.Messages.Received, s1.Messages.Unexpected)
	}
	res, err := merged(t, files...)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	checkIdentities(t, "merged", res.Messages)
	if msg := res.Messages; msg.Expected < 100 || msg.Lost != 0 || msg.Received != msg.Expected || res.Run == nil || *res.Run != *s0.Run {
		t.Errorf("merged: expected %d, received %d, lost %d, run %v", msg.Expected, msg.Received, msg.Lost, res.Run)
	}

	sp := quick("quick-fanout-1-100", m.Addr)
	sp.NoCheck, sp.Shard = true, "0/2"
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "run_id") || !strings.Contains(r.err.Error(), "start_at") ||
		strings.Contains(r.stderr, "connecting") {
		t.Errorf("a shard without an identity: %v, want %v naming run_id and start_at, before connecting\n%s", r.err, fail.ErrUsage, r.stderr)
	}
}

// TestSubAloneExpectedUnknown: a sub run beside a pub run does not know what was
// published: its result says expected (and lost) unknown, null in the document, instead of
// 0 expected of N received, and a threshold on the loss does not hold (unknown). Given the
// publishers' run_id, sub counts a stranger's copies as other_run; without it, it takes
// every run's copies.
func TestSubAloneExpectedUnknown(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	stranger(t, m.Addr, "sub/$clientindex", 1) // until the test ends
	sub := func(prefix, runID string) *going {
		sp := subSpec(m.Addr, "sub/#", sets("subscribers.id_prefix", prefix, "subscribers.client_count", 2, "subscribers.qos", 1,
			"parameters.duration_sec", 3)...)
		sp.NoCheck, sp.Procs, sp.Outputs.Format, sp.Thresholds, sp.RunID = true, 1, "json", []string{"messages.lost==0"}, runID
		return goSpec(context.Background(), t, sp)
	}
	anyRun, ownRun := sub("sub-any-", ""), sub("sub-own-", "pub-and-sub")
	time.Sleep(time.Second) // both subscribed
	sp := pubSpec(m.Addr, "sub/$clientindex", sets("publishers.client_count", 2, "parameters.publish_rate", 50, "publishers.qos", 1,
		"parameters.duration_sec", 1)...)
	sp.NoCheck, sp.Procs, sp.RunID = true, 1, "pub-and-sub"
	published := doOK(t, sp).res.Messages.Published
	for _, s := range []struct {
		name string
		run  *going
	}{{"any run", anyRun}, {"run_id", ownRun}} {
		r := s.run.wait()
		if !errors.Is(r.err, fail.ErrThreshold) {
			t.Errorf("sub (%s): %v, want %v (messages.lost==0 unknown)\n%s", s.name, r.err, fail.ErrThreshold, r.stderr)
		}
		var doc struct {
			Messages map[string]any `json:"messages"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("sub (%s): %v", s.name, err)
		}
		if e, ok := doc.Messages["expected"]; !ok || e != nil || doc.Messages["lost"] != nil || doc.Messages["expected_unknown"] != true {
			t.Errorf("sub (%s): messages %v: want expected and lost null, expected_unknown true", s.name, doc.Messages)
		}
		res := r.res
		msg := res.Messages
		if len(res.Thresholds) != 1 || res.Thresholds[0].OK || !res.Thresholds[0].Unknown {
			t.Errorf("sub (%s): thresholds %+v, want messages.lost==0 unknown, not ok", s.name, res.Thresholds)
		}
		if sum := summary(t, res); !strings.Contains(sum, "expected unknown") || !strings.Contains(sum, "value unknown  FAILED") ||
			!strings.Contains(r.said(), "messages.lost==0 (value unknown)") {
			t.Errorf("sub (%s): the summary does not say expected unknown:\n%s\n%s", s.name, sum, r.said())
		}
		t.Logf("sub (%s): received %d, unexpected %v; pub published %d", s.name, msg.Received, msg.Unexpected, published)
		switch s.name {
		case "any run": // the pub's copies and the stranger's
			if msg.Received <= 2*published || msg.UnexpectedTotal != 0 {
				t.Errorf("sub (%s): received %d of pub's %d x 2 and the stranger's, unexpected %v", s.name, msg.Received, published, msg.Unexpected)
			}
		default: // the pub's only
			if msg.Received != 2*published || msg.Unexpected["other_run"] == 0 {
				t.Errorf("sub (%s): received %d, want pub's %d x 2; unexpected %v, want the stranger's other_run", s.name, msg.Received, published, msg.Unexpected)
			}
		}
	}
}
