package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/result"
)

// mixedResult returns the result of a mixed run with a devices group (latency p99 lat µs,
// lost copies lost) and a backend group, its scenario's devices publishing at rate.
func mixedResult(t *testing.T, lat int64, lost int64, rate float64) *result.Result {
	t.Helper()
	r := &result.Result{}
	r.SetGroups([]result.GroupInfo{{Name: "devices", Behaviours: []string{"publish"}, Clients: 100, Publishers: 10},
		{Name: "backend", Behaviours: []string{"subscribe"}, Clients: 2}})
	dev, back := result.NewSnapshot(), result.NewSnapshot()
	dev.Connected, dev.Published, dev.Scheduled, dev.Expected, dev.Received = 100, 100, 100, 100, 100-lost
	dev.Latency.Record(lat)
	back.Connected, back.Delivered = 2, 100-lost
	total := result.NewSnapshot()
	total.Add(dev)
	total.Add(back)
	total.Delivered = 0
	total.Groups = []*result.Snapshot{dev, back}
	r.SetTotal(total)
	sc, _ := json.Marshal(map[string]any{"name": "fleet", "type": "Mixed", "groups": []any{
		map[string]any{"name": "devices", "id_prefix": "a-", "publish_rate": rate}, map[string]any{"name": "backend", "id_prefix": "b-"}}})
	r.Scenario = sc
	return r
}

// TestCompareGroups: compare has each group's rows, the better run's marked, and the
// scenario warning names a group's differing field by the group's name.
func TestCompareGroups(t *testing.T) {
	in := []Input{{Name: "a.json", Result: mixedResult(t, 1000, 0, 1)}, {Name: "b.json", Result: mixedResult(t, 5000, 3, 2)}}
	tab := CompareTable(in)
	rows := map[string][]string{}
	marks := map[string][]bool{}
	for i, row := range tab.Rows {
		rows[row[0]], marks[row[0]] = row[1:], tab.Marks[i][1:]
	}
	for name, want := range map[string][]string{
		"group devices latency p99":             {"1ms", "5ms"},
		"group devices lost":                    {"0", "3"},
		"group devices connected":               {"100", "100"},
		"group backend received by its clients": {"100", "97"},
	} {
		if got := rows[name]; !slices.Equal(got, want) {
			t.Errorf("row %q = %v, want %v", name, got, want)
		}
	}
	if !slices.Equal(marks["group devices latency p99"], []bool{true, false}) || !slices.Equal(marks["group devices lost"], []bool{true, false}) {
		t.Errorf("marks: p99 %v lost %v", marks["group devices latency p99"], marks["group devices lost"])
	}
	if _, ok := rows["group backend published"]; ok {
		t.Error("a group that publishes nothing has a published row")
	}
	d := ScenarioDiffs(in)
	if len(d) != 1 || !strings.Contains(d[0], "groups.devices.publish_rate 1 vs 2") || strings.Contains(d[0], "id_prefix") {
		t.Errorf("diffs %q", d)
	}
}

// TestReportGroupsPanel: the HTML report of a mixed run has a groups panel with a row per
// group and time charts with a series per group.
func TestReportGroupsPanel(t *testing.T) {
	r := mixedResult(t, 1000, 2, 1)
	for i := range 3 {
		s := result.NewSnapshot()
		dev, back := result.NewSnapshot(), result.NewSnapshot()
		dev.Published, dev.Received = 10, 10
		dev.Latency.Record(int64(500 * (i + 1)))
		back.Delivered = 10
		s.Groups = []*result.Snapshot{dev, back}
		r.Intervals = append(r.Intervals, result.NewInterval(float64(i+1), 102, s, 1e9))
	}
	r.Groups[0].Churn = &result.Churn{AtS: 2, Clients: 10, Ended: 10}
	p := NewReport(r, "mixed.json")
	var panel *Panel
	for i := range p.Panels {
		if p.Panels[i].ID == "groups" {
			panel = &p.Panels[i]
		}
	}
	if panel == nil {
		t.Fatal("no groups panel")
	}
	rows := panel.Tables[0].Rows
	if len(rows) != 2 || rows[0][0] != "devices" || rows[0][12] != "2" || rows[0][16] != "+2s: 10 of 10 ended (persistent)" ||
		rows[1][0] != "backend" || rows[1][8] != "–" || rows[1][15] != "98" {
		t.Errorf("table rows %q", rows)
	}
	charts := map[string]Chart{}
	for _, c := range panel.Charts {
		charts[c.ID] = c
	}
	if c := charts["group_p99"]; c.Empty != "" || len(c.Series) != 1 || c.Series[0].Label != "devices" || c.Series[0].Values[2] != 1500 {
		t.Errorf("p99 chart %+v", c)
	}
	if c := charts["group_delivered"]; c.Empty != "" || len(c.Series) == 0 {
		t.Errorf("delivered chart %+v", c)
	}
	var b strings.Builder
	if err := WriteHTML(&b, r, "mixed.json"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `id="groups"`) {
		t.Error("the HTML has no groups panel")
	}
}
