package report

import (
	"fmt"
	"io"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// SoakLines are a soak's verdict, its slopes and its rule, in the words the text summary
// and the HTML panel share.
func SoakLines(s *result.Soak) []string {
	held := "the run's load"
	if s.Rate > 0 {
		held = RateText(s.Rate) + " msg/s, the search's answer,"
	}
	lines := []string{termtext.Line(s.Verdict), fmt.Sprintf("hold: %s for %s, in %d windows of %s", held,
		result.Elapsed(s.ToS-s.FromS), len(s.Windows), result.Elapsed(s.WindowS))}
	lines = append(lines, fmt.Sprintf("latency slopes: p50 %s/h, p99 %s/h, p99.9 %s/h", signedMicros(s.LatencyP50SlopeUSPerH),
		signedMicros(s.LatencyP99SlopeUSPerH), signedMicros(s.LatencyP999SlopeUSPerH)))
	switch s.BrokerRSS {
	case "":
		lines = append(lines, "broker RSS: not watched (give --broker-pid, or --broker-metrics with the broker's process; a local broker is found)")
	default:
		src := map[string]string{"process": "its process", "broker_metrics": "its host's endpoints"}[s.BrokerRSS]
		lines = append(lines, fmt.Sprintf("broker RSS %s (from %s), CPU %+.1f %% of a core an hour", result.MiBPerHour(s.BrokerRSSSlopeBytesPerH),
			src, s.BrokerCPUSlopePercentPerH))
		if len(s.Windows) < 3 {
			lines = append(lines, fmt.Sprintf("broker RSS not judged: the memory rule leaves out the first window and needs three, this soak has %d", len(s.Windows)))
		}
	}
	for _, r := range s.Reasons {
		lines = append(lines, termtext.Line(r))
	}
	return append(lines, "rule: "+result.SoakRule)
}

// signedMicros is a slope in µs with its sign: +1.2ms, -850µs.
func signedMicros(v float64) string {
	if v < 0 {
		return "-" + result.Micros(int64(-v))
	}
	return "+" + result.Micros(int64(v))
}

// writeSoak writes a soak's verdict and its windows in the text summary.
func writeSoak(tw io.Writer, r *result.Result) {
	s := r.Soak
	if s == nil {
		return
	}
	for i, line := range SoakLines(s) {
		head := ""
		if i == 0 {
			head = "SOAK"
		}
		fmt.Fprintf(tw, "%s\t%s\n", head, line)
	}
	for i := range s.Windows {
		fmt.Fprintf(tw, "window %d\t%s\n", i+1, soakWindowLine(s, i))
	}
}

// soakWindowLine is a soak window on one line: its span from the hold's start, latency,
// losses, refusals and the broker's RSS and CPU.
func soakWindowLine(s *result.Soak, i int) string {
	w := &s.Windows[i]
	line := fmt.Sprintf("%s–%s: p50 %s, p99 %s, max %s, lost %d of %d, refusals %d", clock(w.FromS-s.FromS),
		clock(w.ToS-s.FromS), result.Micros(w.LatencyUS.P50), result.Micros(w.LatencyUS.P99), result.Micros(w.LatencyUS.Max),
		w.Lost, w.Expected, w.Refusals())
	if w.Stalled {
		line += ", broker stalled"
	}
	if w.BrokerRSSBytes > 0 {
		line += fmt.Sprintf(", broker RSS %.1f MiB", float64(w.BrokerRSSBytes)/(1<<20))
	}
	if w.BrokerCPUPercent > 0 {
		line += fmt.Sprintf(", CPU %.0f%%", w.BrokerCPUPercent)
	}
	return line
}

// clock is a span of seconds from a soak's start as a clock shows it: 0:04, 23:00, 1:05:00.
func clock(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// soakPanel draws a soak's windows against the time from the hold's start: latency, losses
// and refusals, the broker's RSS; its verdict and rule above them, the windows' table below.
func soakPanel(r *result.Result) Panel {
	s := r.Soak
	p := Panel{ID: "soak", Title: "Soak", Lists: []List{{"The verdict", "", SoakLines(s)}}}
	var xs []float64
	var p50, p99, pmax, lost, refused, rss Values
	for i := range s.Windows {
		w := &s.Windows[i]
		xs = append(xs, w.ToS-s.FromS)
		p50, p99, pmax = append(p50, nz(float64(w.LatencyUS.P50))), append(p99, nz(float64(w.LatencyUS.P99))), append(pmax, nz(float64(w.LatencyUS.Max)))
		lost, refused = append(lost, float64(w.Lost)), append(refused, float64(w.Refusals()))
		rss = append(rss, nz(float64(w.BrokerRSSBytes)))
	}
	chart := func(id, title, unit string, ylog bool, ser ...Series) Chart {
		c := &Chart{ID: id, Title: title, X: xs, XKind: "time", YUnit: unit, YLog: ylog, Series: ser,
			Note: "seconds from the hold's start, at each window's end"}
		return c.finish("no window")
	}
	p.Charts = []Chart{
		chart("soak_latency", "Latency by window (log axis)", "us", true, Series{Label: "p50", Color: Color(0), Values: p50},
			Series{Label: "p99", Color: Color(2), Values: p99}, Series{Label: "max", Color: Color(3), Values: pmax}),
		chart("soak_loss", "Lost and refused by window", "count", false, Series{Label: "lost", Color: Color(3), Values: lost},
			Series{Label: "refusals", Color: Color(4), Dash: true, Values: refused}),
	}
	if s.BrokerRSS != "" {
		p.Charts = append(p.Charts, chart("soak_rss", "The broker's RSS by window", "bytes", false, Series{Label: "broker RSS", Color: Color(1), Values: rss}))
	}
	t := Table{Caption: "Windows", Head: []string{"window", "from", "to", "p50", "p99", "max", "lost", "expected", "refusals", "broker RSS", "broker cpu"}}
	for i := range s.Windows {
		w := &s.Windows[i]
		rs, cpu := "–", "–"
		if w.BrokerRSSBytes > 0 {
			rs = fmt.Sprintf("%.1f MiB", float64(w.BrokerRSSBytes)/(1<<20))
		}
		if w.BrokerCPUPercent > 0 {
			cpu = fmt.Sprintf("%.0f%%", w.BrokerCPUPercent)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(i + 1), clock(w.FromS - s.FromS), clock(w.ToS - s.FromS),
			result.Micros(w.LatencyUS.P50), result.Micros(w.LatencyUS.P99), result.Micros(w.LatencyUS.Max), fmt.Sprint(w.Lost),
			fmt.Sprint(w.Expected), fmt.Sprint(w.Refusals()), rs, cpu})
	}
	p.Tables = []Table{t}
	return p
}
