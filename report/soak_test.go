package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestSoakOutputs: a soak's verdict, figures and rule in the summary's SOAK lines, one line
// per window, and the HTML report's Soak panel (the verdict, its charts, the windows'
// table); without the broker's RSS, the lines say it was not watched and there is no RSS
// chart.
func TestSoakOutputs(t *testing.T) {
	t.Parallel()
	s := &result.Soak{FromS: 10, ToS: 130, WindowS: 60, Rate: 41800, BrokerRSS: "process", BrokerRSSSlopeBytesPerH: 180 << 20,
		LatencyP99SlopeUSPerH: 38000, Verdict: "degraded after 1 min: p99 3.0ms → 41.0ms; broker RSS +180 MiB/h", DegradedAfterS: 60,
		Reasons: []string{"latency: the p99 of windows 2 and 3"},
		Windows: []result.SoakWindow{
			{FromS: 10, ToS: 70, LatencyUS: result.Percentiles{Count: 5, P50: 900, P99: 3000, Max: 4000}, Expected: 100, Received: 100, BrokerRSSBytes: 9 << 20},
			{FromS: 70, ToS: 130, LatencyUS: result.Percentiles{Count: 5, P50: 900, P99: 41000, Max: 50000}, Expected: 100, Received: 97, Lost: 3,
				Dropped: 2, BrokerRSSBytes: 15 << 20, BrokerCPUPercent: 40},
		}}
	r := &result.Result{Schema: result.Schema, Soak: s}
	var b bytes.Buffer
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{"SOAK", s.Verdict, "hold: 41,800 msg/s, the search's answer, for 2 min, in 2 windows of 60 s",
		"broker RSS +180 MiB/h (from its process)", "p99 +38.0ms/h", "rule: " + result.SoakRule, "latency: the p99 of windows 2 and 3",
		"1:00–2:00: p50 900µs, p99 41.0ms, max 50.0ms, lost 3 of 100, refusals 2, broker RSS 15.0 MiB, CPU 40%"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	p := soakPanel(r)
	if len(p.Charts) != 3 || p.Charts[2].ID != "soak_rss" || len(p.Tables[0].Rows) != 2 || p.Lists[0].Items[0] != s.Verdict {
		t.Errorf("panel: %d charts, %d rows, verdict %q", len(p.Charts), len(p.Tables[0].Rows), p.Lists[0].Items[0])
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, r, "soak.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), `id="soak"`) || !strings.Contains(h.String(), "the broker&#39;s RSS grows more than 16 MiB/h") {
		t.Errorf("the HTML report has no Soak panel with its rule")
	}
	s.BrokerRSS = ""
	if p := soakPanel(r); len(p.Charts) != 2 || !strings.Contains(strings.Join(p.Lists[0].Items, "\n"), "broker RSS: not watched") {
		t.Errorf("without the broker's RSS: %d charts, %q", len(p.Charts), p.Lists[0].Items)
	}
}
