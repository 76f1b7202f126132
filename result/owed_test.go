package result

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestOwedAtEnd: the copies still missing at the end are lost when the drain saw arrivals
// stop (no rate at the end), and owed_at_end, never lost, when copies were still arriving
// (owed_arrival_per_s); a mixed run's groups follow the run's drain; the document adds up
// and reads back; merged parts add their rates; a document whose owed copies break the
// identity is refused.
func TestOwedAtEnd(t *testing.T) {
	run := func(perS int64) *Result {
		r := &Result{Schema: Schema, Scenario: json.RawMessage(`{"type":"Fan-Out"}`)}
		r.SetGroups([]GroupInfo{{Name: "a"}, {Name: "b"}})
		s := NewSnapshot()
		s.Scheduled, s.Published, s.Expected, s.Received, s.OwedArrivalPerS = 10, 10, 500, 200, perS
		s.Groups = []*Snapshot{NewGroupSnapshot(), NewGroupSnapshot()}
		a, b := s.Groups[0], s.Groups[1]
		a.Scheduled, a.Published, a.Expected, a.Received, a.OwedArrivalPerS = 5, 5, 250, 150, perS
		b.Scheduled, b.Published, b.Expected, b.Received = 5, 5, 250, 50 // none of b's arrived at the end
		r.SetTotal(s)
		return r
	}
	stopped := run(0)
	if m := stopped.Messages; m.Lost != 300 || m.OwedAtEnd != 0 || stopped.Groups[1].Messages.Lost != 200 {
		t.Errorf("arrivals stopped: lost %d, owed %d, group b lost %d: want 300, 0, 200", m.Lost, m.OwedAtEnd, stopped.Groups[1].Messages.Lost)
	}
	arriving := run(4000)
	m := arriving.Messages
	if m.Lost != 0 || m.OwedAtEnd != 300 || m.OwedArrivalPerS != 4000 {
		t.Errorf("still arriving: lost %d, owed %d at %d/s: want 0, 300 at 4000/s", m.Lost, m.OwedAtEnd, m.OwedArrivalPerS)
	}
	for i, g := range arriving.Groups {
		if want := g.Messages.Expected - g.Messages.Received; g.Messages.Lost != 0 || g.Messages.OwedAtEnd != want {
			t.Errorf("group %s: lost %d, owed %d: want 0, %d (the run's drain ended with copies arriving)", g.Name, g.Messages.Lost, g.Messages.OwedAtEnd, want)
		}
		if i == 1 && g.Messages.OwedArrivalPerS != 0 {
			t.Errorf("group b arrived at %d/s at the end: want 0", g.Messages.OwedArrivalPerS)
		}
	}
	var buf bytes.Buffer
	if err := arriving.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckDocument(buf.Bytes()); err != nil {
		t.Errorf("the document does not add up: %v", err)
	}
	for _, k := range []string{`"owed_at_end": 300`, `"owed_arrival_per_s": 4000`} {
		if !strings.Contains(buf.String(), k) {
			t.Errorf("the document lacks %s", k)
		}
	}
	var back Result
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	// Two parts of one run read back: their rates add, and the merged run's missing copies
	// are owed as each part's were.
	merged := MergeParts([]*Result{&back, run(1000)})
	if mm := merged.Messages; mm.OwedAtEnd != 600 || mm.Lost != 0 || mm.OwedArrivalPerS != 5000 ||
		merged.Groups[1].Messages.OwedAtEnd != 400 {
		t.Errorf("merged: lost %d, owed %d at %d/s, group b owed %d: want 0, 600 at 5000/s, 400", mm.Lost, mm.OwedAtEnd, mm.OwedArrivalPerS,
			merged.Groups[1].Messages.OwedAtEnd)
	}
	bad := bytes.Replace(buf.Bytes(), []byte(`"owed_at_end": 300`), []byte(`"owed_at_end": 299`), 1)
	if err := CheckDocument(bad); err == nil || !strings.Contains(err.Error(), "owed_at_end 299") {
		t.Errorf("a document whose owed copies do not add up: %v", err)
	}
}
