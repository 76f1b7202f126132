package result

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func shardResult(i, n int, scen string) *Result {
	h := NewHist()
	h.Record(100)
	return &Result{
		Schema: Schema, Scenario: json.RawMessage(scen), Shard: &ShardInfo{Index: i, Count: n},
		StartedAt: time.Unix(int64(1000+i), 0), EndedAt: time.Unix(int64(2000+i), 0),
		Connections: Connections{ConnectLatencyUS: Percentiles{Count: 1}},
		Histograms:  Histograms{ConnectLatency: h},
	}
}

// TestCheckShards: the distinct shards of one run pass; each way of not being that is
// refused with its reason.
func TestCheckShards(t *testing.T) {
	t.Parallel()
	const scen = `{"name":"s","parameters":{"connection_rate":10,"bind":["127.0.0.2"]}}`
	const other = `{"name":"s","parameters":{"connection_rate":20}}`
	const otherBind = `{"name":"s","parameters":{"connection_rate":10,"bind":["127.0.0.3"]}}`
	ok := func(rs ...*Result) {
		t.Helper()
		if err := CheckShards(rs); err != nil {
			t.Errorf("refused: %v", err)
		}
	}
	bad := func(want string, rs ...*Result) {
		t.Helper()
		err := CheckShards(rs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one containing %q", err, want)
		}
	}
	ok(shardResult(0, 2, scen), shardResult(1, 2, otherBind))
	ok(shardResult(0, 1, scen))
	whole := shardResult(0, 1, scen)
	whole.Shard = nil
	ok(whole)

	bad("both are shard 0/2", shardResult(0, 2, scen), shardResult(0, 2, scen), shardResult(1, 2, scen))
	bad("shard 2/3 missing", shardResult(0, 3, scen), shardResult(1, 3, scen))
	bad("split the run differently", shardResult(0, 2, scen), shardResult(1, 3, scen))
	bad("different scenarios: parameters.connection_rate is 10 in one and 20 in the other",
		shardResult(0, 2, scen), shardResult(1, 2, other))
	noHist := shardResult(1, 2, scen)
	noHist.Histograms.ConnectLatency = nil
	bad("result 1: connections.connect_latency_us counts 1 values but histograms.connect_latency is missing",
		shardResult(0, 2, scen), noHist)
	w2 := *whole
	bad("the same run twice", whole, &w2)
	w2.StartedAt = w2.StartedAt.Add(time.Second)
	bad("both are whole runs", whole, &w2)
	bad("is a whole run (no --shard) but the other is shard 1/2", whole, shardResult(1, 2, scen))

	// One run identity, or none (documents written before runs had one).
	withRun := func(r *Result, id string, tag uint16) *Result {
		r.Run = &RunInfo{ID: id, Tag: tag, From: "run-id"}
		return r
	}
	ok(withRun(shardResult(0, 2, scen), "x", 1), withRun(shardResult(1, 2, scen), "x", 1))
	bad("different runs: run x (tag 0001, run-id) in one and y (tag 0002, run-id) in the other", withRun(shardResult(0, 2, scen), "x", 1),
		withRun(shardResult(1, 2, scen), "y", 2))
	bad("one has a run identity and the other none", shardResult(0, 2, scen), withRun(shardResult(1, 2, scen), "x", 1))

	// A merged set is a whole run again.
	if m := Merge([]*Result{shardResult(0, 2, scen), shardResult(1, 2, scen)}); m.Shard != nil {
		t.Errorf("merged result has shard %v", m.Shard)
	}
}
