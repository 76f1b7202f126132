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

// TestCompareLimits: compare puts two brokers' limits side by side: what each searched,
// what it sustained and where it failed in the search's unit, who set it, and for a count
// what each connection cost; the higher sustained of one kind is marked, and limits of
// different kinds are not ranked. Results without a limit add no such rows.
func TestCompareLimits(t *testing.T) {
	a := &result.Result{Broker: []string{"a:1883"}, Limit: &result.Limit{Kind: result.KindConnections, Found: true, Sustained: 200,
		FirstFailed: 400, LimitedBy: "broker", BrokerRSSPerConnBytes: 808}}
	b := &result.Result{Broker: []string{"b:1883"}, Limit: &result.Limit{Kind: result.KindConnections, Found: true, Sustained: 3200,
		LimitedBy: "", LowerBound: true, Ended: "max_rate"}}
	rows := func(tb Table) map[string][]string {
		m := map[string][]string{}
		for i, r := range tb.Rows {
			m[r[0]] = r[1:]
			if r[0] == "limit sustained" {
				m["marks"] = []string{boolsText(tb.Marks[i][1:])}
			}
		}
		return m
	}
	got := rows(CompareTable([]Input{{"a.json", a}, {"b.json", b}}))
	want := map[string]string{"limit kind": "connections|connections", "limit sustained": "200 connections|3,200 connections (lower bound)",
		"limit first failed": "400 connections|none", "limit limited by": "broker|–", "limit broker rss per connection": "808 B|–", "marks": "false true"}
	for k, w := range want {
		if g := strings.Join(got[k], "|"); g != w {
			t.Errorf("%s: %q, want %q", k, g, w)
		}
	}
	b.Limit = &result.Limit{Vary: result.VaryConnectionRate, Found: true, Sustained: 4500, FirstFailed: 5000, LimitedBy: "host"}
	got = rows(CompareTable([]Input{{"a.json", a}, {"b.json", b}}))
	if k, s := strings.Join(got["limit kind"], "|"), strings.Join(got["limit sustained"], "|"); k != "connections|connect-rate" ||
		s != "200 connections|4,500 connections/s" || got["marks"][0] != "false false" {
		t.Errorf("two kinds: %q, %q, marks %q", k, s, got["marks"])
	}
	got = rows(CompareTable([]Input{{"a.json", &result.Result{Broker: []string{"a"}}}, {"b.json", &result.Result{Broker: []string{"b"}}}}))
	if _, ok := got["limit kind"]; ok {
		t.Errorf("results without a limit have limit rows")
	}
}

func boolsText(b []bool) string {
	s := make([]string, len(b))
	for i, v := range b {
		s[i] = map[bool]string{true: "true", false: "false"}[v]
	}
	return strings.Join(s, " ")
}
