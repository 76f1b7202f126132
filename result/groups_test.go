package result

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestGroupThresholds: a threshold names a group's figure by the group's name
// (groups.NAME.path); a path below a group is checked against the group's fields, and a
// group the run does not have is an error, not a 0.
func TestGroupThresholds(t *testing.T) {
	r := &Result{}
	r.SetGroups([]GroupInfo{{Name: "devices", Clients: 10, Publishers: 1}, {Name: "backend", Clients: 1}})
	total := NewSnapshot()
	dev := NewSnapshot()
	dev.Connected, dev.Published, dev.Expected, dev.Received = 10, 5, 5, 4
	dev.Latency.Record(2000)
	total.Groups = []*Snapshot{dev, NewSnapshot()}
	r.SetTotal(total)
	if err := r.EvaluateThresholds([]string{"groups.devices.messages.lost==0", "groups.devices.latency_us.p99<5000",
		"groups.backend.connections.established>=1"}); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, th := range r.Thresholds {
		got = append(got, th.OK)
	}
	if len(got) != 3 || got[0] || !got[1] || got[2] {
		t.Errorf("thresholds %+v", r.Thresholds)
	}
	if err := CheckThresholdPaths([]string{"groups.devices.latency_us.p99<5000"}); err != nil {
		t.Errorf("a group's path: %v", err)
	}
	for expr, want := range map[string]string{
		"groups.devices.latncy_us.p99<5": `has no field "latncy_us"`,
		"groups<5":                       "is a list of groups: name one",
	} {
		if err := CheckThresholdPaths([]string{expr}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", expr, err, want)
		}
	}
	if err := r.EvaluateThresholds([]string{"groups.devcies.messages.lost==0"}); err == nil || !strings.Contains(err.Error(), `no group "devcies"`) {
		t.Errorf("an unknown group: %v", err)
	}
}

// TestJoinAttributesGroups: what a merge finds across parts is attributed to the groups
// too: a share group's copy seen by members in two parts is taken off the publishing
// group's received and the receiving group's delivered; a message in flight at the end in
// one part that arrived in the other is taken off its group's in flight.
func TestJoinAttributesGroups(t *testing.T) {
	gs := []Group{{Name: "devices", Numbers: [2]uint32{0, 10}}, {Name: "backend", Shares: []int{0}}}
	total := NewSnapshot()
	dev, back := NewSnapshot(), NewSnapshot()
	dev.Received, back.Delivered, total.Received = 12, 12, 12
	dev.InFlightAtEnd, total.InFlightAtEnd = 1, 1
	total.Groups = []*Snapshot{dev, back}
	js := []*Join{
		{Shares: []JoinShare{{Share: 0, Publisher: 3, Seqs: Seqs{{0, 6}}}},
			Ends: []JoinEnd{{Publisher: 4, Receivers: 1, Seqs: []uint32{7}, Got: []int64{0}}}},
		{Shares: []JoinShare{{Share: 0, Publisher: 3, Seqs: Seqs{{5, 7}}}},
			Streams: []JoinStreams{{Publisher: 4, Cover: CoverOf([]Seqs{{{0, 8}}})}}},
	}
	joinParts(total, js, groupAttribution{gs})
	// Copy 5 of publisher 3 was counted in both parts: one duplicate.
	if total.Received != 11 || dev.Received != 11 || dev.Duplicated != 1 || back.Delivered != 11 {
		t.Errorf("run received %d; devices received %d duplicated %d; backend delivered %d", total.Received, dev.Received, dev.Duplicated, back.Delivered)
	}
	// Message 7 of publisher 4, in flight at the end in part 0, arrived in part 1.
	if total.InFlightAtEnd != 0 || dev.InFlightAtEnd != 0 {
		t.Errorf("in flight at the end: run %d, devices %d", total.InFlightAtEnd, dev.InFlightAtEnd)
	}
}

// TestJoinGroupsNotShared: copies a broker that does not share gave members in two parts
// are not_expected for the publishing group as for the run, not its duplicates.
func TestJoinGroupsNotShared(t *testing.T) {
	gs := []Group{{Name: "devices", Numbers: [2]uint32{0, 10}}, {Name: "backend", Shares: []int{0}}}
	total := NewSnapshot()
	dev, back := NewSnapshot(), NewSnapshot()
	dev.Received, back.Delivered, total.Received = 12, 12, 12
	total.Groups = []*Snapshot{dev, back}
	js := []*Join{{Shares: []JoinShare{{Share: 0, Publisher: 3, Seqs: Seqs{{0, 6}}}}},
		{Shares: []JoinShare{{Share: 0, Publisher: 3, Seqs: Seqs{{0, 6}}}}}}
	joinParts(total, js, groupAttribution{gs})
	for name, s := range map[string]*Snapshot{"run": total, "devices": dev} {
		if s.Received != 6 || s.Duplicated != 0 || s.Unexpected["not_expected"] != 6 {
			t.Errorf("%s: received %d duplicated %d not_expected %d; want 6 0 6", name, s.Received, s.Duplicated, s.Unexpected["not_expected"])
		}
	}
	if back.Delivered != 6 || back.UnexpectedTotal() != 0 {
		t.Errorf("backend: delivered %d, unexpected %v; want 6, none", back.Delivered, back.Unexpected)
	}
}

// TestCheckDocumentGroups: a mixed run's document is refused when a group does not add up
// or the groups do not add up to the run, each problem at its path.
func TestCheckDocumentGroups(t *testing.T) {
	r := &Result{Schema: Schema, Scenario: []byte(`{"name":"m","type":"Mixed"}`)}
	r.SetGroups([]GroupInfo{{Name: "devices", Clients: 10, Publishers: 2}, {Name: "backend", Clients: 1}})
	dev, back := NewSnapshot(), NewSnapshot()
	dev.Connected, dev.Scheduled, dev.Published, dev.Expected, dev.Received = 10, 20, 20, 20, 19
	dev.Latency.Record(100)
	back.Connected, back.Delivered = 1, 19
	total := NewSnapshot()
	total.Add(dev)
	total.Add(back)
	total.Delivered = 0
	total.Groups = []*Snapshot{dev, back}
	r.SetTotal(total)
	good, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckDocument(good); err != nil {
		t.Fatalf("a consistent document refused: %v", err)
	}
	var doc map[string]any
	_ = json.Unmarshal(good, &doc)
	g0 := doc["groups"].([]any)[0].(map[string]any)
	g0["messages"].(map[string]any)["received"] = 20 // more than expected minus lost
	bad, _ := json.Marshal(doc)
	err = CheckDocument(bad)
	if err == nil {
		t.Fatal("a group that does not add up was accepted")
	}
	for _, want := range []string{"groups[0].messages.expected: 20 is not received 20 + lost 1",
		"messages.received: 19 is not the sum of the groups' (20)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestIntervalPacksGroups: NewInterval leaves no group histogram of its snapshot holding
// counts (a worker's interval is encoded and dropped: the counts go back to the pool), and
// the interval, the snapshot's JSON and what it adds to another read as before.
func TestIntervalPacksGroups(t *testing.T) {
	fill := func() *Snapshot {
		s := NewSnapshot()
		s.Groups = []*Snapshot{NewGroupSnapshot(), NewGroupSnapshot(), NewGroupSnapshot()}
		for i := int64(1); i <= 3000; i++ {
			s.ConnectLatency.Record(i * 7)
			s.Groups[0].ConnectLatency.Record(i * 7)
			s.Groups[0].Latency.Record(i * 13)
		}
		s.Groups[0].Connected, s.Groups[2].Connected = 3000, 5
		for i := int64(1); i <= 5; i++ {
			s.Groups[2].Latency.Record(i)
		}
		return s
	}
	s, ref := fill(), fill()
	if n := s.HeldCounts(); n != 3 {
		t.Fatalf("before: %d counts arrays held, want 3 (the run's and group 0's two)", n)
	}
	want, _ := json.Marshal(ref)
	iv := NewInterval(1, 3005, s, time.Second)
	if n := s.HeldCounts(); n != 0 {
		t.Errorf("after NewInterval: %d counts arrays held, want 0", n)
	}
	if got, _ := json.Marshal(s); string(got) != string(want) {
		t.Error("the packed snapshot's JSON differs from the unpacked one's")
	}
	if len(iv.Groups) != 3 || iv.Groups[0].Connected != 3000 || iv.Groups[2].Connected != 5 ||
		iv.Groups[0].LatencyUS != ref.Groups[0].Latency.Summary() || iv.Groups[2].LatencyUS != ref.Groups[2].Latency.Summary() {
		t.Errorf("interval groups %+v", iv.Groups)
	}
	sum, refSum := NewSnapshot(), NewSnapshot()
	sum.Add(s)
	refSum.Add(ref)
	if sum.Groups[0].ConnectLatency.Summary() != refSum.Groups[0].ConnectLatency.Summary() ||
		sum.Groups[0].Latency.Summary() != refSum.Groups[0].Latency.Summary() {
		t.Error("adding the packed snapshot differs from adding the unpacked one")
	}
}
