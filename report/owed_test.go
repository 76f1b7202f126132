package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestOwedShown: a run whose drain ended with copies still arriving says how many the
// broker still owed, at what rate and after how long a drain, in the text summary, the
// HTML report's verdicts and rows, and never calls them lost.
func TestOwedShown(t *testing.T) {
	r := load(t, "p2p.json")
	m := &r.Messages
	m.Received -= 393435
	m.OwedAtEnd, m.OwedArrivalPerS, m.DrainS = 393435, 57000, 10.004
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, w := range []string{"OWED", "393,435 copies still arriving at 57,000/s when the drain ended (10s)", "0 lost"} {
		if !strings.Contains(text, w) {
			t.Errorf("the summary does not say %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, "393435 lost") || strings.Contains(text, "393,435 lost") {
		t.Errorf("the summary calls owed copies lost:\n%s", text)
	}
	var badge, row bool
	for _, b := range Verdicts(r) {
		badge = badge || b.Text == "393435 copies owed at the end" && b.Class == "warn"
	}
	for _, x := range SummaryRows(r) {
		row = row || x.Key == "owed" && strings.Contains(x.Value, "393,435 copies still arriving")
	}
	if !badge || !row {
		t.Errorf("the HTML report's verdict %v, its row %v: want both", badge, row)
	}
}
