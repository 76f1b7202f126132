package result

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// soakRun is a run of n one-second intervals of 1000 messages each, the latency of
// interval i lat(i) µs, the broker's RSS rss(i) bytes, lost(i) copies not arrived.
func soakRun(n int, lat func(i int) int64, rss func(i int) int64, lost func(i int) int64) *Result {
	r := &Result{}
	for i := range n {
		h := NewHist()
		for range 1000 {
			h.Record(lat(i))
		}
		r.Intervals = append(r.Intervals, Interval{TS: float64(i + 1), Expected: 1000, Received: 1000 - lost(i),
			Published: 1000, BrokerRSSBytes: rss(i), BrokerCPUPercent: 40, Histograms: &IntervalHistograms{Latency: h}})
	}
	return r
}

func TestSoakVerdicts(t *testing.T) {
	t.Parallel()
	steady := func(int) int64 { return 3000 }
	flat := func(int) int64 { return 8 << 20 }
	none := func(int) int64 { return 0 }
	for _, c := range []struct {
		name        string
		lat, rss    func(i int) int64
		lost        func(i int) int64
		held        bool
		verdict     string // a part of it
		reason      string // a part of a reason
		degradedAfS float64
	}{
		{name: "steady", lat: steady, rss: flat, lost: none, held: true, verdict: "held"},
		{name: "one spike", lat: func(i int) int64 { return map[bool]int64{true: 50000, false: 3000}[i == 25] }, rss: flat, lost: none,
			held: true, verdict: "held"},
		{name: "latency step", lat: func(i int) int64 { return map[bool]int64{true: 41000, false: 3000}[i >= 40] }, rss: flat, lost: none,
			verdict: "degraded after 40 s: p99 3.0ms → 41.0ms", reason: "latency: the p99 of windows 5 and 6", degradedAfS: 40},
		{name: "host noise below the floor", lat: func(i int) int64 { return map[bool]int64{true: 1500, false: 200}[i >= 30 && i < 50] }, rss: flat,
			lost: none, held: true, verdict: "held"},
		{name: "leak", lat: steady, rss: func(i int) int64 { return 8<<20 + int64(i)*100<<10 }, lost: none,
			verdict: "degraded: broker RSS +352 MiB/h", reason: "memory: the broker's RSS grows +352 MiB/h"},
		{name: "small wobble", lat: steady, rss: func(i int) int64 { return 8<<20 + int64(i%3)*4096 }, lost: none, held: true, verdict: "held"},
		{name: "late losses", lat: steady, rss: flat, lost: func(i int) int64 { return map[bool]int64{true: 30, false: 0}[i >= 50] },
			verdict: "degraded after 50 s: 300 lost in window 6", reason: "losses: window 6 lost 300", degradedAfS: 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := NewSoak(soakRun(60, c.lat, c.rss, c.lost), 0, 60, 60, 10, 0)
			if len(s.Windows) != 6 {
				t.Fatalf("%d windows, want 6", len(s.Windows))
			}
			if s.Held != c.held || !strings.Contains(s.Verdict, c.verdict) || s.DegradedAfterS != c.degradedAfS {
				t.Errorf("held %v, verdict %q, after %v s; want %v, %q, %v s", s.Held, s.Verdict, s.DegradedAfterS, c.held, c.verdict, c.degradedAfS)
			}
			if c.reason != "" && !strings.Contains(strings.Join(s.Reasons, "\n"), c.reason) {
				t.Errorf("reasons %q, want one with %q", s.Reasons, c.reason)
			}
			if s.BrokerRSS != "process" {
				t.Errorf("broker_rss %q, want process", s.BrokerRSS)
			}
		})
	}
}

func TestSoakSlopes(t *testing.T) {
	t.Parallel()
	// p99 rises 10 µs a second: 36,000 µs an hour; RSS 1 KiB a second: 3.5 MiB an hour.
	s := NewSoak(soakRun(120, func(i int) int64 { return 1000 + 10*int64(i) }, func(i int) int64 { return 8<<20 + int64(i)<<10 }, func(int) int64 { return 0 }),
		0, 120, 120, 10, 500)
	within := func(name string, got, want float64) {
		if got < 0.97*want || got > 1.03*want {
			t.Errorf("%s %.0f, want %.0f ± 3 %%", name, got, want)
		}
	}
	within("p99 slope", s.LatencyP99SlopeUSPerH, 36000)
	within("RSS slope", s.BrokerRSSSlopeBytesPerH, 3600<<10)
	if !s.Held { // 3.5 MiB/h is below the memory rule's 16 MiB/h
		t.Errorf("verdict %q, want held", s.Verdict)
	}
	if s.Rate != 500 || s.WindowS != 10 {
		t.Errorf("rate %v window %v", s.Rate, s.WindowS)
	}
}

// TestSoakBrokerMetrics: without the broker's pid, its RSS and CPU come from its host's
// endpoints (the process-exporter's figures in the intervals); without either, the memory
// rule cannot fire and the soak says the RSS was not watched.
func TestSoakBrokerMetrics(t *testing.T) {
	t.Parallel()
	r := soakRun(60, func(int) int64 { return 3000 }, func(int) int64 { return 0 }, func(int) int64 { return 0 })
	for i := range r.Intervals {
		r.Intervals[i].BrokerCPUPercent = 0
		r.Intervals[i].BrokerHost = &IntervalBrokerHost{HasProcess: true, ProcessRSSBytes: float64(100<<20 + i*200<<10), ProcessCPUPercent: 30}
	}
	s := NewSoak(r, 0, 60, 60, 10, 0)
	if s.BrokerRSS != "broker_metrics" || s.Windows[0].BrokerCPUPercent != 30 || s.Held || !strings.Contains(s.Verdict, "broker RSS +703 MiB/h") {
		t.Errorf("broker_rss %q, cpu %v, verdict %q: want the endpoints' figures, degraded by memory", s.BrokerRSS, s.Windows[0].BrokerCPUPercent, s.Verdict)
	}
	if s := NewSoak(r, 0, 20, 20, 10, 0); !s.Held || s.BrokerRSSSlopeBytesPerH <= SoakRSSSlopeBytesPerH {
		t.Errorf("two windows: verdict %q, slope %v: want the slope, held (too few windows to judge it without the first)", s.Verdict, s.BrokerRSSSlopeBytesPerH)
	}
	for i := range r.Intervals {
		r.Intervals[i].BrokerHost = nil
	}
	if s := NewSoak(r, 0, 60, 60, 10, 0); s.BrokerRSS != "" || !s.Held || s.BrokerRSSSlopeBytesPerH != 0 {
		t.Errorf("broker_rss %q, verdict %q, slope %v: want not watched, held", s.BrokerRSS, s.Verdict, s.BrokerRSSSlopeBytesPerH)
	}
}

// TestSoakChecked: a document's soak windows are checked as counts and percentiles.
func TestSoakChecked(t *testing.T) {
	t.Parallel()
	doc := `{"soak": {"window_s": 4, "windows": [{"expected": 10, "received": 12, "lost": -2, "latency_us": {"p50": 9, "p99": 5, "max": 9}}]}}`
	err := CheckDocument([]byte(doc))
	if err == nil || !strings.Contains(err.Error(), "soak.windows[0].lost") || !strings.Contains(err.Error(), "soak.windows[0].latency_us") {
		t.Errorf("%v, want the negative loss and the percentiles out of order named", err)
	}
}

// TestSoakRuleDocumented: docs/limit.md and docs/outputs.md state the rule for "degraded" in
// the words the outputs print.
func TestSoakRuleDocumented(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"limit.md", "outputs.md"} {
		b, err := os.ReadFile(filepath.Join("..", "docs", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "> "+SoakRule+".") {
			t.Errorf("docs/%s does not quote the rule as the outputs print it:\n%s", f, SoakRule)
		}
	}
}

// TestSoakWindowCount: a rest of half a window or more is a window of its own, also when
// the span's subtraction lost an ulp (the hold's ends are times into the run).
func TestSoakWindowCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to, window float64
		want             int
	}{
		{1.375512394, 8.375512394, 2, 4}, // 6.999999999999999 s: 3 whole windows and half of one
		{0, 7, 2, 4}, {0, 6.9, 2, 3}, {0, 6, 2, 3}, {0, 0.5, 2, 1}, {0, 0, 2, 1}, {0, 3600, 60, 60},
	} {
		if got := SoakWindowCount(c.to-c.from, c.window); got != c.want {
			t.Errorf("%v to %v in windows of %v: %d windows, want %d", c.from, c.to, c.window, got, c.want)
		}
	}
}
