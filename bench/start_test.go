package bench

import (
	"testing"
	"time"
)

// TestRecorderFirstPublish: the earliest write time of any loop reaches the snapshot, and
// stays there across Takes (a later interval does not lose it).
func TestRecorderFirstPublish(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(2)
	s := NewSnapshot()
	rec.Take(0, s)
	if s.FirstPublish != 0 {
		t.Fatalf("first publish %d before any publish, want 0", s.FirstPublish)
	}
	rec.Published(0, 1, 1, 500, 300, 0)
	rec.Published(1, 2, 1, 500, 200, 0)
	rec.Published(0, 1, 1, 500, 400, 0)
	for i := range 2 {
		rec.Take(i, s)
	}
	if s.FirstPublish != 200 {
		t.Fatalf("first publish %d, want 200", s.FirstPublish)
	}
	next := NewSnapshot()
	rec.Published(1, 2, 1, 900, 900, 0)
	for i := range 2 {
		rec.Take(i, next)
	}
	if next.FirstPublish != 200 {
		t.Fatalf("first publish %d in a later interval, want 200", next.FirstPublish)
	}
	r := &Result{}
	r.fill(s)
	if want := time.Unix(0, 200).UTC(); !r.FirstPublishAt.Equal(want) {
		t.Fatalf("first_publish_at %v, want %v", r.FirstPublishAt, want)
	}
}

// TestMergeStartAndClock: the merged result has the earliest shard's first publish, the
// latest shard's readiness and lateness, and the worse clock.
func TestMergeStartAndClock(t *testing.T) {
	t.Parallel()
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

// TestHostClock: the kernel answers adjtimex here; its bound is not below its estimate.
func TestHostClock(t *testing.T) {
	t.Parallel()
	c := HostClock()
	if c == nil {
		t.Skip("adjtimex is not available")
	}
	if c.MaxErrorUS < 0 || c.EstErrorUS < 0 || (c.Synchronized && c.MaxErrorUS < c.EstErrorUS) {
		t.Fatalf("clock %+v", c)
	}
	t.Logf("clock %+v", c)
}
