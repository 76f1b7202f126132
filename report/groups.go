package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/mqblast/mqblast/result"
)

// groupsPanel is a mixed run's panel: a table of each group's figures, and time charts
// with one series per group (the charts' legends pick the groups shown).
func groupsPanel(r *result.Result) Panel {
	p := Panel{ID: "groups", Title: "Groups",
		Intro: "Each client group's connections (of its clients), the messages its clients published, wherever they arrived, " +
			"and the copies its own clients received. The groups add up to the run."}
	t := Table{Head: []string{"group", "behaviours", "clients", "connected", "failed", "dropped", "reconnected", "reconnect p99",
		"published", "unsent", "expected", "received", "lost", "latency p50", "latency p99", "its clients received", "storm"}}
	for i := range r.Groups {
		g := &r.Groups[i]
		c, m := &g.Connections, &g.Messages
		dash := func(ok bool, s string) string {
			if !ok {
				return "–"
			}
			return s
		}
		pub := g.Publishers > 0
		lat := func(v int64) string { return dash(g.LatencyUS.Count > 0, FormatUS(v)) }
		recon := "–"
		if h := c.ReconnectLatencyUS; h != nil {
			recon = FormatUS(h.P99)
		}
		storm := "–"
		if ch := g.Churn; ch != nil {
			kind := "persistent"
			if ch.Clean {
				kind = "clean"
			}
			storm = fmt.Sprintf("+%gs: %d of %d ended (%s)", ch.AtS, ch.Ended, ch.Clients, kind)
			if ch.RatePerS > 0 {
				storm = fmt.Sprintf("from +%gs, %g/s of %d: %d ended (%s)", ch.AtS, ch.RatePerS, ch.Clients, ch.Ended, kind)
			}
		}
		t.Rows = append(t.Rows, []string{g.Name, strings.Join(g.Behaviours, "+"), fmt.Sprint(g.Clients),
			fmt.Sprint(c.Established), fmt.Sprint(c.Failed), fmt.Sprint(c.Dropped), fmt.Sprint(c.Reconnected), recon,
			dash(pub, fmt.Sprint(m.Published)), dash(pub, fmt.Sprint(m.UnsentTotal)),
			dash(pub, knownCount(m.Expected, m.ExpectedUnknown)), dash(pub, fmt.Sprint(m.Received)),
			dash(pub, knownCount(m.Lost, m.ExpectedUnknown)), lat(g.LatencyUS.P50), lat(g.LatencyUS.P99),
			fmt.Sprint(g.Delivered), storm})
	}
	p.Tables = append(p.Tables, t)
	by := func(f func(g *result.GroupInterval) float64) []Series {
		var out []Series
		for k := range r.Groups {
			out = append(out, series(r, r.Groups[k].Name, k, func(iv *result.Interval) float64 {
				if k >= len(iv.Groups) {
					return math.NaN()
				}
				return f(&iv.Groups[k])
			}))
		}
		return out
	}
	p.Charts = append(p.Charts,
		timeChart("group_p99", "Latency p99 per interval, by group (corrected)", "us", true, r, by(func(g *result.GroupInterval) float64 {
			if g.LatencyUS.Count == 0 {
				return math.NaN()
			}
			return float64(g.LatencyUS.P99)
		})...).finish("no group's messages were measured"),
		timeChart("group_publish", "Messages published per second, by group", "per_s", false, r, by(func(g *result.GroupInterval) float64 {
			return g.PublishPerS
		})...).finish("no group published"),
		timeChart("group_delivered", "Copies its clients received per interval, by group", "count", false, r, by(func(g *result.GroupInterval) float64 {
			return float64(g.Delivered)
		})...).finish("no group's clients received anything"),
		timeChart("group_connects", "Connects and reconnects per interval, by group", "count", false, r, by(func(g *result.GroupInterval) float64 {
			return float64(g.Connected + g.Reconnected)
		})...).finish("no group connected"),
	)
	return p
}
