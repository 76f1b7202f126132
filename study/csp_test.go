package study

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/result"
)

// TestStudyPageCSP opens, in headless Chromium, study.html of an index whose names (study,
// broker, scenario, profile, cell id, status, error, command) carry markup, with a script
// and an inline event handler planted into the page as well: the page's own script runs
// (every box drawn) under its Content-Security-Policy, the markup shows as text, and
// neither it nor the planted script runs. Without a policy the planted script ran.
func TestStudyPageCSP(t *testing.T) {
	const injection = browsertest.Injection
	ix := &Index{Name: injection, ToolVersion: injection, Order: "campaign",
		Brokers: []BrokerRecord{{Name: injection, Type: injection, Address: injection, Start: injection, Restart: injection}}}
	results := map[string]*result.Result{}
	for i, b := range []string{injection, "mosquitto"} {
		id := []string{"c0001", "c0002"}[i]
		ix.Cells = append(ix.Cells, &CellRecord{ID: id, Seq: i + 1, Broker: b, Scenario: injection, Profile: injection,
			Params: []KV{{Path: injection, Value: injection}}, Repetition: 1, Status: StatusOK, Error: injection, Reproduce: injection})
		h := result.NewHist()
		for us := int64(100); us < 5000; us += 100 {
			h.Record(us * int64(i+1))
		}
		results[id] = &result.Result{Histograms: result.Histograms{Latency: h}, Throughput: result.Throughput{ReceivePerS: 1000}}
	}
	page := renderHTML(ix, results)
	if strings.Contains(page, `<script>window.pwned`) || strings.Contains(page, `onerror="window.pwned`) {
		t.Fatalf("the index's markup is in the page unescaped")
	}
	page = strings.Replace(page, "</body>", browsertest.Planted+"</body>", 1)
	file := filepath.Join(t.TempDir(), "study.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	pg := browsertest.Open(t, file, `document.body.hasAttribute("data-boxes-drawn")`)
	expected := browsertest.Eval[string](pg, `document.body.dataset.boxesExpected`)
	if drawn := browsertest.Eval[string](pg, `document.body.dataset.boxesDrawn`); expected != "2" || drawn != "2" {
		t.Errorf("boxes: %s expected, %s drawn; want 2", expected, drawn)
	}
	if h1 := browsertest.Eval[string](pg, `document.querySelector("h1").textContent`); h1 != "Study "+injection {
		t.Errorf("the title reads %q, want the study's name as text", h1)
	}
	pg.CheckPlanted()
}
