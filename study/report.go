package study

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// WriteReport writes DIR/study.html from the index and the cells' result documents: per
// scenario and sweep value, latency boxplots (one row per network profile and broker,
// the repetitions' histograms added, exact), throughput bars (median of the repetitions,
// whisker min to max), and a table of every cell (median, IQR, p99, throughput, losses,
// the broker's CPU and RSS, the emulator's drops, the command that reproduces it). The
// page is self-contained: no script or style is fetched when it is opened, and its
// Content-Security-Policy runs its own script alone (report.CSP).
func WriteReport(dir string, ix *Index) error {
	results := map[string]*result.Result{}
	for _, c := range ix.Cells {
		if c.Result == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, c.Result))
		if err != nil {
			continue
		}
		var r result.Result
		if json.Unmarshal(b, &r) == nil {
			results[c.ID] = &r
		}
	}
	if err := writeAtomic(filepath.Join(dir, "study.html"), []byte(renderHTML(ix, results))); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, "summary.md"), []byte(renderSummary(ix, results)))
}

// renderSummary is summary.md: study.html's summary tables in Markdown, one per scenario
// and sweep combination, to paste where the figures are kept.
func renderSummary(ix *Index, results map[string]*result.Result) string {
	var b strings.Builder
	status := map[string]int{}
	for _, c := range ix.Cells {
		status[c.Status]++
	}
	fmt.Fprintf(&b, "# Study %s\n\n%d cells: %s. Started %s, updated %s; mqblast %s.",
		md(ix.Name), len(ix.Cells), statusLine(status), ix.StartedAt.Format("2006-01-02 15:04:05Z"), ix.UpdatedAt.Format("2006-01-02 15:04:05Z"), md(ix.ToolVersion))
	if !ix.Finished {
		b.WriteString(" Not finished.")
	}
	b.WriteString(" Latency corrected (from each message's due time), the repetitions' histograms added; " +
		"IQR = p75 − p25; receive rate the median of the repetitions and their range; lost added; the broker's CPU % and RSS peak " +
		"the medians over the runs that sampled its process.\n")
	for _, g := range groupsOf(ix) {
		fmt.Fprintf(&b, "\n## %s\n\n", md(g.title()))
		for _, c := range g.cells {
			if r := results[c.ID]; r != nil {
				fmt.Fprintf(&b, "%s\n\n", md(scenarioLine(r)))
				break
			}
		}
		b.WriteString("| profile | broker | runs | median | p25 | p75 | IQR | p99 | recv/s | recv/s range | lost | broker CPU % | broker RSS peak |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, r := range summarize(g, results) {
			fmt.Fprintf(&b, "| %s | %s |", md(r.profile), md(r.broker))
			for _, v := range r.cols() {
				fmt.Fprintf(&b, " %s |", md(v))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// md makes s safe in a Markdown table cell: no line breaks, no column separators.
func md(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ").Replace(s)
}

// group is the cells of one scenario and sweep combination.
type group struct {
	scenario string
	params   []KV
	cells    []*CellRecord
}

func (g *group) title() string {
	if len(g.params) == 0 {
		return g.scenario
	}
	return g.scenario + " · " + comboName(g.params)
}

func groupsOf(ix *Index) []*group {
	var out []*group
	idx := map[string]*group{}
	for _, c := range ix.Cells {
		k := c.Scenario + "\x00" + comboName(c.Params)
		g, ok := idx[k]
		if !ok {
			g = &group{scenario: c.Scenario, params: c.Params}
			idx[k] = g
			out = append(out, g)
		}
		g.cells = append(g.cells, c)
	}
	return out
}

// ordered returns the distinct values of f over cells, in first-seen order.
func ordered(cells []*CellRecord, f func(*CellRecord) string) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cells {
		if v := f(c); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func counted(c *CellRecord) bool { return c.Status == StatusOK || c.Status == StatusThreshold }

func renderHTML(ix *Index, results map[string]*result.Result) string {
	var b strings.Builder
	status := map[string]int{}
	for _, c := range ix.Cells {
		status[c.Status]++
	}
	var camp Campaign
	_ = json.Unmarshal(ix.Campaign, &camp)
	fmt.Fprintf(&b, `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="%s">
<title>mqblast study %s</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
:root{color-scheme:light dark}
body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:1200px;line-height:1.4}
table{border-collapse:collapse;font-size:13px;margin:.5rem 0}
th,td{border:1px solid #8884;padding:2px 6px;text-align:right;vertical-align:top}
th{background:#8882}
td.l,th.l{text-align:left}
tr.failed td{background:#e1575922}
tr.interrupted td,tr.pending td{background:#edc94922}
code{font-size:12px;word-break:break-all}
details{margin:.2rem 0}
.note{opacity:.8;font-size:13px}
section{margin:2rem 0}
</style></head><body>
`, html.EscapeString(studyCSP), html.EscapeString(ix.Name))
	fmt.Fprintf(&b, "<h1>Study %s</h1>\n", html.EscapeString(ix.Name))
	for _, c := range camp.Comments {
		fmt.Fprintf(&b, "<p>%s</p>\n", html.EscapeString(c))
	}
	fmt.Fprintf(&b, `<p class="note">%d cells: %s. Started %s, updated %s; %s order`, len(ix.Cells), statusLine(status),
		ix.StartedAt.Format("2006-01-02 15:04:05Z"), ix.UpdatedAt.Format("2006-01-02 15:04:05Z"), html.EscapeString(ix.Order))
	if ix.Seed != 0 {
		fmt.Fprintf(&b, " (seed %d)", ix.Seed)
	}
	fmt.Fprintf(&b, "; %d repetitions, interleaved (repetition 1 of every cell, then repetition 2, ...). mqblast %s.", camp.Repetitions, html.EscapeString(ix.ToolVersion))
	if ix.Interrupted {
		b.WriteString(" <b>Interrupted</b>: run the same command again to resume.")
	} else if !ix.Finished {
		b.WriteString(" <b>Not finished.</b>")
	}
	b.WriteString("</p>\n")
	b.WriteString("<h2>Brokers</h2>\n<table><tr><th class=l>name</th><th class=l>type</th><th class=l>address</th><th class=l>started with</th><th class=l>between cells</th></tr>\n")
	for _, br := range ix.Brokers {
		fmt.Fprintf(&b, "<tr><td class=l>%s</td><td class=l>%s</td><td class=l>%s</td><td class=l><code>%s</code></td><td class=l>%s</td></tr>\n",
			html.EscapeString(br.Name), html.EscapeString(br.Type), html.EscapeString(br.Address), html.EscapeString(br.Start), html.EscapeString(br.Restart))
	}
	b.WriteString("</table>\n")
	for _, n := range ix.Notes {
		fmt.Fprintf(&b, "<p class=note>%s</p>\n", html.EscapeString(n))
	}
	boxes := 0
	for _, g := range groupsOf(ix) {
		boxes += renderGroup(&b, g, results)
	}
	renderTable(&b, ix, results)
	fmt.Fprintf(&b, `<script>%s</script>
<p class=note>Latency is corrected for coordinated omission (from each message's due time). %s. Generated by mqblast study.</p>
</body></html>
`, studyScript, html.EscapeString(report.BoxLegend))
	return strings.Replace(b.String(), "<body>", fmt.Sprintf(`<body data-boxes-expected="%d">`, boxes), 1)
}

// studyScript is study.html's one script: the page checks itself once the browser has laid
// it out (every box drawn has a box with a size). Tests read data-boxes-drawn against
// data-boxes-expected.
const studyScript = `
addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("svg rect.box").forEach(function (r) { var bb = r.getBBox(); if (bb.width > 0 && bb.height > 0) n++; });
  document.body.setAttribute("data-boxes-drawn", String(n));
});
`

// studyCSP lets studyScript run and no other script (report.CSP).
var studyCSP = report.CSP(studyScript)

func statusLine(m map[string]int) string {
	var parts []string
	for _, s := range []string{StatusOK, StatusThreshold, StatusFailed, StatusInterrupted, StatusPending} {
		if m[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// renderGroup writes one scenario and sweep combination; it returns the boxes drawn.
func renderGroup(b *strings.Builder, g *group, results map[string]*result.Result) int {
	fmt.Fprintf(b, "<section><h2>%s</h2>\n", html.EscapeString(g.title()))
	for _, c := range g.cells {
		if r := results[c.ID]; r != nil {
			fmt.Fprintf(b, "<p class=note>%s</p>\n", html.EscapeString(scenarioLine(r)))
			break
		}
	}
	rows := summarize(g, results)
	items := make([]report.BoxItem, len(rows))
	for i, r := range rows {
		items[i] = report.BoxItem{Label: fmt.Sprintf("%s (%d/%d runs)", r.label(), r.n, r.of), Box: r.box}
	}
	drawn := 0
	for _, it := range items {
		if it.Box.Count > 0 {
			drawn++
		}
	}
	fmt.Fprintf(b, `<div class="boxplot" data-group="%s" data-boxes="%d">`, html.EscapeString(g.title()), drawn)
	b.WriteString(report.BoxplotSVG(items, report.BoxplotOptions{Title: "latency by network profile │ broker (the repetitions' histograms added)"}))
	b.WriteString("</div>\n")
	// Throughput bars: median of the repetitions, whisker from the lowest to the highest.
	const rowH, labelW, w = 26, 200, 760
	hi := 0.0
	for _, x := range rows {
		hi = math.Max(hi, x.recvHi)
	}
	if hi > 0 {
		h := rowH*len(rows) + 40
		fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="mqb-bars" width="%d" height="%d" font-family="system-ui, sans-serif" font-size="12">`, w, h)
		fmt.Fprintf(b, `<text x="4" y="16" font-weight="600" fill="currentColor">messages received per second (median of the repetitions; whisker: lowest to highest)</text>`)
		px := func(v float64) float64 { return labelW + v/hi*float64(w-labelW-90) }
		for i, x := range rows {
			y := 26 + i*rowH
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle" fill="currentColor">%s</text>`, labelW-8, y+rowH/2, html.EscapeString(x.label()))
			if x.n == 0 {
				fmt.Fprintf(b, `<text x="%d" y="%d" dominant-baseline="middle" fill="currentColor" fill-opacity="0.7">no data</text>`, labelW+4, y+rowH/2)
				continue
			}
			fmt.Fprintf(b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="%d" fill="%s" fill-opacity="0.7"><title>%s: median %.0f/s over %d runs (%.0f to %.0f)</title></rect>`,
				labelW, y+4, math.Max(px(x.recv)-labelW, 1), rowH-8, report.Color(x.brokerIdx), html.EscapeString(x.label()), x.recv, x.n, x.recvLo, x.recvHi)
			fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="currentColor"/>`, px(x.recvLo), y+rowH/2, px(x.recvHi), y+rowH/2)
			fmt.Fprintf(b, `<text x="%.1f" y="%d" dominant-baseline="middle" fill="currentColor">%s/s</text>`, px(x.recvHi)+6, y+rowH/2, rate(x.recv))
		}
		b.WriteString("</svg>\n")
	}
	b.WriteString(`<table class="summary"><tr><th class=l>profile</th><th class=l>broker</th><th>runs</th>` +
		`<th>median</th><th>p25</th><th>p75</th><th>IQR</th><th>p99</th><th>recv/s (median)</th><th>recv/s (range)</th>` +
		`<th>lost</th><th>broker CPU %</th><th>broker RSS peak</th></tr>` + "\n")
	for _, r := range rows {
		c := r.cols()
		fmt.Fprintf(b, `<tr data-summary="%s"><td class=l>%s</td><td class=l>%s</td>`, html.EscapeString(r.label()), html.EscapeString(r.profile), html.EscapeString(r.broker))
		for _, v := range c {
			fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(v))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n</section>\n")
	return drawn
}

// summaryRow is one network profile and broker of a scenario and sweep combination: its
// repetitions' latency histograms added (exact percentiles of every message), the median
// and range of their receive rates, their losses added, and the medians of the broker's
// CPU and RSS peak over the runs that sampled it.
type summaryRow struct {
	profile, broker      string
	brokerIdx            int
	n, of                int // runs counted, of the cells
	box                  report.BoxStats
	recv, recvLo, recvHi float64
	lost, owed           int64   // owed: still arriving when the runs' drains ended, not lost
	cpuPct               float64 // median broker CPU %; sampled false: none
	rss                  int64   // median broker RSS peak
	sampled              bool
}

func (r *summaryRow) label() string { return r.profile + " │ " + r.broker }

// cols are the row's figures after profile and broker, as the summary tables show them.
func (r *summaryRow) cols() []string {
	if r.n == 0 {
		return append([]string{fmt.Sprintf("0/%d", r.of)}, make([]string, 10)...)
	}
	out := []string{fmt.Sprintf("%d/%d", r.n, r.of), report.FormatUS(r.box.P50), report.FormatUS(r.box.P25), report.FormatUS(r.box.P75),
		report.FormatUS(r.box.P75 - r.box.P25), report.FormatUS(r.box.P99), rate(r.recv), rate(r.recvLo) + " – " + rate(r.recvHi),
		lostText(r.lost, r.owed), "", ""}
	if r.sampled {
		out[9], out[10] = fmt.Sprintf("%.1f", r.cpuPct), mib(r.rss)
	}
	return out
}

// summarize returns g's rows, profiles in campaign order, brokers within each.
func summarize(g *group, results map[string]*result.Result) []summaryRow {
	profiles := ordered(g.cells, func(c *CellRecord) string { return c.Profile })
	brokers := ordered(g.cells, func(c *CellRecord) string { return c.Broker })
	var rows []summaryRow
	for _, p := range profiles {
		for bi, br := range brokers {
			h := result.NewHist()
			var tps, cpus, rsss []float64
			row := summaryRow{profile: p, broker: br, brokerIdx: bi}
			for _, c := range g.cells {
				if c.Profile != p || c.Broker != br {
					continue
				}
				row.of++
				r := results[c.ID]
				if r == nil || !counted(c) {
					continue
				}
				h.Merge(r.Histograms.Latency)
				tps = append(tps, r.Throughput.ReceivePerS)
				row.lost += r.Messages.Lost
				row.owed += r.Messages.OwedAtEnd
				if bp := r.BrokerProcess; bp != nil {
					cpus, rsss = append(cpus, bp.CPUPercentAvg), append(rsss, float64(bp.RSSPeakBytes))
				}
			}
			row.n, row.box = len(tps), report.Box(h)
			if len(tps) > 0 {
				sort.Float64s(tps)
				row.recv, row.recvLo, row.recvHi = median(tps), tps[0], tps[len(tps)-1]
			}
			if len(cpus) > 0 {
				sort.Float64s(cpus)
				sort.Float64s(rsss)
				row.cpuPct, row.rss, row.sampled = median(cpus), int64(median(rsss)), true
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func rate(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.1fK", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// scenarioLine states the cell's shape from its result's scenario: type, clients, payload,
// QoS, rate.
func scenarioLine(r *result.Result) string {
	var s struct {
		Type       string `json:"type"`
		Publishers *struct {
			Count  int  `json:"client_count"`
			QoS    int  `json:"qos"`
			Retain bool `json:"retain"`
		} `json:"publishers"`
		Subscribers *struct {
			Count int `json:"client_count"`
		} `json:"subscribers"`
		Parameters struct {
			Payload  int     `json:"payload_size"`
			Rate     float64 `json:"publish_rate"`
			Duration float64 `json:"duration_sec"`
			Warmup   float64 `json:"warmup_sec"`
		} `json:"parameters"`
	}
	if json.Unmarshal(r.Scenario, &s) != nil {
		return ""
	}
	line := s.Type
	if p := s.Publishers; p != nil {
		line += fmt.Sprintf(", %d publishers at %g msg/s, QoS %d, payload %d B", p.Count, s.Parameters.Rate, p.QoS, s.Parameters.Payload)
		if p.Retain {
			line += ", retained"
		}
	}
	if sb := s.Subscribers; sb != nil {
		line += fmt.Sprintf(", %d subscriber%s", sb.Count, map[bool]string{true: "", false: "s"}[sb.Count == 1])
	}
	return line + fmt.Sprintf("; %gs per cell, the first %gs not measured", s.Parameters.Duration, s.Parameters.Warmup)
}

func renderTable(b *strings.Builder, ix *Index, results map[string]*result.Result) {
	b.WriteString(`<h2>Cells</h2>
<p class=note>One row per cell, in campaign order (# is the run order). Latency in the measure window, corrected; IQR = p75 − p25.
Broker CPU and RSS are sampled from its process (broker_process of the result); emulator drops are the packet emulator's losses (the profile's, and any it did not ask for).</p>
<table><tr><th class=l>cell</th><th>#</th><th class=l>broker</th><th class=l>scenario</th><th class=l>profile</th><th>rep</th><th class=l>status</th>
<th>median</th><th>p25</th><th>p75</th><th>IQR</th><th>p99</th><th>recv/s</th><th>lost</th><th>broker CPU s</th><th>broker CPU %</th><th>broker RSS peak</th><th>client</th><th>emulator lost</th><th class=l>reproduce</th></tr>
`)
	for _, c := range ix.Cells {
		r := results[c.ID]
		fmt.Fprintf(b, `<tr class="%s" data-cell="%s"><td class=l>%s</td><td>%d</td><td class=l>%s</td><td class=l>%s<br>%s</td><td class=l>%s</td><td>%d</td><td class=l>%s`,
			html.EscapeString(c.Status), html.EscapeString(c.ID), html.EscapeString(c.ID), c.Seq, html.EscapeString(c.Broker), html.EscapeString(c.Scenario), html.EscapeString(comboName(c.Params)),
			html.EscapeString(c.Profile), c.Repetition, html.EscapeString(c.Status))
		if c.Error != "" {
			fmt.Fprintf(b, "<br><small>%s</small>", html.EscapeString(c.Error))
		}
		b.WriteString("</td>")
		if r == nil {
			b.WriteString(strings.Repeat("<td></td>", 12))
		} else {
			bx := report.Box(r.Histograms.Latency)
			cpu, pct, rss := "", "", ""
			if bp := r.BrokerProcess; bp != nil {
				cpu, pct, rss = fmt.Sprintf("%.2f", bp.CPUS), fmt.Sprintf("%.0f", bp.CPUPercentAvg), mib(bp.RSSPeakBytes)
			}
			client := "ok"
			if r.Client.Saturated {
				client = "saturated"
			}
			emu := ""
			if n := c.Network; n != nil {
				emu = fmt.Sprintf("%d", n.LostUp+n.LostDown)
				if n.Overflow+n.KernelDrops > 0 {
					emu += fmt.Sprintf(" (+%d not asked)", n.Overflow+n.KernelDrops)
				}
			}
			fmt.Fprintf(b, "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>",
				report.FormatUS(bx.P50), report.FormatUS(bx.P25), report.FormatUS(bx.P75), report.FormatUS(bx.P75-bx.P25), report.FormatUS(bx.P99),
				rate(r.Throughput.ReceivePerS), lostText(r.Messages.Lost, r.Messages.OwedAtEnd), cpu, pct, rss, client, emu)
		}
		fmt.Fprintf(b, "<td class=l><details><summary>command</summary><code>%s</code></details></td></tr>\n", html.EscapeString(c.Reproduce))
	}
	b.WriteString("</table>\n")
}

// lostText is a lost cell: the copies lost, and beside them those the broker still owed
// when the drain ended (still arriving: not lost).
func lostText(lost, owed int64) string {
	if owed > 0 {
		return fmt.Sprintf("%d (+%d owed)", lost, owed)
	}
	return fmt.Sprint(lost)
}
