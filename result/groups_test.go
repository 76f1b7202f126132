package result

import (
	"strings"
	"testing"
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
