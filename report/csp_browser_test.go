package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/browsertest"
)

// TestBrowserCSP opens, in headless Chromium, the report of a document whose broker, tool
// version, scenario name and error example carry markup, with a script and an inline event
// handler planted into the page as well: the page's own scripts run (every chart drawn,
// as checkPage checks), the document's markup shows as text, and neither it nor the
// planted script runs; the browser reports the planted ones as Content-Security-Policy
// violations. Under the old policy (script-src 'unsafe-inline') the planted script ran.
func TestBrowserCSP(t *testing.T) {
	r := load(t, "p2p.json")
	r.Broker = []string{browsertest.Injection}
	r.ToolVersion = browsertest.Injection
	sc, err := json.Marshal(map[string]any{"name": browsertest.Injection, "type": "p2p"})
	if err != nil {
		t.Fatal(err)
	}
	r.Scenario = sc
	if len(r.Errors) > 0 {
		r.Errors[0].Example = browsertest.Injection
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, r, "crafted"); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	if strings.Contains(html, `<script>window.pwned`) || strings.Contains(html, `onerror="window.pwned`) {
		t.Fatalf("the document's markup is in the page unescaped")
	}
	html = strings.Replace(html, "</footer>", "</footer>"+browsertest.Planted, 1)
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	pg := browsertest.Open(t, file, "window.mqblast && window.mqblast.ready")
	if sub := browsertest.Eval[string](pg, `document.querySelector(".sub").textContent`); !strings.Contains(sub, browsertest.Injection) {
		t.Errorf("the subtitle %q does not show the crafted broker as text", sub)
	}
	drawn := browsertest.Eval[map[string]drawn](pg, "window.mqblast.charts")
	for _, c := range NewReport(r, "crafted").Charts() {
		if c.Empty == "" && !drawn[c.ID].Drawn {
			t.Errorf("chart %s not drawn: the page's own scripts must run under the policy", c.ID)
		}
	}
	pg.CheckPlanted()
}
