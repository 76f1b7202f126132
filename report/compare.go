package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// Input is one result of a comparison and the name it came from (its file name).
type Input struct {
	Name   string
	Result *result.Result
}

// Labels returns a distinct column label per input: broker and scenario when those tell
// the results apart, else the file names (their base, or whole when the bases clash), else
// the file names numbered.
func Labels(in []Input) []string {
	try := func(f func(i Input) string) []string {
		seen := map[string]bool{}
		out := make([]string, len(in))
		for k, i := range in {
			out[k] = f(i)
			if out[k] == "" || seen[out[k]] {
				return nil
			}
			seen[out[k]] = true
		}
		return out
	}
	if l := try(func(i Input) string {
		b, s := strings.Join(i.Result.Broker, ","), scenarioInfo(i.Result).Name
		if b == "" || s == "" {
			return ""
		}
		return b + " " + s
	}); l != nil {
		return l
	}
	if l := try(func(i Input) string { return filepath.Base(i.Name) }); l != nil {
		return l
	}
	if l := try(func(i Input) string { return i.Name }); l != nil {
		return l
	}
	out := make([]string, len(in))
	for k, i := range in {
		out[k] = fmt.Sprintf("#%d %s", k+1, cmpOr(filepath.Base(i.Name), strings.Join(i.Result.Broker, ",")))
	}
	return out
}

// ScenarioDiffs names what differs between the inputs' scenarios (name, type, groups and
// parameters; the server and comments are expected to differ and are not compared), each
// input against the first. None: the results ran one scenario and compare fairly.
func ScenarioDiffs(in []Input) []string {
	if len(in) < 2 {
		return nil
	}
	labels := Labels(in)
	flat := make([]map[string]string, len(in))
	for i, x := range in {
		var doc map[string]any
		_ = json.Unmarshal(x.Result.Scenario, &doc) // no scenario: every field differs
		delete(doc, "server")
		delete(doc, "comments")
		for _, g := range []string{"publishers", "subscribers"} { // client id prefixes measure nothing
			if m, ok := doc[g].(map[string]any); ok {
				delete(m, "id_prefix")
			}
		}
		// A mixed scenario's groups compare by name, field by field (groups.NAME.field).
		if gs, ok := doc["groups"].([]any); ok {
			byName := map[string]any{}
			for k, g := range gs {
				m, ok := g.(map[string]any)
				if !ok {
					continue
				}
				delete(m, "id_prefix")
				name, _ := m["name"].(string)
				if name == "" {
					name = fmt.Sprint(k)
				}
				delete(m, "name")
				byName[name] = m
			}
			doc["groups"] = byName
		}
		flat[i] = map[string]string{}
		flatten("", doc, flat[i])
	}
	var out []string
	for i := 1; i < len(in); i++ {
		keys := map[string]bool{}
		for k := range flat[0] {
			keys[k] = true
		}
		for k := range flat[i] {
			keys[k] = true
		}
		var diffs []string
		for _, k := range sortedKeys(keys) {
			a, aok := flat[0][k]
			b, bok := flat[i][k]
			if aok && bok && a == b {
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", k, orNone(a, aok), orNone(b, bok)))
		}
		if len(diffs) > 0 {
			out = append(out, fmt.Sprintf("%q and %q ran different scenarios: %s", labels[0], labels[i], strings.Join(diffs, "; ")))
		}
	}
	return out
}

func orNone(v string, ok bool) string {
	if !ok {
		return "(none)"
	}
	return v
}

// flatten writes the leaves of v under dotted keys.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			flatten(strings.TrimPrefix(prefix+"."+k, "."), e, out)
		}
	default:
		b, _ := json.Marshal(t)
		if prefix == "" {
			prefix = "scenario"
		}
		out[prefix] = string(b)
	}
}

// metric is one row of the comparison table.
type metric struct {
	name   string
	higher bool // a higher value is better
	format func(float64) string
	value  func(r *result.Result) (float64, bool)
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }
func rate(v float64) string  { return fmt.Sprintf("%.0f/s", v) }
func usv(v float64) string   { return FormatUS(int64(v)) }
func mib(v float64) string   { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
func secs(v float64) string  { return fmt.Sprintf("%.2fs", v) }

func pctl(get func(r *result.Result) result.Percentiles, f func(p result.Percentiles) int64) func(r *result.Result) (float64, bool) {
	return func(r *result.Result) (float64, bool) {
		p := get(r)
		return float64(f(p)), p.Count > 0
	}
}

func lat(r *result.Result) result.Percentiles  { return r.LatencyUS }
func raw(r *result.Result) result.Percentiles  { return r.LatencyRaw }
func conn(r *result.Result) result.Percentiles { return r.Connections.ConnectLatencyUS }

func msgs(f func(m *result.Messages) int64) func(r *result.Result) (float64, bool) {
	return func(r *result.Result) (float64, bool) { return float64(f(&r.Messages)), messaging(r) }
}

var metrics = []metric{
	{"sent msg/s", true, rate, func(r *result.Result) (float64, bool) { return r.Throughput.PublishPerS, messaging(r) }},
	{"received msg/s", true, rate, func(r *result.Result) (float64, bool) { return r.Throughput.ReceivePerS, messaging(r) }},
	{"latency p50", false, usv, pctl(lat, func(p result.Percentiles) int64 { return p.P50 })},
	{"latency p90", false, usv, pctl(lat, func(p result.Percentiles) int64 { return p.P90 })},
	{"latency p99", false, usv, pctl(lat, func(p result.Percentiles) int64 { return p.P99 })},
	{"latency p99.9", false, usv, pctl(lat, func(p result.Percentiles) int64 { return p.P999 })},
	{"latency max", false, usv, pctl(lat, func(p result.Percentiles) int64 { return p.Max })},
	{"raw latency p50", false, usv, pctl(raw, func(p result.Percentiles) int64 { return p.P50 })},
	{"raw latency p99", false, usv, pctl(raw, func(p result.Percentiles) int64 { return p.P99 })},
	{"connections", true, count, func(r *result.Result) (float64, bool) { return float64(r.Connections.Established), true }},
	{"connect failed", false, count, func(r *result.Result) (float64, bool) { return float64(r.Connections.Failed), true }},
	{"connect rate", true, rate, func(r *result.Result) (float64, bool) {
		return r.Connections.ConnectRatePerS, r.Connections.Established > 0
	}},
	{"connect latency p50", false, usv, pctl(conn, func(p result.Percentiles) int64 { return p.P50 })},
	{"connect latency p99", false, usv, pctl(conn, func(p result.Percentiles) int64 { return p.P99 })},
	{"lost", false, count, func(r *result.Result) (float64, bool) {
		return float64(r.Messages.Lost), messaging(r) && !r.Messages.ExpectedUnknown
	}},
	{"owed at the end", false, count, func(r *result.Result) (float64, bool) {
		return float64(r.Messages.OwedAtEnd), messaging(r) && !r.Messages.ExpectedUnknown
	}},
	{"duplicated", false, count, msgs(func(m *result.Messages) int64 { return m.Duplicated })},
	{"out of order", false, count, msgs(func(m *result.Messages) int64 { return m.OutOfOrder })},
	{"unsent", false, count, msgs(func(m *result.Messages) int64 { return m.UnsentTotal })},
	{"client cpu", false, secs, func(r *result.Result) (float64, bool) { return r.Client.CPUS, r.Client.CPUS > 0 }},
	{"client max rss", false, mib, func(r *result.Result) (float64, bool) {
		return float64(r.Client.MaxRSSBytes), r.Client.MaxRSSBytes > 0
	}},
	{"broker cpu", false, secs, func(r *result.Result) (float64, bool) {
		return brokerFig(r, func(b *result.BrokerProcess) float64 { return b.CPUS })
	}},
	{"broker cpu avg", false, func(v float64) string { return fmt.Sprintf("%.0f%%", v) }, func(r *result.Result) (float64, bool) {
		return brokerFig(r, func(b *result.BrokerProcess) float64 { return b.CPUPercentAvg })
	}},
	{"broker rss peak", false, mib, func(r *result.Result) (float64, bool) {
		return brokerFig(r, func(b *result.BrokerProcess) float64 { return float64(b.RSSPeakBytes) })
	}},
	{"broker cpu per message", false, func(v float64) string { return fmt.Sprintf("%.2f µs", v) }, func(r *result.Result) (float64, bool) {
		v, ok := brokerFig(r, func(b *result.BrokerProcess) float64 { return b.CPUPerMessageUS })
		return v, ok && v > 0 // a run without messages has none
	}},
	{"broker host cpu avg", false, func(v float64) string { return fmt.Sprintf("%.0f%%", v) }, func(r *result.Result) (float64, bool) {
		return hostFigure(r, func(h *result.BrokerHost) float64 { return h.CPUPercentAvg })
	}},
	{"broker host memory peak", false, mib, func(r *result.Result) (float64, bool) {
		return hostFigure(r, func(h *result.BrokerHost) float64 { return h.MemUsedPeakBytes })
	}},
	{"broker host net in avg", false, func(v float64) string { return bytesText(v) + "/s" }, func(r *result.Result) (float64, bool) {
		return hostFigure(r, func(h *result.BrokerHost) float64 { return h.RxBytesPerSAvg })
	}},
}

// stageMetrics are the rows of the stages of staged runs: a group of rows per stage that
// at least two inputs have (an input without that stage shows "–").
func stageMetrics(in []Input) []metric {
	n := 0
	counts := map[int]int{}
	for _, x := range in {
		for i := range x.Result.Stages {
			counts[i]++
			if counts[i] >= 2 {
				n = max(n, i+1)
			}
		}
	}
	var out []metric
	for i := range n {
		st := func(f func(s *result.Stage) float64) func(r *result.Result) (float64, bool) {
			return func(r *result.Result) (float64, bool) {
				if i >= len(r.Stages) {
					return 0, false
				}
				return f(&r.Stages[i]), true
			}
		}
		latOK := func(f func(p result.Percentiles) int64) func(r *result.Result) (float64, bool) {
			return func(r *result.Result) (float64, bool) {
				if i >= len(r.Stages) || r.Stages[i].LatencyUS.Count == 0 {
					return 0, false
				}
				return float64(f(r.Stages[i].LatencyUS)), true
			}
		}
		name := fmt.Sprintf("stage %d ", i)
		out = append(out,
			metric{name + "offered msg/s", true, rate, st(func(s *result.Stage) float64 { return s.OfferedPerS })},
			metric{name + "sent msg/s", true, rate, st(func(s *result.Stage) float64 { return s.Throughput.PublishPerS })},
			metric{name + "received msg/s", true, rate, st(func(s *result.Stage) float64 { return s.Throughput.ReceivePerS })},
			metric{name + "latency p50", false, usv, latOK(func(p result.Percentiles) int64 { return p.P50 })},
			metric{name + "latency p99", false, usv, latOK(func(p result.Percentiles) int64 { return p.P99 })},
			metric{name + "lost", false, count, st(func(s *result.Stage) float64 { return float64(s.Messages.Lost) })},
		)
	}
	return out
}

// groupMetrics are the rows of the client groups of mixed runs: a group of rows per group
// name that some input has, in the order the inputs first name them (an input without that
// group shows "–"). The names come from the documents: escaped.
func groupMetrics(in []Input) []metric {
	var names []string
	for _, x := range in {
		for _, g := range x.Result.Groups {
			if !slices.Contains(names, g.Name) {
				names = append(names, g.Name)
			}
		}
	}
	var out []metric
	for _, name := range names {
		gr := func(f func(g *result.Group) (float64, bool)) func(r *result.Result) (float64, bool) {
			return func(r *result.Result) (float64, bool) {
				for i := range r.Groups {
					if r.Groups[i].Name == name {
						return f(&r.Groups[i])
					}
				}
				return 0, false
			}
		}
		always := func(f func(g *result.Group) float64) func(r *result.Result) (float64, bool) {
			return gr(func(g *result.Group) (float64, bool) { return f(g), true })
		}
		pub := func(f func(g *result.Group) float64) func(r *result.Result) (float64, bool) {
			return gr(func(g *result.Group) (float64, bool) { return f(g), g.Publishers > 0 })
		}
		lat := func(f func(p result.Percentiles) int64) func(r *result.Result) (float64, bool) {
			return gr(func(g *result.Group) (float64, bool) { return float64(f(g.LatencyUS)), g.LatencyUS.Count > 0 })
		}
		label := "group " + termtext.Line(name) + " "
		out = append(out,
			metric{label + "connected", true, count, always(func(g *result.Group) float64 { return float64(g.Connections.Established) })},
			metric{label + "reconnected", false, count, gr(func(g *result.Group) (float64, bool) {
				return float64(g.Connections.Reconnected), g.Connections.Reconnected > 0 || g.Churn != nil
			})},
			metric{label + "reconnect p99", false, usv, gr(func(g *result.Group) (float64, bool) {
				if h := g.Connections.ReconnectLatencyUS; h != nil {
					return float64(h.P99), true
				}
				return 0, false
			})},
			metric{label + "published", true, count, pub(func(g *result.Group) float64 { return float64(g.Messages.Published) })},
			metric{label + "lost", false, count, pub(func(g *result.Group) float64 { return float64(g.Messages.Lost) })},
			metric{label + "owed at the end", false, count, gr(func(g *result.Group) (float64, bool) {
				return float64(g.Messages.OwedAtEnd), g.Messages.OwedAtEnd > 0
			})},
			metric{label + "latency p50", false, usv, lat(func(p result.Percentiles) int64 { return p.P50 })},
			metric{label + "latency p99", false, usv, lat(func(p result.Percentiles) int64 { return p.P99 })},
			metric{label + "received by its clients", true, count, gr(func(g *result.Group) (float64, bool) {
				return float64(g.Delivered), g.Delivered > 0
			})},
		)
	}
	return out
}

// hostFigure is f of r's broker host figures, when an endpoint gave them (node_exporter).
func hostFigure(r *result.Result, f func(h *result.BrokerHost) float64) (float64, bool) {
	if r.BrokerHost == nil || r.BrokerHost.CPUs == 0 {
		return 0, false
	}
	return f(r.BrokerHost), true
}

func brokerFig(r *result.Result, f func(b *result.BrokerProcess) float64) (float64, bool) {
	if r.BrokerProcess == nil || r.BrokerProcess.PID == 0 && r.BrokerProcess.CPUS == 0 {
		return 0, false
	}
	return f(r.BrokerProcess), true
}

// CompareTable returns the side-by-side table of the inputs: one row per figure that at
// least one input has, one column per input (Labels), "–" where an input has no such
// figure. Marks flags the best value of each row (ties all marked) when at least two inputs
// have it and they differ.
func CompareTable(in []Input) Table {
	t := Table{Head: append([]string{""}, Labels(in)...)}
	for _, m := range slices.Concat(metrics, stageMetrics(in), groupMetrics(in)) {
		row := []string{m.name}
		vals := make([]float64, len(in))
		has := make([]bool, len(in))
		n := 0
		for i, x := range in {
			vals[i], has[i] = m.value(x.Result)
			if has[i] && !math.IsNaN(vals[i]) {
				row = append(row, m.format(vals[i]))
				n++
			} else {
				has[i] = false
				row = append(row, "–")
			}
		}
		if n == 0 {
			continue
		}
		marks := make([]bool, len(row))
		if n >= 2 {
			better := func(a, b float64) bool { return m.higher && a > b || !m.higher && a < b }
			first := true
			var best, worst float64
			for i, v := range vals {
				switch {
				case !has[i]:
				case first:
					best, worst, first = v, v, false
				case better(v, best):
					best = v
				case better(worst, v):
					worst = v
				}
			}
			if m.format(best) != m.format(worst) { // equal as shown: no winner
				for i, v := range vals {
					marks[i+1] = has[i] && v == best
				}
			}
		}
		t.Rows = append(t.Rows, row)
		t.Marks = append(t.Marks, marks)
	}
	rows, marks := limitRows(in)
	t.Rows, t.Marks = append(t.Rows, rows...), append(t.Marks, marks...)
	return t
}

// WriteCompare writes the comparison table to w for a terminal: the scenario warnings
// first, then the table with the best value of each row marked "*". The labels and
// warnings, which quote the documents, are escaped (termtext.Line).
func WriteCompare(w io.Writer, in []Input) error {
	for _, d := range ScenarioDiffs(in) {
		fmt.Fprintf(w, "WARNING: %s\n", termtext.Line(d))
	}
	t := CompareTable(in)
	lw := 0 // the row names are padded by hand: AlignRight would right-align them too
	for _, row := range t.Rows {
		lw = max(lw, len(row[0]))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, h := range t.Head {
		if i == 0 {
			fmt.Fprintf(tw, "%-*s\t", lw, "")
			continue
		}
		fmt.Fprintf(tw, "%s \t", termtext.Line(h))
	}
	fmt.Fprintln(tw)
	for r, row := range t.Rows {
		for i, c := range row {
			switch {
			case i == 0:
				fmt.Fprintf(tw, "%-*s\t", lw, c)
			case t.Marks[r][i]:
				fmt.Fprintf(tw, "%s*\t", c)
			default:
				fmt.Fprintf(tw, "%s \t", c)
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "* best of the row (higher throughput, connections and connect rate; lower everything else)")
	return err
}

// NewCompare builds the comparison page of the inputs: the warnings, the table, boxplots of
// the latency distributions, overlaid spectra and time series.
func NewCompare(in []Input) *Page {
	labels := Labels(in)
	p := &Page{Title: fmt.Sprintf("mqblast compare: %d results", len(in)), Warnings: ScenarioDiffs(in)}
	var subs []string
	for i, x := range in {
		subs = append(subs, fmt.Sprintf("%s = %s", labels[i], cmpOr(x.Name, "(stdin)")))
	}
	p.Subtitle = strings.Join(subs, " · ")
	t := CompareTable(in)
	p.Panels = append(p.Panels, Panel{ID: "table", Title: "Side by side", Tables: []Table{t},
		Intro: "The best value of each row is highlighted (higher throughput, connections and connect rate; lower everything else)."})

	boxes := Panel{ID: "boxes", Title: "Latency distributions", Intro: "Boxplots: " + BoxLegend + "."}
	for _, h := range []struct {
		title string
		get   func(r *result.Result) *result.Hist
	}{
		{"Latency, corrected (from the due time)", func(r *result.Result) *result.Hist { return r.Histograms.Latency }},
		{"Latency, raw (from the actual write)", func(r *result.Result) *result.Hist { return r.Histograms.LatencyRaw }},
		{"Connect latency (TCP start to CONNACK)", func(r *result.Result) *result.Hist { return r.Histograms.ConnectLatency }},
	} {
		items := make([]BoxItem, len(in))
		any := false
		for i, x := range in {
			items[i] = BoxItem{Label: labels[i], Box: Box(h.get(x.Result))}
			any = any || items[i].Box.Count > 0
		}
		if any {
			boxes.SVG = append(boxes.SVG, BoxplotSVG(items, BoxplotOptions{Title: h.title}))
		}
	}
	if len(boxes.SVG) == 0 {
		boxes.Empty = "no result has a latency histogram"
	}
	p.Panels = append(p.Panels, boxes)

	spectra := Panel{ID: "spectra", Title: "Percentile spectra"}
	spectra.Charts = append(spectra.Charts,
		overlaySpectrum("cmp_spectrum", "Latency by percentile, corrected", in, labels, func(r *result.Result) *result.Hist { return r.Histograms.Latency }),
		overlaySpectrum("cmp_spectrum_raw", "Latency by percentile, raw", in, labels, func(r *result.Result) *result.Hist { return r.Histograms.LatencyRaw }),
		overlaySpectrum("cmp_connect_spectrum", "Connect latency by percentile", in, labels, func(r *result.Result) *result.Hist { return r.Histograms.ConnectLatency }))
	p.Panels = append(p.Panels, spectra)

	ts := Panel{ID: "time", Title: "Over time", Intro: "Per interval, seconds into each run."}
	ts.Charts = append(ts.Charts,
		overlayTime("cmp_receive", "Messages received per second", "per_s", false, in, labels, func(iv *result.Interval) float64 { return iv.ReceivePerS }),
		overlayTime("cmp_p99", "Latency p99 per interval, corrected", "us", true, in, labels, func(iv *result.Interval) float64 {
			if iv.LatencyUS.Count == 0 {
				return math.NaN()
			}
			return float64(iv.LatencyUS.P99)
		}),
		overlayTime("cmp_established", "Connections established", "count", false, in, labels, func(iv *result.Interval) float64 { return float64(iv.Established) }),
		overlayTime("cmp_client_cpu", "Client CPU (100% = one core)", "percent", false, in, labels, func(iv *result.Interval) float64 { return nz(iv.ClientCPUPercent) }),
		overlayTime("cmp_broker_cpu", "Broker CPU (100% = one core)", "percent", false, in, labels, func(iv *result.Interval) float64 { return nz(iv.BrokerCPUPercent) }))
	p.Panels = append(p.Panels, ts)
	return p
}

func overlaySpectrum(id, title string, in []Input, labels []string, get func(r *result.Result) *result.Hist) Chart {
	c := &Chart{ID: id, Title: title, XKind: "spectrum", YUnit: "us", YLog: true}
	var longest int64
	for _, x := range in {
		longest = max(longest, get(x.Result).Count())
	}
	c.X = SpectrumX(longest)
	for i, x := range in {
		_, v := Spectrum(get(x.Result))
		c.Series = append(c.Series, Series{Label: labels[i], Color: Color(i), Values: pad(v, len(c.X))})
	}
	return c.finish("no result has these values")
}

func overlayTime(id, title, unit string, ylog bool, in []Input, labels []string, f func(iv *result.Interval) float64) Chart {
	c := &Chart{ID: id, Title: title, XKind: "time", YUnit: unit, YLog: ylog, SpanGaps: true}
	// The x axis is the union of the runs' interval times (rounded to 1 ms); a run has
	// gaps at the others' times.
	key := func(t float64) float64 { return math.Round(t*1000) / 1000 }
	at := map[float64]bool{}
	for _, x := range in {
		for _, iv := range x.Result.Intervals {
			at[key(iv.TS)] = true
		}
	}
	for t := range at {
		c.X = append(c.X, t)
	}
	sort.Float64s(c.X)
	idx := map[float64]int{}
	for i, t := range c.X {
		idx[t] = i
	}
	for i, x := range in {
		v := pad(nil, len(c.X))
		for k := range x.Result.Intervals {
			iv := &x.Result.Intervals[k]
			v[idx[key(iv.TS)]] = f(iv)
		}
		c.Series = append(c.Series, Series{Label: labels[i], Color: Color(i), Values: v})
	}
	return c.finish("no result has these values")
}

// compareDoc is one embedded result of a comparison page.
type compareDoc struct {
	Name   string         `json:"name"`
	Label  string         `json:"label"`
	Result *result.Result `json:"result"`
}

// WriteCompareHTML writes the comparison page of the inputs to w: one self-contained page
// with every result document embedded (see WriteHTML).
func WriteCompareHTML(w io.Writer, in []Input, version string) error {
	labels := Labels(in)
	docs := make([]compareDoc, len(in))
	for i, x := range in {
		docs[i] = compareDoc{x.Name, labels[i], x.Result}
	}
	return writePage(w, NewCompare(in), docs, version, true)
}
