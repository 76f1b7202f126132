package bench

import (
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
)

// TestRecorderFirstPublish: the earliest write time of any loop reaches the snapshot, and
// stays there across Takes (a later interval does not lose it).
func TestRecorderFirstPublish(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(2)
	s := result.NewSnapshot()
	rec.Take(0, s)
	if s.FirstPublish != 0 {
		t.Fatalf("first publish %d before any publish, want 0", s.FirstPublish)
	}
	rec.Published(0, 1, 1, 0, 500, 300, 0)
	rec.Published(1, 2, 1, 0, 500, 200, 0)
	rec.Published(0, 1, 1, 0, 500, 400, 0)
	for i := range 2 {
		rec.Take(i, s)
	}
	if s.FirstPublish != 200 {
		t.Fatalf("first publish %d, want 200", s.FirstPublish)
	}
	next := result.NewSnapshot()
	rec.Published(1, 2, 1, 0, 900, 900, 0)
	for i := range 2 {
		rec.Take(i, next)
	}
	if next.FirstPublish != 200 {
		t.Fatalf("first publish %d in a later interval, want 200", next.FirstPublish)
	}
	r := &result.Result{}
	r.SetTotal(s)
	if want := time.Unix(0, 200).UTC(); !r.FirstPublishAt.Equal(want) {
		t.Fatalf("first_publish_at %v, want %v", r.FirstPublishAt, want)
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
