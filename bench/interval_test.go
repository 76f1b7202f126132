package bench

import (
	"encoding/json"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// TestIntervalFields runs P2P against Mosquitto: every interval carries its own histograms
// (whose counts are its percentiles' counts and add up to the run's), raw latency beside
// corrected, the client's schedule lag, and the client's CPU and RSS; they survive the result's JSON form.
func TestIntervalFields(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	res := runScenario(t, m.Addr, "quick-p2p-100", map[string]string{
		"parameters.duration_sec": "2s", "parameters.warmup_sec": "500ms", "parameters.publish_rate": "20", "parameters.payload_size": "64"})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back result.Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var lat, raw, conn, lag int64
	var cpu float64
	for i, iv := range back.Intervals {
		h := iv.Histograms
		if h == nil {
			t.Fatalf("interval %d has no histograms", i)
		}
		if h.Latency.Count() != iv.LatencyUS.Count || h.LatencyRaw.Count() != iv.LatencyRawUS.Count ||
			h.ConnectLatency.Count() != iv.ConnectLatencyUS.Count {
			t.Errorf("interval %d: histogram counts %d/%d/%d, percentiles %d/%d/%d", i, h.Latency.Count(),
				h.LatencyRaw.Count(), h.ConnectLatency.Count(), iv.LatencyUS.Count, iv.LatencyRawUS.Count, iv.ConnectLatencyUS.Count)
		}
		if h.ScheduleLag.Count() != iv.ScheduleLagUS.Count {
			t.Errorf("interval %d: schedule lag histogram %d, percentiles %d", i, h.ScheduleLag.Count(), iv.ScheduleLagUS.Count)
		}
		lag += h.ScheduleLag.Count()
		lat += h.Latency.Count()
		raw += h.LatencyRaw.Count()
		conn += h.ConnectLatency.Count()
		cpu += iv.ClientCPUPercent
		if iv.ClientRSSBytes < 1<<20 || iv.ClientCPUPercent < 0 || iv.ClientCPUPercent > 100*float64(res.Host.Cores)*1.5 {
			t.Errorf("interval %d: client cpu %.1f%% rss %d", i, iv.ClientCPUPercent, iv.ClientRSSBytes)
		}
	}
	// The intervals, the last partial one included, add up to the run.
	if lat != res.LatencyUS.Count || raw != res.LatencyRaw.Count || conn != res.Connections.ConnectLatencyUS.Count {
		t.Errorf("intervals' latency %d (run %d), raw %d, connect %d (run %d)", lat, res.LatencyUS.Count, raw, conn, res.Connections.ConnectLatencyUS.Count)
	}
	if lag == 0 || lag != res.Client.ScheduleLagUS.Count {
		t.Errorf("intervals' schedule lag %d, the run's %d", lag, res.Client.ScheduleLagUS.Count)
	}
	if cpu == 0 {
		t.Error("no interval measured the client's CPU")
	}
}
