package result

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMergeBrokerSys: merged shards keep the first shard's $SYS figures, no longer
// comparable with the merged counts, and the shards' documents are not changed.
func TestMergeBrokerSys(t *testing.T) {
	t.Parallel()
	shard := func(i int, rx int64) *Result {
		return &Result{Schema: Schema, Shard: &ShardInfo{Index: i, Count: 2},
			BrokerSys: &BrokerSys{Source: "b:1883", Totals: map[string]int64{SysPublishReceived: rx}, Comparable: true},
			Intervals: []Interval{{TS: 1, BrokerSys: &IntervalBrokerSys{ClientsConnected: rx}}}}
	}
	a, b := shard(0, 10), shard(1, 20)
	m := Merge([]*Result{a, b})
	s := m.BrokerSys
	if s == nil || s.Totals[SysPublishReceived] != 10 || s.Comparable || len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "first shard") {
		t.Fatalf("merged broker_sys %+v", s)
	}
	if !a.BrokerSys.Comparable || len(a.BrokerSys.Notes) != 0 {
		t.Errorf("the first shard's document changed: %+v", a.BrokerSys)
	}
	if iv := m.Intervals[0].BrokerSys; iv == nil || iv.ClientsConnected != 10 {
		t.Errorf("merged interval broker_sys %+v, want the first shard's", iv)
	}
}

// TestCheckBrokerSys: a negative $SYS total or rate is a defect of the document.
func TestCheckBrokerSys(t *testing.T) {
	t.Parallel()
	r := &Result{Schema: Schema, BrokerSys: &BrokerSys{Totals: map[string]int64{SysPublishSent: -3}},
		Intervals: []Interval{{BrokerSys: &IntervalBrokerSys{PerS: map[string]float64{SysBytesSent: -1}}}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckDocument(b)
	if err == nil || !strings.Contains(err.Error(), "broker_sys.totals.publish_sent") ||
		!strings.Contains(err.Error(), "intervals[0].broker_sys.per_s.bytes_sent") {
		t.Errorf("CheckDocument: %v", err)
	}
}
