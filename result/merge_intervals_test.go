package result

import (
	"testing"
)

// TestMergeIntervalHistograms: merged shards' intervals add their histograms, so their
// percentiles are exact and an interval log of the merged result has every shard's values;
// the shards' own results are left as they were.
func TestMergeIntervalHistograms(t *testing.T) {
	t.Parallel()
	shard := func(from int64, n int) *Result {
		lat, raw, conn, lag := NewHist(), NewHist(), NewHist(), NewHist()
		for i := range n {
			lat.Record(from + int64(i))
			raw.Record(from/2 + int64(i))
			lag.Record(from/10 + int64(i))
		}
		conn.Record(from)
		iv := Interval{TS: 1, Published: int64(n), Received: int64(n), Unsent: 1, ClientCPUPercent: 10, ClientRSSBytes: 100,
			Kernel:    map[string]int64{"OutSegs": 5},
			LatencyUS: lat.Summary(), LatencyRawUS: raw.Summary(), ConnectLatencyUS: conn.Summary(), ScheduleLagUS: lag.Summary(),
			Histograms: &IntervalHistograms{Latency: lat, LatencyRaw: raw, ConnectLatency: conn, ScheduleLag: lag}}
		return &Result{Intervals: []Interval{iv, {TS: 2, Histograms: &IntervalHistograms{}}},
			Histograms: Histograms{Latency: lat, LatencyRaw: raw, ConnectLatency: conn}}
	}
	a, b := shard(1000, 100), shard(5000, 300)
	m := Merge([]*Result{a, b})
	iv := m.Intervals[0]
	if iv.Published != 400 || iv.Unsent != 2 || iv.ClientCPUPercent != 20 || iv.ClientRSSBytes != 200 || iv.Kernel["OutSegs"] != 10 {
		t.Errorf("merged counts: %+v", iv)
	}
	if iv.LatencyUS != m.LatencyUS || iv.LatencyRawUS != m.LatencyRaw || iv.ConnectLatencyUS.Count != 2 {
		t.Errorf("merged interval percentiles %+v %+v, the merged result's %+v %+v", iv.LatencyUS, iv.LatencyRawUS,
			m.LatencyUS, m.LatencyRaw)
	}
	if iv.ScheduleLagUS.Count != 400 || iv.ScheduleLagUS.Max != 5000/10+299 || iv.ScheduleLagUS.P50 < 100 {
		t.Errorf("merged interval schedule lag %+v", iv.ScheduleLagUS)
	}
	if h := iv.Histograms; h.Latency.Count() != 400 || h.LatencyRaw.Count() != 400 || h.ConnectLatency.Count() != 2 {
		t.Errorf("merged interval histograms: %d %d %d", h.Latency.Count(), h.LatencyRaw.Count(), h.ConnectLatency.Count())
	}
	if a.Intervals[0].Histograms.Latency.Count() != 100 || a.Intervals[0].Kernel["OutSegs"] != 5 || a.Intervals[0].LatencyUS.Count != 100 {
		t.Errorf("Merge changed its input: %+v", a.Intervals[0])
	}
	if h := m.Intervals[1].Histograms; h == nil || h.Latency.Count() != 0 {
		t.Errorf("an empty interval: %+v", h)
	}
}
