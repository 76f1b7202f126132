package grafana

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/promtest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
)

func TestMain(m *testing.M) { os.Exit(testbroker.Main(m)) }

// dashboard is the part of Grafana's dashboard model the test reads.
type dashboard struct {
	Inputs []struct {
		Name, Type string
		PluginID   string `json:"pluginId"`
	} `json:"__inputs"`
	Annotations struct {
		List []struct {
			Name       string
			Datasource struct{ Type, UID string }
			Expr       string
			BuiltIn    int `json:"builtIn"`
		}
	}
	Templating struct {
		List []struct {
			Name, Type string
			Query      json.RawMessage
			AllValue   string `json:"allValue"`
		}
	}
	Panels []struct {
		ID         int
		Type       string
		Title      string
		Datasource *struct{ Type, UID string }
		Targets    []struct {
			Expr       string
			RefID      string `json:"refId"`
			Datasource struct{ Type, UID string }
		}
	}
}

// query is one PromQL query of the dashboard: a panel's target or an annotation.
type query struct{ where, expr string }

func load(t *testing.T) (*dashboard, []query) {
	t.Helper()
	b, err := os.ReadFile("mqblast.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("mqblast.json: %v", err)
	}
	var qs []query
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			qs = append(qs, query{fmt.Sprintf("annotation %q", a.Name), a.Expr})
		}
	}
	return &d, qs
}

// TestDashboardModel: the dashboard is Grafana's model as an import expects it: one
// datasource variable DS_PROMETHEUS (and its __inputs entry) that every panel, target
// and annotation uses, unique panel ids, and only series mqblast serves (docs/outputs.md)
// or the exporters the docs name.
func TestDashboardModel(t *testing.T) {
	t.Parallel()
	d, qs := load(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs %+v, want DS_PROMETHEUS of prometheus", d.Inputs)
	}
	if v := d.Templating.List; len(v) == 0 || v[0].Name != "DS_PROMETHEUS" || v[0].Type != "datasource" || string(v[0].Query) != `"prometheus"` {
		t.Errorf("the first variable is not the prometheus datasource DS_PROMETHEUS: %+v", v)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${DS_PROMETHEUS}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${DS_PROMETHEUS}" || tg.Expr == "" {
				t.Errorf("panel %q %s: datasource %q, expr %q", p.Title, tg.RefID, tg.Datasource.UID, tg.Expr)
			}
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 && a.Datasource.UID != "${DS_PROMETHEUS}" {
			t.Errorf("annotation %q: datasource %q", a.Name, a.Datasource.UID)
		}
	}
	served := map[string]bool{}
	for _, n := range metrics.Names() {
		served[n] = true
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			served[n+s] = true
		}
	}
	named := regexp.MustCompile(`\b(mqblast|node|namedprocess)_[a-zA-Z_]+\b`)
	for _, q := range qs {
		for _, n := range named.FindAllString(q.expr, -1) {
			if strings.HasPrefix(n, "mqblast_") && !served[n] {
				t.Errorf("%s: %s is not a series mqblast serves", q.where, n)
			}
		}
	}
}

// rateWindow is what $__rate_interval is for a 1 s scrape (Grafana: four scrapes at least).
const (
	scrape     = time.Second
	rateWindow = 4 * time.Second
)

// TestDashboardQueries runs a staged run and a limit search against Mosquitto, scraped by
// a real Prometheus (with node_exporter and process-exporter beside the broker), and
// evaluates every query of the dashboard, its variables resolved as Grafana resolves them
// (label_values through Prometheus): each returns series; throughput equals the result's
// intervals over the same window (within one scrape at each end), lost, in flight and
// unsent equal the result's at the end, and the annotations name the result's stages and
// limit steps.
func TestDashboardQueries(t *testing.T) {
	d, qs := load(t)
	bin := testbroker.Binary(t, "../../cmd/mqblast")
	node := promtest.Need(t, "prometheus-node-exporter")
	procExp := promtest.Need(t, "prometheus-process-exporter")
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1")) }
	nodeAddr, procAddr, mqAddr := free(), free(), free()
	promtest.StartProgram(t, "http://"+nodeAddr+"/metrics", node, "--web.listen-address="+nodeAddr,
		"--collector.disable-defaults", "--collector.cpu", "--collector.meminfo", "--collector.stat")
	// This Mosquitto alone, by its config file (others of other tests may run).
	conf := m.Cmd.Args[len(m.Cmd.Args)-1]
	pcfg := filepath.Join(t.TempDir(), "process-exporter.yml")
	rule := fmt.Sprintf("process_names:\n  - name: mosquitto\n    cmdline:\n      - '%s'\n", strings.ReplaceAll(regexp.QuoteMeta(conf), "'", "''"))
	if err := os.WriteFile(pcfg, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	promtest.StartProgram(t, "http://"+procAddr+"/metrics", procExp, "-web.listen-address", procAddr, "-config.path", pcfg)
	p := promtest.Start(t, scrape, "mqblast="+mqAddr, "node="+nodeAddr, "process="+procAddr)

	// Prometheus scrapes its first targets a while after it is ready: wait for it, so that
	// the runs are scraped from their start.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if up, err := p.Query(`up{job="node"}`, time.Time{}); err == nil && len(up) == 1 && up[0].V == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus scrapes no target after 30s")
		}
	}
	dir := t.TempDir()
	run := func(out string, args ...string) *result.Result {
		t.Helper()
		args = append(args, "--broker", m.Addr, "--metrics", mqAddr, "--metrics-hold", "4s", "--out", out, "--no-check")
		c := exec.Command(bin, args...)
		b, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("mqblast %v: %v\n%s", args, err, b)
		}
		res, err := result.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	staged := run(filepath.Join(dir, "staged.json"), "run", "quick-p2p-100", "--stages", "6s:1,6s:3",
		"--broker-metrics", "http://"+nodeAddr+"/metrics")
	limit := run(filepath.Join(dir, "limit.json"), "limit", "quick-p2p-100", "--set", "publishers.client_count=10",
		"--set", "subscribers.client_count=10", "--slo", "messages.lost==0", "--start-rate", "100", "--max-rate", "400",
		"--step", "2s", "--settle", "1s", "--pause", "1s")
	time.Sleep(2 * scrape)

	// Grafana's variables, as it resolves them: label_values through Prometheus, All as
	// every value found.
	vals := map[string]string{"$__rate_interval": rateWindow.String(), "$__interval": scrape.String()}
	lv := regexp.MustCompile(`^label_values\((.*), *(\w+)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		sub := lv.FindStringSubmatch(subst(q.Query, vals))
		if sub == nil {
			t.Fatalf("variable %s: %q is no label_values(SELECTOR, LABEL)", v.Name, q.Query)
		}
		got, err := p.LabelValues(sub[1], sub[2])
		if err != nil || len(got) == 0 {
			t.Fatalf("variable %s: %s lists %v (%v)", v.Name, q.Query, got, err)
		}
		t.Logf("$%s = %v", v.Name, got)
		vals["$"+v.Name] = strings.Join(got, "|")
	}

	// Instants to evaluate at, found through the run's own series: the middle of each
	// stage, the end of the staged run (finished, during --metrics-hold), each limit step.
	ts := func(sel string) []float64 { // the scrapes' instants where sel is 1
		pts, err := p.Query(sel+"[10m]", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, pt := range pts {
			if pt.V == 1 {
				out = append(out, pt.T)
			}
		}
		sort.Float64s(out)
		return out
	}
	mid := func(sel string) time.Time {
		x := ts(sel)
		if len(x) == 0 {
			up := ts(`up{job="mqblast"} == 1`)
			t.Fatalf("%s: no scrape (%d scrapes of mqblast succeeded)", sel, len(up))
		}
		t.Logf("%s: %d scrapes", sel, len(x))
		return unix(x[len(x)/2])
	}
	stage0, stage1 := mid(`mqblast_run_stage{stage="0"}`), mid(`mqblast_run_stage{stage="1"}`)
	// the last scrape of each stage: a rate's window there lies in the stage
	last0, last1 := ts(`mqblast_run_stage{stage="0"}`), ts(`mqblast_run_stage{stage="1"}`)
	ends := []time.Time{unix(last0[len(last0)-1]), unix(last1[len(last1)-1])}
	var end time.Time
	if x := ts(`mqblast_run_finished{job="mqblast"}`); len(x) > 0 {
		end = unix(x[0])
	} else {
		t.Fatal("no scrape saw mqblast_run_finished 1")
	}

	eval := func(q query, at time.Time) []promtest.Sample {
		t.Helper()
		expr := subst(q.expr, vals)
		got, err := p.Query(expr, at)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		if len(got) == 0 {
			t.Errorf("%s: %s at %s returns no series", q.where, expr, at.Format(time.TimeOnly))
		}
		return got
	}
	for _, q := range qs {
		switch {
		case strings.Contains(q.where, "Limit steps"):
			for _, st := range limit.Limit.Steps {
				at := mid(fmt.Sprintf(`mqblast_limit_step{step="%d"}`, st.Index))
				got := eval(q, at)
				rate := strconv.FormatFloat(st.Rate, 'f', -1, 64)
				if len(got) != 1 || got[0].Labels["step"] != strconv.Itoa(st.Index) || got[0].Labels["rate"] != rate {
					t.Errorf("%s in step %d (rate %s): %v", q.where, st.Index, rate, got)
				}
			}
		case strings.Contains(q.where, "Stages"):
			for i, at := range []time.Time{stage0, stage1} {
				if got := eval(q, at); len(got) != 1 || got[0].Labels["stage"] != strconv.Itoa(i) {
					t.Errorf("%s in stage %d: %v", q.where, i, got)
				}
			}
		default:
			eval(q, stage1)
		}
	}

	// Throughput, against the staged run's intervals over the rate's window.
	intervalsAt := func(at time.Time) int {
		got, err := p.Query(`mqblast_run_intervals_total{job="mqblast"}`, at)
		if err != nil || len(got) != 1 {
			t.Fatalf("intervals at %v: %v %v", at, got, err)
		}
		return int(got[0].V)
	}
	for _, c := range []struct {
		ref string
		f   func(iv *result.Interval) int64
	}{{"A", func(iv *result.Interval) int64 { return iv.Published }}, {"B", func(iv *result.Interval) int64 { return iv.Received }}} {
		q := find(t, qs, `panel "Throughput" `+c.ref)
		var seen []float64
		for _, at := range ends {
			got := eval(q, at)
			if len(got) != 1 {
				continue
			}
			seen = append(seen, got[0].V)
			lo, hi := windowRates(staged.Intervals, intervalsAt(at.Add(-rateWindow)), intervalsAt(at), c.f)
			t.Logf("%s at %s: %.1f/s; the result's intervals over the window: %.1f to %.1f/s", q.where, at.Format(time.TimeOnly), got[0].V, lo, hi)
			if got[0].V < lo*0.98 || got[0].V > hi*1.02 || got[0].V == 0 {
				t.Errorf("%s at %s: %.1f/s, the result's intervals over the window (within a scrape) %.1f to %.1f/s", q.where, at.Format(time.TimeOnly), got[0].V, lo, hi)
			}
		}
		if len(seen) == 2 && seen[1] < 2*seen[0] { // the second stage offers three times the first's rate
			t.Errorf("%s: %.1f/s at the first stage's end, %.1f/s at the second's: the stages' rates are 1 and 3 per publisher", q.where, seen[0], seen[1])
		}
	}
	// Accounting at the staged run's end.
	var expected, received int64
	for _, iv := range staged.Intervals {
		expected, received = expected+iv.Expected, received+iv.Received
	}
	for _, c := range []struct {
		ref  string
		want map[string]float64
	}{
		{"A", map[string]float64{"": float64(staged.Messages.Lost)}},
		{"B", map[string]float64{"": float64(max(expected-received, 0))}},
		{"C", unsent(staged.Messages.Unsent)},
	} {
		q := find(t, qs, `panel "Accounting" `+c.ref)
		got := map[string]float64{}
		for _, s := range eval(q, end) {
			got[s.Labels["cause"]] = s.V
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s at the end: %v, the result's %v", q.where, got, c.want)
		}
	}
	t.Logf("%d queries; staged run: %d intervals, %d published, lost %d; limit: %d steps", len(qs), len(staged.Intervals),
		staged.Messages.Published, staged.Messages.Lost, len(limit.Limit.Steps))
}

// unsent is the result's unsent by cause as the Accounting panel shows it: 0 unlabelled
// when none.
func unsent(m map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(v)
	}
	if len(out) == 0 {
		out[""] = 0
	}
	return out
}

// windowRates returns the lowest and highest rate of f over the intervals from the a-th to
// the b-th completed (a window ending b intervals in that began a intervals in), each end
// moved by up to one interval (a scrape either side of an interval's end).
func windowRates(ivs []result.Interval, a, b int, f func(iv *result.Interval) int64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for da := -1; da <= 1; da++ {
		for db := -1; db <= 1; db++ {
			x, y := a+da, b+db
			if x < 1 || y > len(ivs) || y <= x {
				continue
			}
			var n int64
			for i := x; i < y; i++ {
				n += f(&ivs[i])
			}
			r := float64(n) / (ivs[y-1].TS - ivs[x-1].TS)
			lo, hi = min(lo, r), max(hi, r)
		}
	}
	return lo, hi
}

// find returns the query where names.
func find(t *testing.T, qs []query, where string) query {
	t.Helper()
	i := slices.IndexFunc(qs, func(q query) bool { return q.where == where })
	if i < 0 {
		t.Fatalf("no %s in the dashboard", where)
	}
	return qs[i]
}

// subst replaces Grafana's variables in s by their values, the longest names first.
func subst(s string, vals map[string]string) string {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, vals[k])
	}
	return s
}

func unix(sec float64) time.Time { return time.UnixMilli(int64(math.Round(sec * 1e3))) }
