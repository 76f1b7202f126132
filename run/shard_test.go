package run

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// TestRunShardAutoNoEnv: shard "auto" outside an Indexed Job is a usage error naming both
// variables, before any connection.
func TestRunShardAutoNoEnv(t *testing.T) {
	t.Parallel()
	sp := quick("quick-p2p-100", "127.0.0.1:1")
	sp.NoCheck, sp.Shard = true, "auto"
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrUsage) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrUsage, r.stderr)
	}
	if s := r.err.Error(); !strings.Contains(s, "JOB_COMPLETION_INDEX") || !strings.Contains(s, "JOB_COMPLETIONS") {
		t.Errorf("%q does not name both variables", s)
	}
}

// readResult reads the result document at path.
func readResult(t *testing.T, path string) *result.Result {
	t.Helper()
	res, err := result.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestShardsStartAtMerged is the several-hosts proof on one host: three runs of shard
// "auto" (JOB_COMPLETION_INDEX 0..2, JOB_COMPLETIONS 3) of one P2P scenario against
// Mosquitto, with one start_at a few seconds ahead, start publishing within 10 ms of each
// other; `mqblast merge` accounts for every message and gives what one process would
// report for the whole scenario; merge refuses a missing or repeated shard of them.
func TestShardsStartAtMerged(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	const n, clients, rate, duration = 3, 100, 10, 3 // quick-p2p-100: 100 publishers at 10/s
	testbroker.Binary(t, "../cmd/mqblast")           // built before the clock starts
	startAt := time.Now().Add(4 * time.Second).UTC().Format(time.RFC3339Nano)
	files := make([]string, n)
	procs := make([]*going, n)
	for i := range n {
		files[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		sp := quick("quick-p2p-100", m.Addr, "parameters.warmup_sec=1")
		sp.StartAt, sp.Duration = startAt, spec.Duration(duration*time.Second)
		procs[i] = goShard(t, i, n, files[i], sp)
	}
	shards := make([]*result.Result, n)
	for i, p := range procs {
		if r := p.wait(); r.err != nil {
			t.Fatalf("shard %d: %v\n%s", i, r.err, r.stderr)
		}
		shards[i] = readResult(t, files[i])
	}
	at, _ := time.Parse(time.RFC3339Nano, startAt)
	var scheduled, latCount int64
	// Publisher k of P is due Phase = k/P/rate after the start (the schedules interleave),
	// so shard i's first message is due at its first publisher's phase: what must agree is
	// first_publish_at minus that phase, the shards' start instants.
	s, err := scenario.Resolve("quick-p2p-100")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := scenario.NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	firstDue := func(i int) time.Duration {
		p, d := whole.Shard(i, n), time.Duration(math.MaxInt64)
		for k := range p.Len() {
			if c := p.Client(k); c.Role.Publishes() {
				d = min(d, c.Phase)
			}
		}
		return d
	}
	var first, last time.Time
	for i, r := range shards {
		if r.Shard == nil || r.Shard.Index != i || r.Shard.Count != n {
			t.Errorf("shard %d records shard %v", i, r.Shard)
		}
		if r.Start == nil || !r.Start.At.Equal(at) || r.Start.LateMS != 0 || r.Start.ReadyAt.After(at) {
			t.Errorf("shard %d: start %+v, want at %v, on time", i, r.Start, at)
		}
		if r.FirstPublishAt.Before(at) {
			t.Errorf("shard %d published at %v, before start_at %v", i, r.FirstPublishAt, at)
		}
		if r.Host.Clock == nil {
			t.Errorf("shard %d: no host.clock", i)
		}
		scheduled += r.Messages.Scheduled
		latCount += r.Histograms.Latency.Count()
		started := r.FirstPublishAt.Add(-firstDue(i))
		t.Logf("shard %d: first_publish_at %v, %v after start_at + its first due offset %v",
			i, r.FirstPublishAt.Format(time.RFC3339Nano), started.Sub(at), firstDue(i))
		if i == 0 {
			first, last = started, started
		}
		first, last = minTime(first, started), maxTime(last, started)
	}
	if spread := last.Sub(first); spread > 10*time.Millisecond {
		t.Errorf("the shards' first publishes less their first due offsets spread over %v, want <= 10ms", spread)
	}

	res, err := merged(t, files...)
	if err != nil {
		t.Fatalf("merge: %v", err)
	}
	msg := res.Messages
	if msg.Scheduled != msg.Published+msg.UnsentTotal {
		t.Errorf("scheduled %d != published %d + unsent %d", msg.Scheduled, msg.Published, msg.UnsentTotal)
	}
	if msg.Expected != msg.Received+msg.Lost+msg.InFlightAtEnd+msg.InFlightLost {
		t.Errorf("expected %d != received %d + lost %d + in flight at end %d + in flight lost %d",
			msg.Expected, msg.Received, msg.Lost, msg.InFlightAtEnd, msg.InFlightLost)
	}
	if msg.Lost != 0 {
		t.Errorf("lost %d at QoS 1", msg.Lost)
	}
	if msg.Scheduled != scheduled {
		t.Errorf("merged scheduled %d, the shards' sum %d", msg.Scheduled, scheduled)
	}
	if want := int64(clients * rate * duration); msg.Scheduled != want {
		t.Errorf("scheduled %d, want %d (clients x rate x duration: the schedules end at the planned instant)", msg.Scheduled, want)
	}
	if got := res.Histograms.Latency.Count(); got != latCount || res.LatencyUS.Count != latCount || latCount == 0 {
		t.Errorf("merged latency histogram %d values (summary %d), the shards' sum %d", got, res.LatencyUS.Count, latCount)
	}
	if res.Connections.Target != 2*clients || res.Connections.Established != 2*clients {
		t.Errorf("connections %d of %d, want %d", res.Connections.Established, res.Connections.Target, 2*clients)
	}
	if earliest := minTime(minTime(shards[0].FirstPublishAt, shards[1].FirstPublishAt), shards[2].FirstPublishAt); !res.FirstPublishAt.Equal(earliest) || res.Start == nil || res.Shard != nil {
		t.Errorf("merged first_publish_at %v (want %v), start %+v, shard %v", res.FirstPublishAt, earliest, res.Start, res.Shard)
	}

	// Not the distinct shards of the run: one missing, one twice.
	if _, err := merged(t, files[0], files[1]); !errors.Is(err, fail.ErrUsage) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("merge of shards 0 and 1 of 3: %v, want %v naming the missing shard", err, fail.ErrUsage)
	}
	dup := filepath.Join(dir, "copy-of-1.json")
	b, _ := os.ReadFile(files[1])
	if err := os.WriteFile(dup, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := merged(t, files[0], files[1], dup, files[2]); !errors.Is(err, fail.ErrUsage) || !strings.Contains(err.Error(), "both are shard 1/3") {
		t.Errorf("merge with shard 1 twice: %v, want %v", err, fail.ErrUsage)
	}
}

// TestStartAtLate: a shard whose start_at has passed when it is ready starts at once,
// says so and records how late.
func TestStartAtLate(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	out := filepath.Join(t.TempDir(), "late.json")
	sp := quick("quick-p2p-100", m.Addr, "parameters.warmup_sec=0")
	sp.StartAt = time.Now().UTC().Format(time.RFC3339Nano) // passed before the first connection
	sp.Duration = spec.Duration(time.Second)
	run := goShard(t, 1, 2, out, sp).wait()
	if run.err != nil {
		t.Fatalf("%v\n%s", run.err, run.stderr)
	}
	r := readResult(t, out)
	if r.Start == nil || r.Start.LateMS <= 0 || !r.Start.ReadyAt.After(r.Start.At) {
		t.Fatalf("start %+v, want late_ms > 0", r.Start)
	}
	if r.Messages.Published == 0 || r.FirstPublishAt.Before(r.Start.ReadyAt) {
		t.Errorf("published %d, first at %v (ready at %v): a late shard still publishes", r.Messages.Published,
			r.FirstPublishAt, r.Start.ReadyAt)
	}
	if !strings.Contains(run.stderr, "late") {
		t.Errorf("stderr does not say it started late:\n%s", run.stderr)
	}
	if r.Shard == nil || *r.Shard != (result.ShardInfo{Index: 1, Count: 2}) {
		t.Errorf("shard %v, want 1/2 from the environment", r.Shard)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TestQuickVerbShardAndStartAt: the quick verbs' runs take shard and start_at as any run
// does. Two shards of a Connections run of 20 clients against Mosquitto each hold their
// half; a pub run with start_at two seconds ahead publishes no sooner, and its result
// records the start.
func TestQuickVerbShardAndStartAt(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for i := range 2 {
		sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", 20, "parameters.connection_rate", 200)...)
		sp.Duration, sp.NoCheck, sp.Procs = spec.Duration(time.Second), true, 1
		sp.Shard, sp.RunID = fmt.Sprintf("%d/2", i), "quick-verb-shards"
		r := doSpec(t, sp)
		if r.err != nil {
			t.Fatalf("conn shard %d/2: %v\n%s", i, r.err, r.stderr)
		}
		if res := r.res; res.Shard == nil || res.Shard.Index != i || res.Shard.Count != 2 || res.Connections.Established != 10 {
			t.Errorf("conn shard %d/2: shard %v, established %d (want 10 of the 20)", i, res.Shard, res.Connections.Established)
		}
	}
	at := time.Now().Add(2 * time.Second).UTC().Truncate(time.Second).Add(time.Second)
	sp := pubSpec(m.Addr, "qv/$clientindex", sets("publishers.client_count", 2, "parameters.publish_rate", 10, "parameters.duration_sec", 2)...)
	sp.NoCheck, sp.Procs, sp.StartAt = true, 1, at.Format(time.RFC3339)
	r := doSpec(t, sp)
	if r.err != nil {
		t.Fatalf("pub start_at: %v\n%s", r.err, r.stderr)
	}
	if res := r.res; res.Start == nil || !res.Start.At.Equal(at) || res.FirstPublishAt.Before(at) || res.Messages.Published == 0 {
		t.Errorf("pub start_at %v: start %+v, first publish %v, published %d", at, res.Start, res.FirstPublishAt, res.Messages.Published)
	}
}
