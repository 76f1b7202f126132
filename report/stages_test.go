package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/result"
)

// staged returns a result with stages of the given offered rates and p99 latencies.
func staged(offered []float64, p99 []int64) *result.Result {
	r := &result.Result{Schema: result.Schema}
	for i := range offered {
		st := result.Stage{Index: i, PublishRate: offered[i] / 10, StartS: float64(4 * i), DurationS: 4}
		st.FromS, st.ToS = float64(1+4*i), float64(5+4*i)
		st.OfferedPerS = offered[i]
		st.Throughput = result.Throughput{PublishPerS: offered[i], ReceivePerS: offered[i], WindowS: 4}
		st.LatencyUS = result.Percentiles{Count: 10, P50: p99[i] / 2, P90: p99[i] / 2, P99: p99[i], P999: p99[i], Max: p99[i]}
		r.Stages = append(r.Stages, st)
	}
	return r
}

// TestCompareStages: compare has a group of rows per stage that two inputs have, the best
// of each marked; an input without the stage shows "–".
func TestCompareStages(t *testing.T) {
	t.Parallel()
	a := staged([]float64{1000, 2000, 500}, []int64{900, 5000, 800})
	b := staged([]float64{1000, 2000}, []int64{700, 9000})
	tab := CompareTable([]Input{{Name: "a.json", Result: a}, {Name: "b.json", Result: b}})
	rows := map[string][]string{}
	for _, row := range tab.Rows {
		rows[row[0]] = row[1:]
	}
	if got := rows["stage 1 latency p99"]; len(got) != 2 || got[0] != "5ms" || got[1] != "9ms" {
		t.Errorf("stage 1 latency p99 row %q", got)
	}
	if _, ok := rows["stage 2 offered msg/s"]; ok {
		t.Errorf("a row for stage 2, which only one input has")
	}
	for i, row := range tab.Rows {
		if row[0] == "stage 0 latency p99" && (!tab.Marks[i][2] || tab.Marks[i][1]) {
			t.Errorf("stage 0 latency p99 marks %v, want b's", tab.Marks[i])
		}
	}
	var out bytes.Buffer
	if err := WriteCompare(&out, []Input{{Name: "a.json", Result: a}, {Name: "c.json", Result: &result.Result{Schema: result.Schema}}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "stage 0") {
		t.Errorf("stage rows with one staged input:\n%s", out.String())
	}
}

// TestStageMarksAndLines: a staged result's time charts carry a mark at each stage's start
// and at the end of the last, the report has a Stages table, and the summary a line per
// stage; a result without stages has none of them.
func TestStageMarksAndLines(t *testing.T) {
	t.Parallel()
	r := staged([]float64{1000, 2000}, []int64{900, 5000})
	r.Intervals = []result.Interval{{TS: 1}, {TS: 2, PublishPerS: 1}}
	p := NewReport(r, "s.json")
	var tput *Chart
	for _, c := range p.Charts() {
		if c.ID == "throughput" {
			tput = &c
		}
	}
	if tput == nil || len(tput.Marks) != 3 || tput.Marks[1] != (Mark{X: 5, Label: "stage 1"}) || tput.Marks[2] != (Mark{X: 9, Label: "end"}) {
		t.Errorf("throughput chart marks %+v", tput)
	}
	found := false
	for _, pn := range p.Panels {
		found = found || pn.ID == "stages" && len(pn.Tables) == 1 && len(pn.Tables[0].Rows) == 2
	}
	if !found {
		t.Errorf("no Stages table of 2 rows")
	}
	r.Messages.Published = 1 // a messaging run: its summary has the figures
	var out bytes.Buffer
	if err := WriteSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stage 1          4-8s, step to 200 msg/s per publisher: offered 2000/s") {
		t.Errorf("summary:\n%s", out.String())
	}
	plain := NewReport(&result.Result{Schema: result.Schema, Intervals: r.Intervals}, "p.json")
	for _, c := range plain.Charts() {
		if len(c.Marks) > 0 {
			t.Errorf("chart %s of a run without stages has marks", c.ID)
		}
	}
}

// TestStageMarkBeforeFirstInterval: a stage that starts before the first interval's time
// (publishing began within the first interval) still has its mark drawn, at the chart's
// left edge: Chromium draws every stage's mark and the end's.
func TestStageMarkBeforeFirstInterval(t *testing.T) {
	t.Parallel()
	r := staged([]float64{1000, 2000}, []int64{900, 5000}) // stage 0 from 1 s, stage 1 from 5 s, end 9 s
	for ts := 2.0; ts <= 9; ts++ {
		r.Intervals = append(r.Intervals, result.Interval{TS: ts, PublishPerS: 1000, ReceivePerS: 1000})
	}
	r.Messages.Published, r.Messages.Received = 8000, 8000 // a messaging run: it has the throughput chart
	file := filepath.Join(t.TempDir(), "staged.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r, "staged.json"); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	pg := browsertest.Start(t).Open(t, file, "window.mqblast && window.mqblast.ready")
	want := []string{"stage 0", "stage 1", "end"}
	if got := browsertest.Eval[[]string](pg, `window.mqblast.charts["throughput"].marks`); !slices.Equal(got, want) {
		t.Errorf("throughput chart drew marks %q, want %q", got, want)
	}
	if errs := pg.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
}
