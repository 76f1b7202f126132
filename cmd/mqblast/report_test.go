package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/testbroker"
	rpt "github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// TestCompareMosquittoAndEmbedded runs one scenario against Mosquitto and against the
// embedded broker (run --html writes the first one's report, checked in Chromium), then
// compares the two results: one column each, labelled by broker and scenario, the figures
// of each result document, no scenario warning; and with a warning that names the
// parameter when one result's scenario differs.
func TestCompareMosquittoAndEmbedded(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	short := []string{"--duration", "1500ms", "--set", "parameters.warmup_sec=500ms", "--set", "parameters.drain_sec=500ms"}
	a, b := filepath.Join(dir, "mosquitto.json"), filepath.Join(dir, "embedded.json")
	html := filepath.Join(dir, "mosquitto.html")
	r := runBin(t, append([]string{"run", "quick-p2p-100", "--broker", m.Addr, "--out", a, "--html", html}, short...)...)
	if r.code != 0 {
		t.Fatalf("mosquitto run: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "report written to "+html) {
		t.Errorf("run --html does not say where the report is:\n%s", r.stderr)
	}
	if r := runBin(t, append([]string{"run", "quick-p2p-100", "--out", b}, short...)...); r.code != 0 {
		t.Fatalf("embedded run: exit %d\n%s", r.code, r.stderr)
	}
	ra, err := result.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := result.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}

	cmpHTML := filepath.Join(dir, "compare.html")
	c := runBin(t, "compare", a, b, "--html", cmpHTML)
	if c.code != 0 {
		t.Fatalf("compare: exit %d\n%s", c.code, c.stderr)
	}
	if strings.Contains(c.stdout, "WARNING") {
		t.Errorf("one scenario, yet a warning:\n%s", c.stdout)
	}
	lines := strings.Split(c.stdout, "\n")
	la, lb := ra.Broker[0]+" quick-p2p-100", rb.Broker[0]+" quick-p2p-100"
	if !strings.Contains(lines[0], la) || !strings.Contains(lines[0], lb) || la == lb {
		t.Errorf("header %q: want the columns %q and %q", lines[0], la, lb)
	}
	row := func(name string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); strings.HasPrefix(l, "  "+name+" ") || len(f) > 0 && strings.Join(f[:len(f)-2], " ") == name {
				return f[len(f)-2:]
			}
		}
		t.Fatalf("no row %q in\n%s", name, c.stdout)
		return nil
	}
	strip := func(s string) string { return strings.TrimSuffix(s, "*") }
	for name, want := range map[string][2]string{
		"received msg/s": {fmt.Sprintf("%.0f/s", ra.Throughput.ReceivePerS), fmt.Sprintf("%.0f/s", rb.Throughput.ReceivePerS)},
		"latency p99":    {rpt.FormatUS(ra.LatencyUS.P99), rpt.FormatUS(rb.LatencyUS.P99)},
		"lost":           {fmt.Sprint(ra.Messages.Lost), fmt.Sprint(rb.Messages.Lost)},
		"connections":    {fmt.Sprint(ra.Connections.Established), fmt.Sprint(rb.Connections.Established)},
	} {
		got := row(name)
		if strip(got[0]) != want[0] || strip(got[1]) != want[1] {
			t.Errorf("row %s: %q, want %q", name, got, want)
		}
	}
	// The lower p99 is marked, unless both show the same.
	p99 := row("latency p99")
	if wa, wb := rpt.FormatUS(ra.LatencyUS.P99), rpt.FormatUS(rb.LatencyUS.P99); wa != wb {
		best := 0
		if rb.LatencyUS.P99 < ra.LatencyUS.P99 {
			best = 1
		}
		if !strings.HasSuffix(p99[best], "*") || strings.HasSuffix(p99[1-best], "*") {
			t.Errorf("latency p99 %q: want the lower one marked *", p99)
		}
	}
	if st, err := os.Stat(cmpHTML); err != nil || st.Size() < 50_000 {
		t.Errorf("compare --html: %v", err)
	}

	// A result of other parameters: compared, with a warning naming them.
	var doc map[string]any
	raw, _ := os.ReadFile(b)
	_ = json.Unmarshal(raw, &doc)
	doc["scenario"].(map[string]any)["parameters"].(map[string]any)["publish_rate"] = 20
	other := filepath.Join(dir, "other.json")
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(other, out, 0o644); err != nil {
		t.Fatal(err)
	}
	w := runBin(t, "compare", a, other)
	if w.code != 0 || !strings.Contains(w.stdout, "WARNING") || !strings.Contains(w.stdout, "parameters.publish_rate 10 vs 20") {
		t.Errorf("compare of other parameters: exit %d, want a warning naming parameters.publish_rate:\n%s", w.code, w.stdout)
	}

	// The run's own HTML report, as a browser shows it: no error, nothing requested, every
	// chart drawn.
	p := browsertest.Open(t, html, "window.mqblast && window.mqblast.ready")
	if n, want := browsertest.Eval[int](p, "Object.keys(window.mqblast.charts).length"), browsertest.Eval[int](p, "window.mqblast.expected"); n != want || n < 8 {
		t.Errorf("%d charts drawn, want %d (at least 8)", n, want)
	}
	if errs, reqs := p.Errors(), p.Requests(); len(errs)+len(reqs) > 0 {
		t.Errorf("console errors %q, requests %q", errs, reqs)
	}
	t.Logf("screenshot: %s", p.Screenshot("run-mosquitto.png"))
}

// TestRunHTMLInterrupted: Ctrl-C writes the partial result's HTML report too.
func TestRunHTMLInterrupted(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	html := filepath.Join(t.TempDir(), "r.html")
	_, stderr := interruptedRun(t, 1500*time.Millisecond, "run", "quick-conn-100", "--broker", m.Addr, "--duration", "60s", "--html", html)
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatalf("no HTML report of the interrupted run: %v\n%s", err, stderr)
	}
	if !strings.Contains(string(b), "interrupted: partial result") || !strings.Contains(stderr, "report written to") {
		t.Errorf("the report does not say the run was interrupted, or the run did not say where it is:\n%s", stderr)
	}
}

// TestReportCommand: report without --html prints the run's summary; a file that is not a
// result document is refused with its name.
func TestReportCommand(t *testing.T) {
	t.Parallel()
	src := filepath.Join("..", "..", "report", "testdata", "p2p.json")
	r := runBin(t, "report", src)
	if r.code != 0 || !strings.Contains(r.stdout, "6004 expected: 6004 received, 0 lost") {
		t.Errorf("report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	html := filepath.Join(t.TempDir(), "p2p.html")
	if r := runBin(t, "report", src, "--html", html); r.code != 0 || !strings.Contains(r.stderr, "report written to "+html) {
		t.Errorf("report --html: exit %d\n%s", r.code, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"schema":"other/v9"}`), 0o644)
	if r := runBin(t, "report", bad); r.code == 0 || !strings.Contains(r.stderr, bad+`: schema "other/v9"`) {
		t.Errorf("report of a foreign document: exit %d\n%s", r.code, r.stderr)
	}
	if r := runBin(t, "compare", src); r.code != exitUsage {
		t.Errorf("compare of one result: exit %d, want %d", r.code, exitUsage)
	}
	if r := runBin(t, "report", src, "--html", t.TempDir()); r.code != exitUsage || !strings.Contains(r.stderr, "is a directory") {
		t.Errorf("report --html DIR: exit %d\n%s", r.code, r.stderr)
	}
}
