package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// Row is one line of a key/value table; Class marks a verdict ("ok", "warn", "bad").
type Row struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Class string `json:"class,omitempty"`
}

// Badge is one verdict at the top of a report.
type Badge struct {
	Text  string `json:"text"`
	Class string `json:"class"` // ok, warn, bad
}

// Table is a table with a header row.
type Table struct {
	Caption string     `json:"caption,omitempty"`
	Head    []string   `json:"head"`
	Rows    [][]string `json:"rows"`
	Marks   [][]bool   `json:"-"` // cells to emphasise (the best of a compare row)
}

// Panel is one section of a page: tables, charts, SVG, preformatted text, or a note saying
// that the result has nothing for it.
type Panel struct {
	ID     string
	Title  string
	Intro  string
	Badges []Badge
	Rows   []Row
	Lists  []List
	Tables []Table
	Charts []Chart
	SVG    []string // standalone <svg> elements (boxplots)
	Pre    string
	Empty  string
}

// List is a titled list of lines (evidence, findings).
type List struct {
	Title string
	Class string
	Items []string
}

// Page is a whole report: a title and its panels.
type Page struct {
	Title    string
	Subtitle string
	Warnings []string
	Panels   []Panel
}

// Charts returns every chart of the page, drawn or empty.
func (p *Page) Charts() []Chart {
	var cs []Chart
	for _, pn := range p.Panels {
		cs = append(cs, pn.Charts...)
	}
	return cs
}

// NewReport builds the report of one result; name labels it (a file name) when its broker
// and scenario do not.
func NewReport(r *result.Result, name string) *Page {
	sc := scenarioInfo(r)
	p := &Page{Title: "mqblast report: " + cmpOr(sc.Name, name), Subtitle: subtitle(r, name)}
	p.Panels = append(p.Panels, summaryPanel(r), throughputPanel(r))
	if len(r.Groups) > 0 {
		p.Panels = append(p.Panels, groupsPanel(r))
	}
	if len(r.Stages) > 0 {
		p.Panels = append(p.Panels, stagesPanel(r))
	}
	if r.Limit != nil {
		p.Panels = append(p.Panels, limitPanel(r))
	}
	if r.Soak != nil {
		p.Panels = append(p.Panels, soakPanel(r))
	}
	p.Panels = append(p.Panels, latencyPanel(r), spectrumPanel(r),
		connectionsPanel(r), deliveryPanel(r), clientPanel(r), brokerHostPanel(r), scenarioPanel(r))
	return p
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func subtitle(r *result.Result, name string) string {
	parts := []string{}
	if len(r.Broker) > 0 {
		parts = append(parts, "broker "+strings.Join(r.Broker, ", "))
	}
	if !r.StartedAt.IsZero() {
		parts = append(parts, "started "+r.StartedAt.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	if r.ToolVersion != "" {
		parts = append(parts, "mqblast "+r.ToolVersion)
	}
	if name != "" {
		parts = append(parts, name)
	}
	return strings.Join(parts, " · ")
}

// scenario is the part of the effective scenario a report names.
type scenario struct {
	Name       string         `json:"name"`
	Type       string         `json:"type"`
	Parameters map[string]any `json:"parameters"`
}

func scenarioInfo(r *result.Result) scenario {
	var s scenario
	_ = json.Unmarshal(r.Scenario, &s) // a result without a scenario names none
	return s
}

func messaging(r *result.Result) bool {
	m := &r.Messages
	return m.Scheduled > 0 || m.Published > 0 || m.Received > 0 || m.Subscribed > 0
}

// Verdicts returns the badges of r: complete or interrupted, thresholds, losses, client
// saturation, broker stall, host limits.
func Verdicts(r *result.Result) []Badge {
	var b []Badge
	if r.Interrupted {
		b = append(b, Badge{"interrupted: partial result", "warn"})
	} else {
		b = append(b, Badge{"complete", "ok"})
	}
	if n := len(r.Thresholds); n > 0 {
		if f := len(r.FailedThresholds()); f > 0 {
			b = append(b, Badge{fmt.Sprintf("%d of %d thresholds failed", f, n), "bad"})
		} else {
			b = append(b, Badge{fmt.Sprintf("%d thresholds passed", n), "ok"})
		}
	}
	c := &r.Connections
	if c.Failed > 0 || c.Established < int64(c.Target) {
		b = append(b, Badge{fmt.Sprintf("%d of %d connections established", c.Established, c.Target), "bad"})
	}
	if m := &r.Messages; messaging(r) {
		if m.Lost > 0 {
			b = append(b, Badge{fmt.Sprintf("%d messages lost", m.Lost), "bad"})
		} else if m.Expected > 0 {
			b = append(b, Badge{"no message lost", "ok"})
		}
		if sp := m.Silent; sp != nil && sp.Confined {
			b = append(b, Badge{fmt.Sprintf("loss confined to %d of %d publishers", sp.Publishers, sp.Of), "bad"})
		}
		if m.OwedAtEnd > 0 {
			b = append(b, Badge{fmt.Sprintf("%d copies owed at the end", m.OwedAtEnd), "warn"})
		}
		if m.Duplicated > 0 || m.OutOfOrder > 0 {
			b = append(b, Badge{fmt.Sprintf("%d duplicated, %d out of order", m.Duplicated, m.OutOfOrder), "warn"})
		}
	}
	if r.Client.Saturated {
		b = append(b, Badge{"client saturated: the client limited this run", "bad"})
	}
	if r.BrokerStalled.Stalled {
		b = append(b, Badge{"broker stalled: it held the publishers back", "bad"})
	}
	if m := &r.Messages; m.Unacknowledged > 0 {
		b = append(b, Badge{fmt.Sprintf("%d of %d QoS 1/2 publishes never acknowledged", m.Unacknowledged, m.PublishedQoS12), "bad"})
	}
	if n := len(r.BrokerBehaviour); n > 0 {
		b = append(b, Badge{fmt.Sprintf("broker behaved differently: %d kinds (broker panel)", n), "warn"})
	}
	if r.Host.Limited {
		b = append(b, Badge{"host limited: the host (kernel or hypervisor) shaped these figures", "bad"})
	}
	return b
}

// SummaryRows are the summary panel's figures, as the text summary (WriteSummary) has them.
func SummaryRows(r *result.Result) []Row {
	var rows []Row
	add := func(k, class, f string, a ...any) { rows = append(rows, Row{k, fmt.Sprintf(f, a...), class}) }
	sc := scenarioInfo(r)
	if sc.Name != "" || sc.Type != "" {
		add("scenario", "", "%s (%s)", sc.Name, sc.Type)
	}
	add("broker", "", "%s", strings.Join(r.Broker, ", "))
	status := "complete"
	if r.Interrupted {
		status = "interrupted (partial result)"
	}
	add("run", "", "%s, %s", status, r.EndedAt.Sub(r.StartedAt).Round(1e6))
	if r.Run != nil {
		add("run id", "", "%s", r.Run)
	}
	c := &r.Connections
	cls := ""
	if c.Failed > 0 || c.Established < int64(c.Target) {
		cls = "bad"
	}
	add("connections", cls, "%d of %d established, %d failed, %d dropped while held", c.Established, c.Target, c.Failed, c.Dropped)
	if c.Reconnected > 0 || c.ReconnectFailed > 0 {
		add("reconnected", "warn", "%d times after drops; %d reconnect attempts failed%s", c.Reconnected, c.ReconnectFailed, countfmt.ByCause(c.ReconnectFailedBy))
	}
	add("connect rate", "", "%.0f/s over %.1fs", c.ConnectRatePerS, c.ConnectPhaseS)
	l := c.ConnectLatencyUS
	add("connect latency", "", "p50 %s · p90 %s · p99 %s · max %s (TCP start to CONNACK)", FormatUS(l.P50), FormatUS(l.P90), FormatUS(l.P99), FormatUS(l.Max))
	if messaging(r) {
		m := &r.Messages
		t := &r.Throughput
		add("throughput", "", "%.0f msg/s written, %.0f msg/s arrived (measure window %.1fs)", t.PublishPerS, t.ReceivePerS, t.WindowS)
		if lat := r.LatencyUS; lat.Count > 0 {
			add("latency", "", "p50 %s · p90 %s · p99 %s · p99.9 %s · max %s (from the due time, %d messages)",
				FormatUS(lat.P50), FormatUS(lat.P90), FormatUS(lat.P99), FormatUS(lat.P999), FormatUS(lat.Max), lat.Count)
		}
		if raw := r.LatencyRaw; raw.Count > 0 {
			add("latency raw", "", "p50 %s · p90 %s · p99 %s · max %s (from the actual write)", FormatUS(raw.P50), FormatUS(raw.P90), FormatUS(raw.P99), FormatUS(raw.Max))
		}
		cls = ""
		if m.Lost > 0 {
			cls = "bad"
		}
		if m.ExpectedUnknown {
			add("delivery", cls, "%s: %d received; %d duplicated, %d out of order", unknownExpected, m.Received, m.Duplicated, m.OutOfOrder)
		} else {
			add("delivery", cls, "%d expected: %d received, %d lost; %d duplicated, %d out of order", m.Expected, m.Received, m.Lost, m.Duplicated, m.OutOfOrder)
			if m.OwedAtEnd > 0 {
				add("owed", "warn", "%s", OwedText(m))
			}
		}
		if line := SilentLine(r); line != "" {
			add("LOST", "bad", "%s", line)
		} else if line := NotJudgedLine(m); line != "" {
			add("silent publishers", "warn", "%s", line)
		}
		cls = ""
		if m.UnsentTotal > 0 {
			cls = "warn"
		}
		add("scheduled", cls, "%d messages: %d published, %d unsent%s", m.Scheduled, m.Published, m.UnsentTotal, countfmt.ByCause(m.Unsent))
		lag := r.Client.ScheduleLagUS
		add("schedule lag", "", "p99 %s · max %s (the client's own lateness)", FormatUS(lag.P99), FormatUS(lag.Max))
	}
	cl := &r.Client
	add("client", "", "cpu %.2fs, max rss %.1f MiB, %d cores, %d processes", cl.CPUS, float64(cl.MaxRSSBytes)/(1<<20), r.Host.Cores, max(r.Host.Procs, 1))
	if b := r.BrokerProcess; b != nil {
		add("broker process", "", "cpu %.2fs (avg %.0f%%, peak %.0f%% of a core), rss %.1f MiB (peak %.1f MiB)",
			b.CPUS, b.CPUPercentAvg, b.CPUPercentPeak, float64(b.RSSBytes)/(1<<20), float64(b.RSSPeakBytes)/(1<<20))
	}
	for _, l := range brokerSysLines(r) {
		add("broker $SYS", "", "%s", l)
	}
	for _, b := range r.BrokerBehaviour {
		add("broker behaved", "warn", "%s", termtext.Line(b.Evidence))
	}
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// hostCheck is one finding of the host checks (tuning.Finding's JSON).
type hostCheck struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Needed  string `json:"needed"`
	Verdict string `json:"verdict"`
	Why     string `json:"why"`
}

func summaryPanel(r *result.Result) Panel {
	p := Panel{ID: "summary", Title: "Summary", Badges: Verdicts(r), Rows: SummaryRows(r)}
	if len(r.Thresholds) > 0 {
		t := Table{Caption: "Thresholds", Head: []string{"threshold", "value", "verdict"}}
		for _, th := range r.Thresholds {
			v := "pass"
			if !th.OK {
				v = "FAIL"
			}
			t.Rows = append(t.Rows, []string{th.Expr, th.ValueText(), v})
		}
		p.Tables = append(p.Tables, t)
	}
	if ev := r.Client.SaturationEvidence; r.Client.Saturated && len(ev) > 0 {
		p.Lists = append(p.Lists, List{"Client saturated: the client, not the broker, limited this run", "bad", ev})
	}
	if b := &r.BrokerStalled; b.Stalled {
		p.Lists = append(p.Lists, List{"Broker stalled: the broker held the publishers back", "bad", b.Evidence})
	}
	if r.Host.Limited {
		p.Lists = append(p.Lists, List{"Host limited: the host (its kernel or hypervisor), not the broker alone, shaped these figures", "bad", r.Host.LimitedEvidence})
	}
	if k := r.Kernel; k != nil && len(k.Findings) > 0 {
		var items []string
		for _, f := range k.Findings {
			items = append(items, fmt.Sprintf("%s +%d on the %s: %s — %s", f.Counter, f.Delta, f.Where, f.Meaning, f.Fix))
		}
		p.Lists = append(p.Lists, List{"Kernel findings", "warn", items})
	}
	var checks []hostCheck
	if len(r.Host.Checks) > 0 && json.Unmarshal(r.Host.Checks, &checks) == nil && len(checks) > 0 {
		t := Table{Caption: "Host checks", Head: []string{"check", "current", "needed", "verdict", "why"}}
		for _, c := range checks {
			t.Rows = append(t.Rows, []string{c.Name, c.Current, c.Needed, c.Verdict, c.Why})
		}
		p.Tables = append(p.Tables, t)
	} else {
		p.Lists = append(p.Lists, List{"Host checks", "", []string{"not recorded in this result (mqblast check shows them for this host)"}})
	}
	if len(r.Errors) > 0 {
		t := Table{Caption: "Errors", Head: []string{"kind", "count", "example"}}
		for _, e := range r.Errors {
			t.Rows = append(t.Rows, []string{e.Kind, fmt.Sprint(e.Count), e.Example})
		}
		p.Tables = append(p.Tables, t)
	}
	return p
}

// times returns the intervals' t_s.
func times(r *result.Result) []float64 {
	xs := make([]float64, len(r.Intervals))
	for i, iv := range r.Intervals {
		xs[i] = iv.TS
	}
	return xs
}

// series returns f of every interval; f returns NaN for a gap.
func series(r *result.Result, label string, color int, f func(iv *result.Interval) float64) Series {
	v := make(Values, len(r.Intervals))
	for i := range r.Intervals {
		v[i] = f(&r.Intervals[i])
	}
	return Series{Label: label, Color: Color(color), Values: v}
}

// nz is v, or NaN when v is 0 (nothing sampled, or a log axis).
func nz(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

func timeChart(id, title, unit string, ylog bool, r *result.Result, s ...Series) *Chart {
	return &Chart{ID: id, Title: title, X: times(r), XKind: "time", YUnit: unit, YLog: ylog, Series: s, Marks: StageMarks(r)}
}

// StageMarks are the marks of a staged run's stages on its time charts: a line where each
// stage starts (seconds into the run) and one where the last ends; and of a limit search's
// steps, where each step's judged window starts.
func StageMarks(r *result.Result) []Mark {
	var ms []Mark
	for _, st := range r.Stages {
		ms = append(ms, Mark{X: st.ToS - st.DurationS, Label: fmt.Sprintf("stage %d", st.Index)})
	}
	if n := len(r.Stages); n > 0 {
		ms = append(ms, Mark{X: r.Stages[n-1].ToS, Label: "end"})
	}
	if l := r.Limit; l != nil { // a search's steps: where each step's judged window starts
		for _, st := range l.Steps {
			ms = append(ms, Mark{X: st.FromS, Label: fmt.Sprintf("step %d: %s/s", st.Index+1, RateText(st.Rate))})
		}
	}
	return ms
}

// stagesPanel is the table of a staged run's stages: each one's offered and achieved rates,
// latency, losses and verdicts.
func stagesPanel(r *result.Result) Panel {
	p := Panel{ID: "stages", Title: "Stages"}
	if len(r.Stages) == 0 {
		p.Empty = "no stages in this run (parameters.stages)"
		return p
	}
	t := Table{Head: []string{"stage", "seconds", "rate per publisher", "offered/s", "written/s", "arrived/s",
		"latency p50", "p99", "p99.9", "lost", "unsent", "client", "broker"}}
	for _, st := range r.Stages {
		how := "step to "
		if st.Ramp {
			how = "ramp to "
		}
		if st.Source != "" { // a change made while the run went on
			how = st.Source + ": " + how
		}
		lat := func(v int64) string {
			if st.LatencyUS.Count == 0 {
				return "–"
			}
			return result.Micros(v)
		}
		client, broker := "ok", "ok"
		if st.Client.Saturated {
			client = "SATURATED"
		}
		if st.BrokerStalled.Stalled {
			broker = "STALLED"
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(st.Index), num(st.StartS) + "–" + num(st.StartS+st.DurationS),
			how + num(st.PublishRate) + "/s", fmt.Sprintf("%.0f", st.OfferedPerS), fmt.Sprintf("%.0f", st.Throughput.PublishPerS),
			fmt.Sprintf("%.0f", st.Throughput.ReceivePerS), lat(st.LatencyUS.P50), lat(st.LatencyUS.P99), lat(st.LatencyUS.P999),
			fmt.Sprint(st.Messages.Lost), fmt.Sprint(st.Messages.UnsentTotal), client, broker})
	}
	p.Tables = []Table{t}
	p.Intro = "Each stage's intervals (seconds from the start of publishing; the first stage's after a warm-up): what the schedule offered, " +
		"what was written and arrived per second, latency from the due time, lost (expected minus received over the stage's intervals) " +
		"and unsent; the client is saturated when its schedule lag p99 passed 10 ms, the broker stalled when it held the publishers. " +
		"A stage marked api is a change made through the live page's API while the run went on (rate 0: a pause)."
	return p
}

func throughputPanel(r *result.Result) Panel {
	c := timeChart("throughput", "Messages per second", "per_s", false, r,
		series(r, "sent (written)", 0, func(iv *result.Interval) float64 { return iv.PublishPerS }),
		series(r, "received", 1, func(iv *result.Interval) float64 { return iv.ReceivePerS }))
	c.Series[1].Dash = true // over "sent", which it often covers
	if len(r.Stages) > 0 {
		off := series(r, "offered (the schedule)", 2, func(iv *result.Interval) float64 {
			if iv.Stage == nil && iv.Offered == 0 {
				return math.NaN()
			}
			return iv.OfferedPerS
		})
		off.Dash = true
		c.Series = append(c.Series, off)
	}
	if !messaging(r) {
		c.Series = nil
	}
	return Panel{ID: "throughput", Title: "Throughput", Intro: "Messages written and arrived per interval, the whole run (connect, warm-up and drain included).",
		Charts: []Chart{c.finish("no messages in this run")}}
}

func latencySeries(r *result.Result, raw bool) []Series {
	get := func(iv *result.Interval) *result.Percentiles {
		if raw {
			return &iv.LatencyRawUS
		}
		return &iv.LatencyUS
	}
	pick := func(f func(p *result.Percentiles) int64) func(iv *result.Interval) float64 {
		return func(iv *result.Interval) float64 {
			p := get(iv)
			if p.Count == 0 {
				return math.NaN()
			}
			return float64(f(p))
		}
	}
	return []Series{
		series(r, "p50", 0, pick(func(p *result.Percentiles) int64 { return p.P50 })),
		series(r, "p90", 1, pick(func(p *result.Percentiles) int64 { return p.P90 })),
		series(r, "p99", 2, pick(func(p *result.Percentiles) int64 { return p.P99 })),
		series(r, "max", 3, pick(func(p *result.Percentiles) int64 { return p.Max })),
	}
}

func latencyPanel(r *result.Result) Panel {
	c := timeChart("latency", "Latency per interval, corrected (from the due time)", "us", true, r, latencySeries(r, false)...)
	raw := timeChart("latency_raw", "Latency per interval, raw (from the actual write)", "us", true, r, latencySeries(r, true)...)
	return Panel{ID: "latency", Title: "Latency over time",
		Intro: "Per interval of the measure window (log axis). Corrected latency counts from each message's due time, so a late send still counts the wait a slow broker caused (coordinated omission corrected); raw counts from the actual write.",
		Charts: []Chart{c.finish("no latency recorded in the measure window"),
			raw.finish("no raw latency in this result: it needs the write time in the payload, which payloads of 24 bytes and more carry (this run's were smaller)")}}
}

func spectrumPanel(r *result.Result) Panel {
	xs, cor := Spectrum(r.Histograms.Latency)
	xr, raw := Spectrum(r.Histograms.LatencyRaw)
	if len(xr) > len(xs) {
		xs = xr
	}
	c := &Chart{ID: "spectrum", Title: "Latency by percentile, the whole measure window", X: xs, XKind: "spectrum", YUnit: "us", YLog: true,
		Series: []Series{{Label: "corrected", Color: Color(0), Values: pad(cor, len(xs))}, {Label: "raw", Color: Color(1), Dash: true, Values: pad(raw, len(xs))}},
		Note:   "x = 1/(1−p) on a log axis, as HdrHistogram's plotter and wrk2 draw it; computed from the result's histograms."}
	return Panel{ID: "spectrum", Title: "Percentile spectrum", Charts: []Chart{c.finish("no latency recorded in the measure window")}}
}

// pad extends v with NaN to n values.
func pad(v []float64, n int) Values {
	out := make(Values, n)
	for i := range out {
		out[i] = math.NaN()
		if i < len(v) {
			out[i] = v[i]
		}
	}
	return out
}

func connectionsPanel(r *result.Result) Panel {
	est := timeChart("conn_established", "Connections established (open sessions)", "count", false, r,
		series(r, "established", 0, func(iv *result.Interval) float64 { return float64(iv.Established) }),
		series(r, "failed", 2, func(iv *result.Interval) float64 { return float64(iv.Failed) }),
		series(r, "dropped", 3, func(iv *result.Interval) float64 { return float64(iv.Dropped) }))
	rate := timeChart("conn_rate", "Connect rate", "per_s", false, r,
		series(r, "CONNACKs per second", 4, func(iv *result.Interval) float64 { return iv.ConnectPerS }))
	if r.Connections.Established == 0 {
		rate.Series = nil
	}
	xs, v := Spectrum(r.Histograms.ConnectLatency)
	sp := &Chart{ID: "connect_spectrum", Title: "Connect latency by percentile (TCP start to CONNACK)", X: xs, XKind: "spectrum", YUnit: "us", YLog: true,
		Series: []Series{{Label: "connect latency", Color: Color(4), Values: v}}}
	return Panel{ID: "connections", Title: "Connections",
		Charts: []Chart{est.finish("no interval recorded"), rate.finish("no connection established"), sp.finish("no connect latency recorded")}}
}

func deliveryPanel(r *result.Result) Panel {
	p := Panel{ID: "delivery", Title: "Delivery"}
	if !messaging(r) {
		p.Empty = "no messages in this run (a Connections scenario)"
		return p
	}
	m := &r.Messages
	bad := func(n int64) string {
		if n > 0 {
			return "bad"
		}
		return ""
	}
	warn := func(n int64) string {
		if n > 0 {
			return "warn"
		}
		return ""
	}
	p.Rows = []Row{
		{"scheduled", fmt.Sprint(m.Scheduled), ""},
		{"published (written)", fmt.Sprint(m.Published), ""},
		{"acknowledged (QoS 1/2)", fmt.Sprint(m.Acked), ""},
		{"never acknowledged (QoS 1/2)", fmt.Sprintf("%d%s", m.Unacknowledged, countfmt.ByCause(m.UnacknowledgedBy)), bad(m.Unacknowledged)},
		{"unsent", fmt.Sprintf("%d%s", m.UnsentTotal, countfmt.ByCause(m.Unsent)), warn(m.UnsentTotal)},
		{"expected copies", knownCount(m.Expected, m.ExpectedUnknown), ""},
		{"received", fmt.Sprint(m.Received), ""},
		{"lost", knownCount(m.Lost, m.ExpectedUnknown), bad(m.Lost)},
		{"owed at the end (still arriving when the drain ended)", fmt.Sprintf("%d at %d/s", m.OwedAtEnd, m.OwedArrivalPerS), warn(m.OwedAtEnd)},
		{"in flight at the end", fmt.Sprint(m.InFlightAtEnd), warn(m.InFlightAtEnd)},
		{"in flight when a session ended", fmt.Sprintf("%d lost of %d dropped", m.InFlightLost, m.InFlightDropped), warn(m.InFlightLost)},
		{"duplicated", fmt.Sprint(m.Duplicated), warn(m.Duplicated)},
		{"out of order", fmt.Sprint(m.OutOfOrder), warn(m.OutOfOrder)},
		{"unexpected (never offsets a loss)", fmt.Sprintf("%d%s", m.UnexpectedTotal, countfmt.ByCause(m.Unexpected)), warn(m.UnexpectedTotal)},
		{"unmeasured (no mqblast header)", fmt.Sprint(m.Unmeasured), warn(m.Unmeasured)},
		{"subscriptions", fmt.Sprintf("%d made, %d refused%s", m.Subscribed, m.SubscribeFailed, countfmt.ByCause(m.SubscribeRefused)), bad(m.SubscribeFailed)},
	}
	// The counts that are absent when 0 (what some brokers do), after duplicated.
	var more []Row
	if m.Retained > 0 {
		more = append(more, Row{"retained at a subscription", fmt.Sprint(m.Retained), fmt.Sprintf("%d the client had: not duplicates", m.RetainedAgain)})
	}
	if m.Redelivered > 0 {
		more = append(more, Row{"redelivered (QoS 1 permits it)", fmt.Sprint(m.Redelivered), ""})
	}
	if m.RefusedCopies > 0 {
		more = append(more, Row{"not delivered: refused by the broker", fmt.Sprint(m.RefusedCopies), ""})
	}
	if m.ResponsesUnsent > 0 {
		more = append(more, Row{"not answered: a responder's window was full", fmt.Sprint(m.ResponsesUnsent), ""})
	}
	if m.NotSharedCopies > 0 {
		more = append(more, Row{"not delivered: $share/ on a broker that does not share", fmt.Sprint(m.NotSharedCopies), ""})
	}
	if len(more) > 0 {
		i := slices.IndexFunc(p.Rows, func(r Row) bool { return r.Key == "duplicated" }) + 1
		p.Rows = slices.Insert(p.Rows, i, more...)
	}
	p.Intro = "Every message of the run, warm-up and drain included: scheduled = published + unsent; expected = received + lost + in flight."
	return p
}

func clientPanel(r *result.Result) Panel {
	cpu := timeChart("client_cpu", "Client CPU (100% = one core)", "percent", false, r,
		series(r, "client CPU", 0, func(iv *result.Interval) float64 { return nz(iv.ClientCPUPercent) }))
	rss := timeChart("client_rss", "Client resident memory", "bytes", false, r,
		series(r, "client RSS", 1, func(iv *result.Interval) float64 { return nz(float64(iv.ClientRSSBytes)) }))
	lagOf := func(f func(p *result.Percentiles) int64) func(iv *result.Interval) float64 {
		return func(iv *result.Interval) float64 {
			if iv.ScheduleLagUS.Count == 0 {
				return math.NaN()
			}
			return nz(float64(f(&iv.ScheduleLagUS)))
		}
	}
	lag := timeChart("schedule_lag", "Schedule lag per interval: the client's own lateness in building messages (log axis)", "us", true, r,
		series(r, "p50", 0, lagOf(func(p *result.Percentiles) int64 { return p.P50 })),
		series(r, "p99", 2, lagOf(func(p *result.Percentiles) int64 { return p.P99 })),
		series(r, "max", 3, lagOf(func(p *result.Percentiles) int64 { return p.Max })))
	intro := fmt.Sprintf("%d cores on %s, %d process(es).", r.Host.Cores, cmpOr(r.Host.Hostname, "the client host"), max(r.Host.Procs, 1))
	if d := r.Client.RunDelayS; d > 0 {
		intro += fmt.Sprintf(" Its threads waited %.2f s for a CPU during the measure window.", d)
	}
	return Panel{ID: "client", Title: "Client (the load generator)", Intro: intro,
		Charts: []Chart{cpu.finish("client CPU not sampled in this result"), rss.finish("client RSS not sampled in this result"),
			lag.finish("no message was built in any interval (no publishers), or the result predates per-interval schedule lag")}}
}

func brokerHostPanel(r *result.Result) Panel {
	p := Panel{ID: "broker", Title: "Broker process, host and kernel counters"}
	src := "/proc"
	if b := r.BrokerProcess; b != nil && b.Source != "" {
		src = b.Source
	}
	cpu := timeChart("broker_cpu", "Broker CPU (100% = one core)", "percent", false, r,
		series(r, "broker CPU ("+src+")", 2, func(iv *result.Interval) float64 { return nz(iv.BrokerCPUPercent) }))
	rss := timeChart("broker_rss", "Broker resident memory", "bytes", false, r,
		series(r, "broker RSS", 3, func(iv *result.Interval) float64 { return nz(float64(iv.BrokerRSSBytes)) }))
	if h := r.BrokerHost; h != nil && h.Process != nil { // an endpoint's figures beside /proc's
		cpu.Series = append(cpu.Series, series(r, "broker CPU ("+h.Process.Source+")", 4, func(iv *result.Interval) float64 {
			if iv.BrokerHost == nil || !iv.BrokerHost.HasProcess {
				return math.NaN()
			}
			return iv.BrokerHost.ProcessCPUPercent
		}))
		cpu.Series[len(cpu.Series)-1].Dash = true
	}
	why := "the broker process was not sampled (a remote broker: give --broker-metrics with process-exporter's URL, or --broker-pid when it is local)"
	p.Charts = []Chart{cpu.finish(why), rss.finish(why)}
	if h := r.BrokerHost; h != nil {
		p.Intro = fmt.Sprintf("The broker's host as its Prometheus endpoints said, scraped once per interval; %d intervals have a gap (a failed scrape): "+
			"they are left out, never guessed.", h.Gaps)
		hostWhy := "no endpoint served node_exporter's figures"
		hcpu := timeChart("broker_host_cpu", "Broker host CPU (100% = every CPU busy)", "percent", false, r,
			series(r, "host CPU", 2, func(iv *result.Interval) float64 {
				return hostFig(iv, func(b *result.IntervalBrokerHost) float64 { return b.CPUPercent })
			}))
		net := timeChart("broker_host_net", "Broker host network (every device but lo)", "bytes", false, r,
			series(r, "in per s", 0, func(iv *result.Interval) float64 {
				return hostFig(iv, func(b *result.IntervalBrokerHost) float64 { return b.RxBytesPerS })
			}),
			series(r, "out per s", 1, func(iv *result.Interval) float64 {
				return hostFig(iv, func(b *result.IntervalBrokerHost) float64 { return b.TxBytesPerS })
			}))
		mem := timeChart("broker_host_mem", "Broker host memory used", "bytes", false, r,
			series(r, "used", 3, func(iv *result.Interval) float64 {
				return hostFig(iv, func(b *result.IntervalBrokerHost) float64 { return b.MemUsedBytes })
			}))
		p.Charts = append(p.Charts, hcpu.finish(hostWhy), net.finish(hostWhy), mem.finish(hostWhy))
		var ss []Series
		for i, k := range sortedKeys(h.Series) {
			ss = append(ss, series(r, k, i, func(iv *result.Interval) float64 {
				if iv.BrokerHost == nil {
					return math.NaN()
				}
				v, ok := iv.BrokerHost.Series[k]
				if !ok {
					return math.NaN()
				}
				return v
			}))
		}
		if len(ss) > 0 {
			sc := timeChart("broker_series", "Broker series (--broker-metric: a counter's rate per second, a gauge's value)", "count", false, r, ss...)
			p.Charts = append(p.Charts, sc.finish("no --broker-metric series had a value"))
		}
		t := Table{Caption: "Broker metrics endpoints", Head: []string{"endpoint", "recognised as", "scrapes ok", "failed", "slowest ms", "last error"}}
		for _, s := range h.Sources {
			t.Rows = append(t.Rows, []string{s.URL, strings.Join(s.Kinds, ", "), fmt.Sprint(s.ScrapesOK), fmt.Sprint(s.Failed),
				fmt.Sprintf("%.1f", s.TookMSMax), s.LastError})
		}
		p.Tables = append(p.Tables, t)
	}
	if b := r.BrokerBusy; b != nil && b.Busy {
		p.Tables = append(p.Tables, Table{Caption: "The broker's CPU was the limit", Head: []string{"evidence"}, Rows: rowsOf(b.Evidence)})
	}
	if len(r.BrokerBehaviour) > 0 {
		t := Table{Caption: "What the broker did differently from what the plan asked", Head: []string{"what", "count", "in words", "as the client saw it"}}
		for _, b := range r.BrokerBehaviour {
			t.Rows = append(t.Rows, []string{termtext.Line(b.What), fmt.Sprint(b.Count), termtext.Line(b.Evidence), termtext.Line(b.Example)})
		}
		p.Tables = append([]Table{t}, p.Tables...)
	}
	keys := map[string]bool{}
	for _, iv := range r.Intervals {
		for k := range iv.Kernel {
			keys[k] = true
		}
	}
	var ks []Series
	for i, k := range sortedKeys(keys) {
		ks = append(ks, series(r, k, i, func(iv *result.Interval) float64 { return nz(float64(iv.Kernel[k])) }))
	}
	kc := timeChart("kernel", "Kernel counter deltas per interval (log axis; zero not drawn)", "count", true, r, ks...)
	p.Charts = append(p.Charts, kc.finish("no kernel counter moved in any interval (or they were not sampled)"))
	if r.BrokerSys != nil {
		perS := func(k string) func(iv *result.Interval) float64 {
			return func(iv *result.Interval) float64 {
				if iv.BrokerSys == nil {
					return math.NaN()
				}
				return iv.BrokerSys.PerS[k]
			}
		}
		sc := timeChart("broker_sys", "The broker's own PUBLISH counts per second ($SYS, as fresh as its refresh)", "msg/s", false, r,
			series(r, "publish received", 0, perS(result.SysPublishReceived)), series(r, "publish sent", 1, perS(result.SysPublishSent)))
		sc.Series[1].Dash = true // over "received", which it covers when every message has one subscriber
		p.Charts = append(p.Charts, sc.finish("the broker published no $SYS/broker/publish/messages counters"))
		p.Lists = append(p.Lists, List{"Broker $SYS (--broker-sys): the broker's own counts over the run", "", brokerSysLines(r)})
	}
	if k := r.Kernel; k != nil {
		t := Table{Caption: "Kernel counters over the run (those that moved; tcp_mem_* are gauges, in pages)", Head: []string{"counter", "client host", "broker host"}}
		names := map[string]bool{}
		for n, v := range k.Client {
			names[n] = names[n] || v != 0
		}
		for n, v := range k.Broker {
			names[n] = names[n] || v != 0
		}
		for _, n := range sortedKeys(names) {
			if !names[n] {
				continue
			}
			b := "same host"
			if !k.SameNamespace {
				b = fmt.Sprint(k.Broker[n])
			}
			t.Rows = append(t.Rows, []string{n, fmt.Sprint(k.Client[n]), b})
		}
		if len(t.Rows) > 0 {
			p.Tables = append(p.Tables, t)
		}
	}
	return p
}

func scenarioPanel(r *result.Result) Panel {
	p := Panel{ID: "scenario", Title: "Effective scenario"}
	var b bytes.Buffer
	if len(r.Scenario) == 0 || json.Indent(&b, r.Scenario, "", "  ") != nil {
		p.Empty = "the result does not hold its scenario"
		return p
	}
	p.Pre = b.String()
	return p
}

// knownCount writes n, or "unknown" when the run does not know it (messages.expected_unknown).
func knownCount(n int64, unknown bool) string {
	if unknown {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// hostFig is f of the interval's broker host figures, or NaN where the interval has none
// (a gap, or no node_exporter gave them).
func hostFig(iv *result.Interval, f func(b *result.IntervalBrokerHost) float64) float64 {
	if iv.BrokerHost == nil || !iv.BrokerHost.HasHost {
		return math.NaN()
	}
	return f(iv.BrokerHost)
}

// rowsOf returns one single-cell row per line.
func rowsOf(lines []string) [][]string {
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = []string{l}
	}
	return rows
}
