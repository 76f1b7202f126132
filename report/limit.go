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
	unit := l.Unit()
	per := func(v float64) string { // the per-publisher rate beside a total
		if l.Connect() || l.Count() {
			return ""
		}
		return " (" + RateText(v) + " per publisher)"
	}
	var out []string
	switch {
	case !l.Found && len(l.Steps) == 0:
		out = append(out, "no step ran: no answer")
	case l.Ended == "broker_gone" && !l.Found:
		out = append(out, "the broker went away during the search, before any step held: no answer")
	case l.Ended == "broker_gone":
		out = append(out, fmt.Sprintf("the broker went away during the search: no limit found; the steps before held up to %s %s%s within %s",
			RateText(l.Sustained), unit, per(l.SustainedPerClient), slo))
	case !l.Found:
		out = append(out, fmt.Sprintf("even the start rate %s %s%s failed %s: %s", RateText(l.FirstFailed), unit,
			per(l.FirstFailedPerClient), slo, strings.Join(l.FailedSLO, "; ")))
	case l.Ended == "clients_exhausted" && l.FirstFailed == 0:
		out = append(out, fmt.Sprintf("no limit found: every step held within %s until the clients ran out; the broker sustains at least %s %s",
			slo, RateText(l.Sustained), unit))
	default:
		out = append(out, fmt.Sprintf("sustains %s %s%s within %s", RateText(l.Sustained), unit, per(l.SustainedPerClient), slo))
		if l.FirstFailed > 0 && l.Count() {
			out = append(out, fmt.Sprintf("at %s %s: %s (%.1f %% above: a count search climbs by --factor and does not bisect below the connections it holds)",
				RateText(l.FirstFailed), unit, strings.Join(l.FailedSLO, "; "), 100*l.Reached))
		} else if l.FirstFailed > 0 {
			out = append(out, fmt.Sprintf("at %s %s: %s (%.1f %% above; precision asked %.0f %%)", RateText(l.FirstFailed), unit,
				strings.Join(l.FailedSLO, "; "), 100*l.Reached, 100*l.Precision))
		}
	}
	switch l.Ended {
	case "clients_exhausted":
		if l.FirstFailed > 0 {
			out = append(out, "the clients ran out before the precision asked: raise parameters.clients or shorten --step")
		}
	case "max_rate":
		out = append(out, "every step up to --max-rate held: the limit is higher")
	case "max_duration":
		if l.Found && l.FirstFailed > 0 && l.Reached <= l.Precision && !l.Confirmed {
			out = append(out, "--max-duration ended the search before the answer was held once more: it is unconfirmed")
			break
		}
		out = append(out, "--max-duration ended the search before the precision asked")
	case "broker_gone":
		for _, st := range l.Steps {
			if st.BrokerGone && len(st.Failed) > 0 {
				out = append(out, fmt.Sprintf("the search stopped at step %d: %s", st.Index+1, st.Failed[0]))
				break
			}
		}
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
	if line := costLine(l); line != "" {
		out = append(out, line)
	}
	return out
}

// costLine is what each connection held cost the broker (a connection-count search), ""
// when its memory was not sampled.
func costLine(l *result.Limit) string {
	var parts []string
	if b := l.BrokerRSSPerConnBytes; b != 0 {
		parts = append(parts, fmt.Sprintf("%s of its resident set", bytesText(b)))
	}
	if b := l.BrokerHostMemPerConnBytes; b != 0 {
		parts = append(parts, fmt.Sprintf("%s of its host's memory", bytesText(b)))
	}
	if b := l.BrokerKernelPerConnBytes; b != 0 {
		parts = append(parts, fmt.Sprintf("%s of it the kernel's", bytesText(b)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "each connection held cost the broker " + strings.Join(parts, ", ")
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
		if l.Count() {
			fmt.Fprintf(tw, "step %d\t%s connections asked, %s held, connect p99 %s, failed %d, dropped %d: %s\n", st.Index+1,
				RateText(st.Rate), countfmt.Thousands(st.Held), result.Micros(st.ConnectLatencyUS.P99), st.Connections.Failed,
				st.BrokerStalled.Dropped, termtext.Line(v))
			continue
		}
		if l.Connect() {
			fmt.Fprintf(tw, "step %d\t%s connections/s offered, %s established/s, connect p99 %s, failed %d, dropped %d: %s\n", st.Index+1,
				RateText(st.Rate), RateText(st.Connections.ConnectPerS), result.Micros(st.ConnectLatencyUS.P99), st.Connections.Failed,
				st.BrokerStalled.Dropped, termtext.Line(v))
			continue
		}
		fmt.Fprintf(tw, "step %d\t%s msg/s offered, %s arrived, p99 %s, lost %d, unsent %d: %s\n", st.Index+1, RateText(st.Rate),
			RateText(st.Throughput.ReceivePerS), result.Micros(st.LatencyUS.P99), st.Messages.Lost, st.Messages.UnsentTotal, termtext.Line(v))
	}
}

// stepVerdict is a step's verdict in words: "holds", its failed SLOs after fails, that a
// failure was overruled by its repeat, or that a step that held was overruled (its rate
// failed twice).
func stepVerdict(st result.LimitStep, fails string) string {
	switch {
	case st.Overruled && st.OK:
		return "held, overruled: two steps at this rate failed (not sustained)"
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
	title := "Limit search"
	if l.Kind != "" {
		title += ": " + l.Kind + " (" + l.Unit() + ")"
	}
	p := Panel{ID: "limit", Title: title, Lists: []List{{"The answer", "", LimitLines(l)}}}
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
		ach, lat, lo, un := st.Throughput.ReceivePerS, st.LatencyUS, st.Messages.Lost, st.Messages.UnsentTotal
		if l.Connect() {
			ach, lat, lo, un = st.Connections.ConnectPerS, st.ConnectLatencyUS, st.Connections.Failed, st.BrokerStalled.Dropped
		}
		if l.Count() {
			ach, lat, lo, un = float64(st.Held), st.ConnectLatencyUS, st.Connections.Failed, st.BrokerStalled.Dropped
		}
		achieved = append(achieved, ach)
		p50, p99, pmax = append(p50, nz(float64(lat.P50))), append(p99, nz(float64(lat.P99))), append(pmax, nz(float64(lat.Max)))
		lost, unsent = append(lost, float64(lo)), append(unsent, float64(un))
	}
	chart := func(id, title, unit string, ylog bool, s ...Series) Chart {
		c := &Chart{ID: id, Title: title, X: xs, XKind: "offered", YUnit: unit, YLog: ylog, Series: s}
		return c.finish("no step ran")
	}
	words := [...]string{"Arrived against offered (the dashed diagonal: all of it arrives)", "arrived", "Latency against offered (log axis)",
		"Lost and unsent against offered", "lost", "unsent", "offered msg/s", "per publisher", "arrived msg/s"}
	if l.Connect() {
		words = [...]string{"Established against offered (the dashed diagonal: every connection at its rate)", "established",
			"Connect latency against offered (log axis)", "Failed connects and dropped connections against offered", "failed", "dropped",
			"offered connections/s", "per run", "established/s"}
	}
	if l.Count() {
		words = [...]string{"Held against asked (the dashed diagonal: every connection asked is open)", "held",
			"Connect latency against connections asked (log axis)", "Failed connects and dropped connections against connections asked",
			"failed", "dropped", "connections asked", "per run", "held"}
	}
	ach := chart("limit_achieved", words[0], "per_s", false,
		Series{Label: words[1], Color: Color(1), Values: achieved}, Series{Label: "offered", Color: Color(0), Dash: true, Values: diag})
	lat := chart("limit_latency", words[2], "us", true,
		Series{Label: "p50", Color: Color(0), Values: p50}, Series{Label: "p99", Color: Color(2), Values: p99},
		Series{Label: "max", Color: Color(3), Values: pmax})
	loss := chart("limit_loss", words[3], "count", false,
		Series{Label: words[4], Color: Color(3), Values: lost}, Series{Label: words[5], Color: Color(4), Dash: true, Values: unsent})
	p.Charts = []Chart{ach, lat, loss}
	t := Table{Caption: "Steps in the order they ran", Head: []string{"step", words[6], words[7], words[8],
		"p50", "p99", "max", words[4], words[5], "broker cpu", "client cpu", "verdict"}}
	for _, st := range l.Steps {
		v := stepVerdict(st, "fails: ")
		bc := "–"
		if st.BrokerCPUPercent > 0 {
			bc = fmt.Sprintf("%.0f%%", st.BrokerCPUPercent)
		}
		ach, lat, lo, un := st.Throughput.ReceivePerS, st.LatencyUS, st.Messages.Lost, st.Messages.UnsentTotal
		if l.Connect() {
			ach, lat, lo, un = st.Connections.ConnectPerS, st.ConnectLatencyUS, st.Connections.Failed, st.BrokerStalled.Dropped
		}
		if l.Count() {
			ach, lat, lo, un = float64(st.Held), st.ConnectLatencyUS, st.Connections.Failed, st.BrokerStalled.Dropped
		}
		t.Rows = append(t.Rows, []string{fmt.Sprint(st.Index + 1), RateText(st.Rate), RateText(st.PerClient), RateText(ach),
			result.Micros(lat.P50), result.Micros(lat.P99), result.Micros(lat.Max), fmt.Sprint(lo),
			fmt.Sprint(un), bc, fmt.Sprintf("%.0f%%", st.ClientCPUPercent), v})
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
