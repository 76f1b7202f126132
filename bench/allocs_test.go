//go:build !race

package bench

import (
	"testing"
	"time"

	"github.com/mqblast/mqblast/reactor"
)

// TestRecorderAllocs: the per-message recorder calls allocate nothing once a stream is known
// and its histograms exist.
func TestRecorderAllocs(t *testing.T) {
	rec := NewRecorder(1)
	now := time.Now().UnixNano()
	rec.SetWindow(now-int64(time.Hour), now+int64(time.Hour))
	m := reactor.Message{Due: now, Sent: now + 1000, Now: now + 50_000, Publisher: 7}
	rec.Received(0, 3, m)               // first message of the stream: its map entry
	rec.Published(0, 7, 1, now, now, 0) // and the histograms' counts
	if n := testing.AllocsPerRun(1000, func() {
		m.Seq++
		rec.Received(0, 3, m)
		rec.Published(0, 7, 1, now, now, time.Microsecond)
		rec.Acked(0, 7)
	}); n != 0 {
		t.Fatalf("%v allocations per message", n)
	}
}
