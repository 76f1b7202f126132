package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/result"
)

// load reads a result document from testdata (results of real runs on the embedded broker).
func load(t *testing.T, name string) *result.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &r
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report -run %s -update writes it)", err, t.Name())
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; -update rewrites it):\n%s", name, d)
	}
}

// TestSummaryNumbers checks the summary panel's figures against the result documents of
// real runs: the rows as a golden file, and the figures the rows must hold taken from the
// documents directly, so that a wrong field cannot hide in the golden file.
func TestSummaryNumbers(t *testing.T) {
	var all strings.Builder
	for _, name := range []string{"p2p.json", "conn.json", "roundtrip.json"} {
		r := load(t, name)
		rows := map[string]Row{}
		fmt.Fprintf(&all, "== %s\n", name)
		for _, b := range Verdicts(r) {
			fmt.Fprintf(&all, "[%s] %s\n", b.Class, b.Text)
		}
		for _, row := range SummaryRows(r) {
			rows[row.Key] = row
			fmt.Fprintf(&all, "%s: %s", row.Key, row.Value)
			if row.Class != "" {
				fmt.Fprintf(&all, " {%s}", row.Class)
			}
			all.WriteByte('\n')
		}
		has := func(key string, want ...string) {
			t.Helper()
			for _, w := range want {
				if !strings.Contains(rows[key].Value, w) {
					t.Errorf("%s: row %q = %q, want it to hold %q", name, key, rows[key].Value, w)
				}
			}
		}
		c := r.Connections
		has("connections", fmt.Sprintf("%d of %d established, %d failed", c.Established, c.Target, c.Failed))
		has("connect latency", "p50 "+FormatUS(c.ConnectLatencyUS.P50), "p99 "+FormatUS(c.ConnectLatencyUS.P99))
		has("broker", r.Broker[0])
		if messaging(r) {
			m := r.Messages
			has("delivery", fmt.Sprintf("%d expected: %d received, %d lost", m.Expected, m.Received, m.Lost))
			has("throughput", fmt.Sprintf("%.0f msg/s written, %.0f msg/s arrived", r.Throughput.PublishPerS, r.Throughput.ReceivePerS))
			has("latency", "p50 "+FormatUS(r.LatencyUS.P50), "p99 "+FormatUS(r.LatencyUS.P99), "max "+FormatUS(r.LatencyUS.Max),
				fmt.Sprintf("%d messages", r.LatencyUS.Count))
		} else if _, ok := rows["throughput"]; ok {
			t.Errorf("%s: a Connections run has a throughput row", name)
		}
		if r.BrokerProcess != nil {
			has("broker process", fmt.Sprintf("cpu %.2fs", r.BrokerProcess.CPUS))
		}
		// The charts hold the document's figures: one latency point per interval with
		// values, the spectrum ends at the max.
		p := NewReport(r, name)
		for _, ch := range p.Charts() {
			switch ch.ID {
			case "latency":
				n := 0
				for _, iv := range r.Intervals {
					if iv.LatencyUS.Count > 0 {
						n++
					}
				}
				if ch.Points() != 4*n {
					t.Errorf("%s: latency chart has %d points, want 4 × %d intervals", name, ch.Points(), n)
				}
			case "spectrum":
				if v := ch.Series; r.LatencyUS.Count > 0 && (len(v) == 0 || v[0].Values[len(ch.X)-1] != float64(r.LatencyUS.Max)) {
					t.Errorf("%s: the spectrum does not end at the max %d", name, r.LatencyUS.Max)
				}
			case "throughput":
				if messaging(r) && (ch.Empty != "" || ch.Series[1].Values[3] != r.Intervals[3].ReceivePerS) {
					t.Errorf("%s: the throughput chart does not hold the intervals' receive rate", name)
				}
			}
		}
	}
	golden(t, "summary.golden", all.String())
}

// TestCompareTable checks the terminal comparison of three real results against a golden
// file, and the marks: the best of each row, none when the shown values tie.
func TestCompareTable(t *testing.T) {
	in := []Input{{"testdata/p2p.json", load(t, "p2p.json")}, {"testdata/roundtrip.json", load(t, "roundtrip.json")},
		{"testdata/conn.json", load(t, "conn.json")}}
	var b strings.Builder
	if err := WriteCompare(&b, in); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden", b.String())

	tb := CompareTable(in)
	row := func(name string) int {
		for i, r := range tb.Rows {
			if r[0] == name {
				return i
			}
		}
		t.Fatalf("no row %q", name)
		return -1
	}
	marked := func(name string) []bool { return tb.Marks[row(name)][1:] }
	// p2p's p99 589µs beats roundtrip's 8.98ms; conn has no latency.
	if got := marked("latency p99"); !got[0] || got[1] || got[2] {
		t.Errorf("latency p99 marks %v, want p2p's", got)
	}
	if got := tb.Rows[row("latency p99")][3]; got != "–" {
		t.Errorf("a Connections run's latency p99 is %q, want –", got)
	}
	// 0 lost in both messaging runs: a tie, no mark.
	if got := marked("lost"); got[0] || got[1] || got[2] {
		t.Errorf("lost marks %v, want none (a tie)", got)
	}
	if got := marked("connect rate"); !got[0] {
		t.Errorf("connect rate marks %v, want p2p's (the highest)", got)
	}
	if l := Labels(in); l[0] == l[1] || l[1] == l[2] || !strings.Contains(l[0], "quick-p2p-100") {
		t.Errorf("labels %q: want distinct, broker and scenario", l)
	}
	if d := ScenarioDiffs(in); len(d) != 2 || !strings.Contains(d[0], `type "Point-To-Point" vs "Round-Trip"`) {
		t.Errorf("scenario differences %q: want two, naming the type", d)
	}
	if d := ScenarioDiffs(in[:1]); d != nil {
		t.Errorf("one result: differences %q", d)
	}
}

// TestLabels: broker and scenario when distinct, else the file names.
func TestLabels(t *testing.T) {
	r := load(t, "p2p.json")
	got := Labels([]Input{{"a/run.json", r}, {"b/run.json", r}})
	if got[0] != "a/run.json" || got[1] != "b/run.json" {
		t.Errorf("labels %q: want the whole file names (same broker, scenario and base name)", got)
	}
	got = Labels([]Input{{"a/one.json", r}, {"a/two.json", r}})
	if got[0] != "one.json" || got[1] != "two.json" {
		t.Errorf("labels %q: want the base names", got)
	}
}

// TestEmptyResult: a result with nothing in it (a run that failed at once) renders, and
// every chart says it has no data.
func TestEmptyResult(t *testing.T) {
	r := &result.Result{Schema: result.Schema}
	var b strings.Builder
	if err := WriteHTML(&b, r, "empty.json"); err != nil {
		t.Fatal(err)
	}
	for _, c := range NewReport(r, "").Charts() {
		if c.Empty == "" {
			t.Errorf("chart %s of an empty result is not empty: %d points", c.ID, c.Points())
		}
	}
	if !strings.Contains(b.String(), "the result does not hold its scenario") {
		t.Error("the empty result's scenario panel does not say it has none")
	}
	var cmpb strings.Builder
	if err := WriteCompareHTML(&cmpb, []Input{{"a.json", r}, {"b.json", r}}, "test"); err != nil {
		t.Fatal(err)
	}
}
