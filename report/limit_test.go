package report

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// TestLimitLinesConnect: a connect-rate search speaks in connections per second with no
// per-publisher figure; one whose clients ran out before a step failed says that no limit
// was found and gives the rate as a floor, and one that ran out while bisecting says the
// precision was not reached.
func TestLimitLinesConnect(t *testing.T) {
	l := &result.Limit{Found: true, Sustained: 2000, SustainedPerClient: 2000, Vary: result.VaryConnectionRate,
		SLO: []string{"connect_latency_us.p99<100000"}, Ended: "clients_exhausted", LowerBound: true, Fix: "raise parameters.clients",
		Steps: []result.LimitStep{{Rate: 1000, OK: true}, {Index: 1, Rate: 2000, OK: true}}}
	got := strings.Join(LimitLines(l), "\n")
	for _, want := range []string{"no limit found", "at least 2,000 connections/s", "raise parameters.clients"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "publisher") || strings.Contains(got, "msg/s") || strings.HasPrefix(got, "sustains") {
		t.Errorf("a connect search's answer in messages or per publisher, or given as a limit:\n%s", got)
	}
	l.FirstFailed, l.Reached, l.FailedSLO = 2800, 0.4, []string{"connect_latency_us.p99<100000 (was 191615)"}
	got = strings.Join(LimitLines(l), "\n")
	for _, want := range []string{"sustains 2,000 connections/s within", "at 2,800 connections/s", "the clients ran out before the precision"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
	p := limitPanel(&result.Result{Limit: l})
	if len(p.Charts) != 3 || p.Charts[1].Title != "Connect latency against offered (log axis)" || p.Tables[0].Head[1] != "offered connections/s" {
		t.Errorf("the panel of a connect search: %q, %q", p.Charts[1].Title, p.Tables[0].Head)
	}
}
