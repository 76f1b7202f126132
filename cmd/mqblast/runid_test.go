package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// stranger starts another mqblast run beside the test's: `mqblast pub` of n clients on
// topic (placeholders as pub takes them) against addr, 50 messages a second each, under
// its own run identity. It publishes until the test ends it (stop).
func stranger(t *testing.T, addr, topic string, n int) (stop func() *result.Result) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	c := exec.Command(mqblastBin(t), "pub", "-H", host, "-p", port, "-c", fmt.Sprint(n), "-t", topic, "-I", "20", "-q", "1",
		"-s", "16", "--duration", "60s", "--no-check", "--procs", "1", "--format", "json", "--run-id", "a-stranger", "--prefix", "stranger-")
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() *result.Result {
		if done {
			return nil
		}
		done = true
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
		var r result.Result
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("the stranger's result: %v\n%s", err, errOut.String())
		}
		return &r
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(errOut.String(), "sent") { // its first progress line with messages
		if time.Now().After(deadline) {
			t.Fatalf("the stranger did not start publishing:\n%s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stop
}

// p2pPlan is quick-p2p-100 of pairs pairs against brokers, as run builds it.
func p2pPlan(t *testing.T, pairs int, brokers []string) *scenario.Plan {
	t.Helper()
	sets := []string{fmt.Sprintf("publishers.client_count=%d", pairs), fmt.Sprintf("subscribers.client_count=%d", pairs)}
	p, _, err := run.Plan(&spec.Spec{Scenario: spec.Scenario{Name: "quick-p2p-100", Set: sets}, Brokers: brokers}, run.IO{})
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
// sit on two brokers that are not bridged delivers nothing, while a stranger (another
// `mqblast pub`, same topic, same publisher number and sequence numbers) publishes to the
// subscriber's broker. The stranger's copies are unexpected.other_run, never received: every
// expected copy is lost, and --threshold messages.lost==0 fails (exit 5).
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
	args := []string{"run", "quick-p2p-100", "--broker", a.Addr + "," + b.Addr, "--no-check", "--procs", "1", "--format", "json",
		"--run-id", "the-audited-run", "--threshold", "messages.lost==0",
		"--set", "publishers.client_count=1", "--set", "subscribers.client_count=1", "--set", "parameters.duration_sec=4s",
		"--set", "parameters.warmup_sec=1s", "--set", "parameters.drain_sec=1s"}
	r := runBin(t, args...)
	strange := stop()
	res := decodeResult(t, r)
	m := res.Messages
	t.Logf("expected %d, received %d, lost %d, duplicated %d, unexpected %v; the stranger published %d",
		m.Expected, m.Received, m.Lost, m.Duplicated, m.Unexpected, strange.Messages.Published)
	if r.code != exitThreshold {
		t.Errorf("exit %d, want %d (messages.lost==0 fails)\n%s", r.code, exitThreshold, r.stderr)
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
	stop := stranger(t, m.Addr, "quick/p2p/%i", 5)
	r := runBin(t, "run", "quick-p2p-100", "--broker", m.Addr, "--no-check", "--procs", "1", "--format", "json",
		"--set", "publishers.client_count=5", "--set", "subscribers.client_count=5", "--set", "parameters.duration_sec=3s",
		"--set", "parameters.warmup_sec=1s", "--threshold", "messages.lost==0", "--threshold", "messages.duplicated==0")
	strange := stop()
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
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
// its subscribers in both) without --run-id: the parent draws the identity and hands it to
// both, so every copy is received, none is another run's.
func TestWorkersShareRunIdentity(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	r := runBin(t, "run", "quick-fanout-1-100", "--broker", m.Addr, "--no-check", "--procs", "2", "--format", "json",
		"--set", "subscribers.client_count=10", "--set", "parameters.duration_sec=2s", "--set", "parameters.warmup_sec=500ms")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
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
// subscribers in both) given one --start-at derive one run identity from it, so the
// subscribers of shard 1 receive shard 0's messages and the merge loses nothing; a shard
// without --run-id or --start-at is refused before it connects, saying how to fix it.
func TestShardsShareRunIdentity(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	files := make([]string, 2)
	procs := make([]*exec.Cmd, 2)
	errs := make([]*bytes.Buffer, 2)
	for i := range 2 {
		files[i] = filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		procs[i], errs[i] = runShard(t, i, 2, files[i], "quick-fanout-1-100", "--broker", m.Addr, "--start-at", at,
			"--set", "subscribers.client_count=10", "--set", "parameters.duration_sec=2s", "--set", "parameters.warmup_sec=500ms")
	}
	for i, c := range procs {
		if err := c.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, errs[i])
		}
	}
	s0, s1 := readResult(t, files[0]), readResult(t, files[1])
	if s0.Run == nil || s1.Run == nil || *s0.Run != *s1.Run || s0.Run.From != "start-at" {
		t.Fatalf("shard identities %v and %v: want one, from --start-at", s0.Run, s1.Run)
	}
	if s1.Messages.Received == 0 || s1.Messages.UnexpectedTotal != 0 {
		t.Errorf("shard 1 (subscribers only): received %d, unexpected %v", s1.Messages.Received, s1.Messages.Unexpected)
	}
	r := runBin(t, "merge", files[0], files[1], "--format", "json")
	if r.code != exitOK {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	checkIdentities(t, "merged", res.Messages)
	if msg := res.Messages; msg.Expected < 100 || msg.Lost != 0 || msg.Received != msg.Expected || res.Run == nil || *res.Run != *s0.Run {
		t.Errorf("merged: expected %d, received %d, lost %d, run %v", msg.Expected, msg.Received, msg.Lost, res.Run)
	}

	r = runBin(t, "run", "quick-fanout-1-100", "--broker", m.Addr, "--no-check", "--shard", "0/2")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--run-id") || !strings.Contains(r.stderr, "--start-at") ||
		strings.Contains(r.stderr, "connecting") {
		t.Errorf("a shard without an identity: exit %d, want %d naming --run-id and --start-at, before connecting\n%s", r.code, exitUsage, r.stderr)
	}
}

// TestSubAloneExpectedUnknown: `mqblast sub` beside `mqblast pub` does not know what was
// published: its result says expected (and lost) unknown, null in the document, instead of
// 0 expected of N received, and a threshold on the loss does not hold (unknown). Given the
// publishers' --run-id, sub counts a stranger's copies as other_run; without it, it takes
// every run's copies.
func TestSubAloneExpectedUnknown(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := net.SplitHostPort(m.Addr)
	stranger(t, m.Addr, "sub/%i", 1) // until the test ends
	sub := func(prefix string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		c := exec.Command(mqblastBin(t), append([]string{"sub", "--prefix", prefix, "-H", host, "-p", port, "-c", "2", "-t", "sub/#", "-q", "1",
			"--duration", "3s", "--no-check", "--procs", "1", "--format", "json", "--threshold", "messages.lost==0"}, args...)...)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c, &out, &errOut
	}
	anyRun, anyOut, anyErr := sub("sub-any-")
	ownRun, ownOut, ownErr := sub("sub-own-", "--run-id", "pub-and-sub")
	time.Sleep(time.Second) // both subscribed
	pub := runBin(t, "pub", "-H", host, "-p", port, "-c", "2", "-t", "sub/%i", "-I", "20", "-q", "1", "--duration", "1s",
		"--no-check", "--procs", "1", "--format", "json", "--run-id", "pub-and-sub")
	if pub.code != exitOK {
		t.Fatalf("pub: exit %d\n%s", pub.code, pub.stderr)
	}
	published := decodeResult(t, pub).Messages.Published
	for _, s := range []struct {
		name     string
		c        *exec.Cmd
		out, err *bytes.Buffer
	}{{"any run", anyRun, anyOut, anyErr}, {"--run-id", ownRun, ownOut, ownErr}} {
		_ = s.c.Wait()
		if code := s.c.ProcessState.ExitCode(); code != exitThreshold {
			t.Errorf("sub (%s): exit %d, want %d (messages.lost==0 unknown)\n%s", s.name, code, exitThreshold, s.err)
		}
		var doc struct {
			Messages map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &doc); err != nil {
			t.Fatalf("sub (%s): %v", s.name, err)
		}
		if e, ok := doc.Messages["expected"]; !ok || e != nil || doc.Messages["lost"] != nil || doc.Messages["expected_unknown"] != true {
			t.Errorf("sub (%s): messages %v: want expected and lost null, expected_unknown true", s.name, doc.Messages)
		}
		res := decodeResult(t, cliRun{stdout: s.out.String()})
		msg := res.Messages
		if len(res.Thresholds) != 1 || res.Thresholds[0].OK || !res.Thresholds[0].Unknown {
			t.Errorf("sub (%s): thresholds %+v, want messages.lost==0 unknown, not ok", s.name, res.Thresholds)
		}
		if sum := summary(t, res); !strings.Contains(sum, "expected unknown") || !strings.Contains(sum, "value unknown  FAILED") ||
			!strings.Contains(s.err.String(), "messages.lost==0 (value unknown)") {
			t.Errorf("sub (%s): the summary does not say expected unknown:\n%s\n%s", s.name, sum, s.err)
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
