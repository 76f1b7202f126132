package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/result"
)

// drawn is what the page's script recorded for one chart (window.mqblast.charts[id]).
type drawn struct {
	Drawn   bool  `json:"drawn"`
	Points  int   `json:"points"`
	Series  int   `json:"series"`
	Canvas  bool  `json:"canvas"`
	Painted []int `json:"painted"`
	Width   int   `json:"width"`
}

// checkPage opens the page in headless Chromium with the network off and checks that it
// logged no error, requested nothing, drew every chart of p with all its points, said
// "no data" for every empty chart, and drew the boxplots; then the same in the dark theme
// and for print. It keeps a screenshot as an artifact (and one of the dark theme when
// darkShot) and returns its path.
func checkPage(t *testing.T, b *browsertest.Browser, file string, p *Page, shot string, darkShot bool) string {
	t.Helper()
	pg := b.Open(t, file, "window.mqblast && window.mqblast.ready")
	check := func(when string, width int) {
		t.Helper()
		got := browsertest.Eval[map[string]drawn](pg, "window.mqblast.charts")
		empty := 0
		for _, c := range p.Charts() {
			if c.Empty != "" {
				empty++
				if _, ok := got[c.ID]; ok {
					t.Errorf("%s: chart %s is empty (%s) but was drawn", when, c.ID, c.Empty)
				}
				continue
			}
			d, ok := got[c.ID]
			switch {
			case !ok || !d.Drawn || !d.Canvas:
				t.Errorf("%s: chart %s (%d points) not drawn: %+v", when, c.ID, c.Points(), d)
			case d.Points != c.Points() || d.Series != len(c.Series):
				t.Errorf("%s: chart %s drew %d points in %d series, want %d in %d", when, c.ID, d.Points, d.Series, c.Points(), len(c.Series))
			case width > 0 && d.Width != width:
				t.Errorf("%s: chart %s is %d px wide, want %d", when, c.ID, d.Width, width)
			}
			for i, s := range c.Series {
				if i >= len(d.Painted) || d.Painted[i] == 0 {
					t.Errorf("%s: chart %s: series %q painted no pixel in its colour %s (%v)", when, c.ID, s.Label, s.Color, d.Painted)
				}
			}
		}
		if n := browsertest.Eval[int](pg, `document.querySelectorAll(".chart .empty").length`); n != empty {
			t.Errorf("%s: %d charts say they have no data, want %d", when, n, empty)
		}
		wantBoxes := 0
		for _, pn := range p.Panels {
			for _, s := range pn.SVG {
				var n int
				_, _ = fmt.Sscanf(s[len(`<svg xmlns="http://www.w3.org/2000/svg" class="mqb-boxplot" data-boxes="`):], "%d", &n)
				wantBoxes += n
			}
		}
		if n := browsertest.Eval[int](pg, `document.querySelectorAll("svg.mqb-boxplot rect.box").length`); n != wantBoxes {
			t.Errorf("%s: %d boxes drawn, want %d", when, n, wantBoxes)
		}
		if errs := pg.Errors(); len(errs) > 0 {
			t.Errorf("%s: console errors: %q", when, errs)
		}
		if reqs := pg.Requests(); len(reqs) > 0 {
			t.Errorf("%s: the page requested %q; it must request nothing", when, reqs)
		}
	}
	check("light theme", 0)
	light := browsertest.Eval[string](pg, `getComputedStyle(document.body).backgroundColor`)
	path := pg.Screenshot(shot)
	t.Logf("screenshot: %s", path)

	browsertest.Eval[bool](pg, `window.mqblast.ready = false`)
	err := pg.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		return err
	}))
	if err != nil {
		t.Fatalf("emulate the dark theme: %v", err)
	}
	pg.Wait("window.mqblast.ready")
	if dark := browsertest.Eval[string](pg, `getComputedStyle(document.body).backgroundColor`); dark == light {
		t.Errorf("the dark theme has the light theme's background %s", light)
	}
	check("dark theme", 0)
	if darkShot {
		pg.Screenshot("dark-" + shot)
	}

	err = pg.Do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"})
		return err
	}))
	if err != nil {
		t.Fatalf("emulate print: %v", err)
	}
	browsertest.Eval[bool](pg, `window.dispatchEvent(new Event("beforeprint")), true`)
	time.Sleep(300 * time.Millisecond) // past the resize handler's 150 ms debounce
	check("print", 680)
	if darkShot {
		pg.Screenshot("print-" + shot)
	}
	return path
}

// TestBrowser opens reports of real runs (testdata) and a comparison page in headless
// Chromium: see checkPage.
func TestBrowser(t *testing.T) {
	b := browsertest.Start(t)
	results := map[string]*result.Result{"empty": {Schema: result.Schema}}
	for _, name := range []string{"p2p.json", "conn.json", "roundtrip.json", "brokerhost.json", "limit.json"} {
		results[strings.TrimSuffix(name, ".json")] = load(t, name)
	}
	for _, name := range []string{"p2p", "conn", "roundtrip", "empty", "brokerhost", "limit"} {
		t.Run(name, func(t *testing.T) {
			r := results[name]
			file := filepath.Join(t.TempDir(), "report.html")
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteHTML(f, r, name); err != nil {
				t.Fatal(err)
			}
			_ = f.Close()
			checkPage(t, b, file, NewReport(r, name), "report-"+name+".png", name == "p2p")
		})
	}
	t.Run("compare", func(t *testing.T) { checkCompare(t, b) })
}

func checkCompare(t *testing.T, b *browsertest.Browser) {
	in := []Input{{"p2p.json", load(t, "p2p.json")}, {"roundtrip.json", load(t, "roundtrip.json")}, {"conn.json", load(t, "conn.json")}}
	file := filepath.Join(t.TempDir(), "compare.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCompareHTML(f, in, "test"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	checkPage(t, b, file, NewCompare(in), "compare.png", true)
}
