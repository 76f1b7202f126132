package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// LimitLines returns the answer of a search for the broker's limit in words, one line each:
// what it sustains within the SLO, what failed above it, who set the limit and what to do
// when it was not the broker.
func LimitLines(l *result.Limit) []string {
	slo := strings.Join(l.SLO, " and ")
	var out []string
	switch {
	case !l.Found && len(l.Steps) == 0:
		out = append(out, "no step ran: no answer")
	case !l.Found:
		out = append(out, fmt.Sprintf("even the start rate %s msg/s (%s per publisher) failed %s: %s", RateText(l.FirstFailed),
			RateText(l.FirstFailedPerClient), slo, strings.Join(l.FailedSLO, "; ")))
	default:
		out = append(out, fmt.Sprintf("sustains %s msg/s (%s per publisher) within %s", RateText(l.Sustained), RateText(l.SustainedPerClient), slo))
		if l.FirstFailed > 0 {
			out = append(out, fmt.Sprintf("at %s msg/s: %s (%.1f %% above; precision asked %.0f %%)", RateText(l.FirstFailed),
				strings.Join(l.FailedSLO, "; "), 100*l.Reached, 100*l.Precision))
		}
	}
	switch l.Ended {
	case "max_rate":
		out = append(out, "every step up to --max-rate held: the limit is higher")
	case "max_duration":
		out = append(out, "--max-duration ended the search before the precision asked")
	case "interrupted":
		out = append(out, "interrupted: the answer is what was known then")
	}
	if l.LimitedBy != "" {
		line := "limited by the " + l.LimitedBy
		if len(l.Evidence) > 0 {
			line += " (" + strings.Join(l.Evidence, "; ") + ")"
		}
		out = append(out, line)
	}
	if l.Fix != "" {
		out = append(out, l.Fix)
	}
	return out
}

// RateText is a rate with the digits it needs: 41,800, 258, 12.5.
func RateText(v float64) string {
	if v >= 100 {
		return countfmt.Thousands(int64(math.Round(v)))
	}
	return fmt.Sprintf("%.3g", v)
}

// writeLimit writes the search's answer and its steps in the text summary.
func writeLimit(tw io.Writer, r *result.Result) {
	l := r.Limit
	if l == nil {
		return
	}
	for i, line := range LimitLines(l) {
		head := ""
		if i == 0 {
			head = "LIMIT"
		}
		fmt.Fprintf(tw, "%s\t%s\n", head, termtext.Line(line))
	}
	for _, st := range l.Steps {
		v := stepVerdict(st, "FAILS ")
		fmt.Fprintf(tw, "step %d\t%s msg/s offered, %s arrived, p99 %s, lost %d, unsent %d: %s\n", st.Index+1, RateText(st.Rate),
			RateText(st.Throughput.ReceivePerS), result.Micros(st.LatencyUS.P99), st.Messages.Lost, st.Messages.UnsentTotal, termtext.Line(v))
	}
}

// stepVerdict is a step's verdict in words: "holds", its failed SLOs after fails, or that a
// failure was overruled by its repeat.
func stepVerdict(st result.LimitStep, fails string) string {
	switch {
	case st.Overruled:
		return "failed, then held on its repeat: " + strings.Join(st.Failed, "; ")
	case !st.OK:
		return fails + strings.Join(st.Failed, "; ")
	}
	return "holds"
}

// limitPanel draws a search's steps against the rate they offered: achieved against
// offered (the diagonal and where it bends), latency on a log axis, loss and unsent, and
// the steps' table.
func limitPanel(r *result.Result) Panel {
	l := r.Limit
	p := Panel{ID: "limit", Title: "Limit search", Lists: []List{{"The answer", "", LimitLines(l)}}}
	steps := slices.Clone(l.Steps)
	slices.SortStableFunc(steps, func(a, b result.LimitStep) int { return cmpFloat(a.Rate, b.Rate) })
	var xs []float64
	var achieved, diag, p50, p99, pmax, lost, unsent Values
	for _, st := range steps {
		if n := len(xs); n > 0 && xs[n-1] == st.Rate { // the same rate probed again: its last probe
			xs, achieved, diag, p50, p99, pmax, lost, unsent = xs[:n-1], achieved[:n-1], diag[:n-1], p50[:n-1], p99[:n-1], pmax[:n-1], lost[:n-1], unsent[:n-1]
		}
		xs = append(xs, st.Rate)
		diag = append(diag, st.Rate)
		achieved = append(achieved, st.Throughput.ReceivePerS)
		p50, p99, pmax = append(p50, nz(float64(st.LatencyUS.P50))), append(p99, nz(float64(st.LatencyUS.P99))), append(pmax, nz(float64(st.LatencyUS.Max)))
		lost, unsent = append(lost, float64(st.Messages.Lost)), append(unsent, float64(st.Messages.UnsentTotal))
	}
	chart := func(id, title, unit string, ylog bool, s ...Series) Chart {
		c := &Chart{ID: id, Title: title, X: xs, XKind: "offered", YUnit: unit, YLog: ylog, Series: s}
		return c.finish("no step ran")
	}
	ach := chart("limit_achieved", "Arrived against offered (the dashed diagonal: all of it arrives)", "per_s", false,
		Series{Label: "arrived", Color: Color(1), Values: achieved}, Series{Label: "offered", Color: Color(0), Dash: true, Values: diag})
	lat := chart("limit_latency", "Latency against offered (log axis)", "us", true,
		Series{Label: "p50", Color: Color(0), Values: p50}, Series{Label: "p99", Color: Color(2), Values: p99},
		Series{Label: "max", Color: Color(3), Values: pmax})
	loss := chart("limit_loss", "Lost and unsent against offered", "count", false,
		Series{Label: "lost", Color: Color(3), Values: lost}, Series{Label: "unsent", Color: Color(4), Dash: true, Values: unsent})
	p.Charts = []Chart{ach, lat, loss}
	t := Table{Caption: "Steps in the order they ran", Head: []string{"step", "offered msg/s", "per publisher", "arrived msg/s",
		"p50", "p99", "max", "lost", "unsent", "broker cpu", "client cpu", "verdict"}}
	for _, st := range l.Steps {
		v := stepVerdict(st, "fails: ")
		bc := "–"
		if st.BrokerCPUPercent > 0 {
			bc = fmt.Sprintf("%.0f%%", st.BrokerCPUPercent)
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(st.Index + 1), RateText(st.Rate), RateText(st.PerClient), RateText(st.Throughput.ReceivePerS),
			result.Micros(st.LatencyUS.P50), result.Micros(st.LatencyUS.P99), result.Micros(st.LatencyUS.Max), fmt.Sprint(st.Messages.Lost),
			fmt.Sprint(st.Messages.UnsentTotal), bc, fmt.Sprintf("%.0f%%", st.ClientCPUPercent), v})
	}
	p.Tables = []Table{t}
	return p
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
