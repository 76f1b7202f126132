package metrics

import (
	"testing"

	"github.com/mqblast/mqblast/result"
)

// BenchmarkLiveInterval is the cost of one interval's update (three histograms decoded and
// bucketed), paid once a second on the run's interval goroutine, not on the event loops.
func BenchmarkLiveInterval(b *testing.B) {
	b.ReportAllocs()
	s := result.NewSnapshot()
	for i := range int64(50_000) {
		s.Latency.Record(100 + i*37%200_000)
		s.LatencyRaw.Record(90 + i*31%150_000)
		s.ConnectLatency.Record(200 + i%5000)
	}
	l := NewLive(1, 1)
	for b.Loop() {
		if err := l.Interval(result.Interval{TS: 1}, s); err != nil {
			b.Fatal(err)
		}
	}
}
