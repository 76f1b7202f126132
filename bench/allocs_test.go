//go:build !race

package bench

import (
	"testing"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/scenario"
)

// TestRecorderAllocs: the per-message recorder calls allocate nothing once a stream is known
// and its histograms exist.
func TestRecorderAllocs(t *testing.T) {
	rec := NewRecorder(1)
	now := time.Now().UnixNano()
	rec.SetWindow(now-int64(time.Hour), now+int64(time.Hour))
	m := reactor.Message{Due: now, Sent: now + 1000, Now: now + 50_000, Publisher: 7}
	rec.Received(0, 3, m)                  // first message of the stream: its map entry
	rec.Published(0, 7, 1, 0, now, now, 0) // and the histograms
	if n := testing.AllocsPerRun(1000, func() {
		m.Seq++
		rec.Received(0, 3, m)
		rec.Published(0, 7, 1, 0, now, now, time.Microsecond)
		rec.Acked(0, 7)
	}); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
}

// TestRecorderGroupsAllocs: with per-group figures (a mixed run) the per-message calls
// (AllocsPerRun calls once more than asked, and the warm-up once before: 1002 events)
// still allocate nothing: the groups are found by table, their snapshots exist.
func TestRecorderGroupsAllocs(t *testing.T) {
	rec := NewRecorder(1)
	rec.SetGroups(3, scenario.RunsOf([]uint8{0, 1, 2, 2, 1, 0, 0, 1}), scenario.RunsOf([]uint8{0, 0, 1, 1, 2, 2, 2, 2}), nil)
	now := time.Now().UnixNano()
	rec.SetWindow(now-int64(time.Hour), now+int64(time.Hour))
	m := reactor.Message{Due: now, Sent: now + 1000, Now: now + 50_000, Publisher: 7}
	rec.Received(0, 3, m)
	rec.Published(0, 7, 1, 0, now, now, 0)
	rec.Connected(0, 5, time.Millisecond)
	rec.Reconnected(0, 3, 1, time.Millisecond) // the copies to client 3 now look up its return
	if n := testing.AllocsPerRun(1000, func() {
		m.Seq++
		rec.Received(0, 3, m)
		rec.Published(0, 7, 1, 0, now, now, time.Microsecond)
		rec.Acked(0, 7)
		rec.Connected(0, 5, time.Millisecond)
	}); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
	var got = rec.loops[0].snap
	if g := got.Groups[2]; g.Received != 1002 || g.Latency.Count() != 1002 {
		t.Errorf("publisher 7's group: received %d, latency count %d", g.Received, g.Latency.Count())
	}
	if got.Groups[2].Delivered != 1002 || got.Groups[1].Published != 1002 || got.Groups[0].Connected != 1002 {
		t.Errorf("groups: delivered %d published %d connected %d", got.Groups[2].Delivered, got.Groups[1].Published, got.Groups[0].Connected)
	}
}
