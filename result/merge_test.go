package result

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestMergeIsExact: merging the results of shards gives the percentiles of one histogram of
// all the values, not an average of the shards' percentiles.
func TestMergeIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := NewHist()
	var shards []*Result
	for s := 0; s < 3; s++ {
		snap := NewSnapshot()
		n := 1000 * (s + 1)
		for i := 0; i < n; i++ {
			v := int64(r.ExpFloat64() * float64(100*(s+1)*(s+1)))
			snap.ConnectLatency.Record(v)
			all.Record(v)
		}
		snap.Connected = int64(n)
		snap.Failed["refused"] = int64(s)
		res := &Result{Connections: Connections{Target: n + s}, Host: HostInfo{Procs: 1},
			Client: ClientInfo{CPUS: 1, RSSPerConnectionBytes: float64(100 * (s + 1))}}
		res.SetTotal(snap)
		shards = append(shards, res)
	}
	m := Merge(shards)
	c := m.Connections
	if c.Established != 6000 || c.Target != 6003 || c.FailedBy["refused"] != 3 || m.Host.Procs != 3 {
		t.Fatalf("merged counts: established %d target %d failed %v procs %d", c.Established, c.Target, c.FailedBy, m.Host.Procs)
	}
	if got, want := c.ConnectLatencyUS, all.Summary(); got != want {
		t.Fatalf("merged percentiles %+v, want those of all values %+v", got, want)
	}
	// RSS per connection is weighted by connections: (100*1000+200*2000+300*3000)/6000.
	if got := m.Client.RSSPerConnectionBytes; got < 233.3 || got > 233.4 {
		t.Errorf("rss per connection %v, want 233.33", got)
	}
	if m.Client.CPUS != 3 {
		t.Errorf("cpu %v, want the sum 3", m.Client.CPUS)
	}
	if len(shards[0].Errors) != 1 || shards[0].Errors[0].Count != 0 {
		t.Errorf("Merge changed its input's errors: %+v", shards[0].Errors)
	}
}

// TestMergeAccounts: merged shards add every accounting figure, so the identities hold for
// the whole run.
func TestMergeAccounts(t *testing.T) {
	var shards []*Result
	for i := range 3 {
		s := NewSnapshot()
		s.Scheduled, s.Published = int64(100+i), int64(90+i)
		s.Unsent["disconnected"] = 10
		s.Expected, s.Received, s.InFlightAtEnd, s.InFlightLost = 90, 80, 4, 1
		s.Unexpected["stale"] = int64(i)
		s.Holds["disconnected"], s.HeldUS["disconnected"], s.HeldPublishers = 1, 1500000, 1
		r := &Result{}
		r.SetTotal(s)
		shards = append(shards, r)
	}
	m := Merge(shards)
	msg := m.Messages
	if msg.Scheduled != 303 || msg.Published+msg.UnsentTotal != 303 || msg.Unsent["disconnected"] != 30 {
		t.Errorf("scheduled %d, published %d, unsent %v", msg.Scheduled, msg.Published, msg.Unsent)
	}
	if msg.Lost != 15 || msg.InFlightAtEnd != 12 || msg.InFlightLost != 3 || msg.UnexpectedTotal != 3 {
		t.Errorf("lost %d, in flight %d/%d, unexpected %v", msg.Lost, msg.InFlightAtEnd, msg.InFlightLost, msg.Unexpected)
	}
	if b := m.BrokerStalled; !b.Stalled || b.Publishers != 3 || b.HeldS["disconnected"] != 4.5 {
		t.Errorf("broker_stalled %+v", b)
	}
}

// TestMergeStartAndClock: the merged result has the earliest shard's first publish, the
// latest shard's readiness and lateness, and the worse clock.
func TestMergeStartAndClock(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	shard := func(i int, first time.Duration, late int64, c Clock) *Result {
		return &Result{Schema: Schema, Shard: &ShardInfo{Index: i, Count: 3},
			FirstPublishAt: at.Add(first), Host: HostInfo{Clock: &c},
			Start: &StartInfo{At: at, ReadyAt: at.Add(time.Duration(late) * time.Millisecond), LateMS: late}}
	}
	m := Merge([]*Result{
		shard(0, 3*time.Millisecond, 0, Clock{MaxErrorUS: 10, EstErrorUS: 1, Synchronized: true}),
		shard(1, 1*time.Millisecond, 0, Clock{MaxErrorUS: 500, EstErrorUS: 20, Synchronized: true}),
		shard(2, 40*time.Millisecond, 35, Clock{MaxErrorUS: 16000000, EstErrorUS: 16000000}),
	})
	if want := at.Add(time.Millisecond); !m.FirstPublishAt.Equal(want) {
		t.Errorf("first_publish_at %v, want %v", m.FirstPublishAt, want)
	}
	if m.Start == nil || !m.Start.At.Equal(at) || m.Start.LateMS != 35 || !m.Start.ReadyAt.Equal(at.Add(35*time.Millisecond)) {
		t.Errorf("start %+v, want at %v, late 35 ms", m.Start, at)
	}
	if c := m.Host.Clock; c == nil || c.MaxErrorUS != 16000000 || c.EstErrorUS != 16000000 || c.Synchronized {
		t.Errorf("clock %+v, want the unsynchronised one", c)
	}
}
