package result

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ShardInfo says which shard of a run a result is: shard Index of Count (0-based), as
// --shard I/N gave it. A whole run has none.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// String returns "I/N".
func (s *ShardInfo) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ShardError is one reason why results are not the distinct shards of one run. A and B are
// indexes into the slice given to CheckShards; B is -1 when the reason concerns A alone,
// and A is -1 when it concerns the set as a whole.
type ShardError struct {
	A, B int
	Msg  string
}

func (e *ShardError) Error() string {
	switch {
	case e.A < 0:
		return e.Msg
	case e.B < 0:
		return fmt.Sprintf("result %d: %s", e.A, e.Msg)
	}
	return fmt.Sprintf("results %d and %d: %s", e.A, e.B, e.Msg)
}

// CheckShards reports whether rs can be merged exactly (Merge): each result carries the
// histograms its counts say it has, and together they are the distinct shards of one run —
// the same run identity (documents written before runs had one are taken among
// themselves), the same scenario (apart from parameters.bind: each host has its own
// source addresses), no shard twice, and, when they say how many shards the run has, none
// missing. Results
// without a shard are whole runs: one of them can be merged alone, two cannot. It returns
// every problem found, each a *ShardError, joined; nil when rs can be merged.
func CheckShards(rs []*Result) error {
	var errs []error
	add := func(a, b int, format string, args ...any) {
		errs = append(errs, &ShardError{A: a, B: b, Msg: fmt.Sprintf(format, args...)})
	}
	for i, r := range rs {
		for _, h := range r.histogramNeeds() {
			if h.count > 0 && h.hist.Count() == 0 {
				add(i, -1, "%s counts %d values but histograms.%s is missing, so it cannot be merged exactly "+
					"(write the result with a version of mqblast that keeps histograms)", h.summary, h.count, h.name)
			}
		}
	}
	scen := make([][]byte, len(rs))
	for i, r := range rs {
		scen[i] = comparableScenario(r.Scenario)
	}
	for i := range rs {
		for j := i + 1; j < len(rs); j++ {
			a, b := rs[i], rs[j]
			switch {
			case a.Shard != nil && b.Shard != nil && *a.Shard == *b.Shard:
				add(i, j, "both are shard %s of the run (the same file twice, or the same shard run twice)", a.Shard)
			case a.Shard == nil && b.Shard == nil && a.StartedAt.Equal(b.StartedAt) && a.EndedAt.Equal(b.EndedAt) &&
				a.Host.Hostname == b.Host.Hostname:
				add(i, j, "the same run twice (same host %q, same start and end)", a.Host.Hostname)
			case a.Shard == nil && b.Shard == nil:
				add(i, j, "both are whole runs, not shards of one run (run each part with --shard I/N)")
			case (a.Shard == nil) != (b.Shard == nil):
				whole, part := i, b.Shard
				if b.Shard == nil {
					whole, part = j, a.Shard
				}
				add(i, j, "result %d is a whole run (no --shard) but the other is shard %s", whole, part)
			case a.Shard.Count != b.Shard.Count:
				add(i, j, "shard %s and shard %s split the run differently", a.Shard, b.Shard)
			}
			switch ra, rb := a.Run, b.Run; {
			case ra == nil && rb == nil: // both written before runs had an identity
			case ra == nil || rb == nil:
				add(i, j, "one has a run identity and the other none (an older mqblast wrote it): not shards of one run")
			case ra.ID != rb.ID || ra.Tag != rb.Tag:
				add(i, j, "different runs: run %s in one and %s in the other, so each counted the other's messages "+
					"as another run's; run every shard with the same --run-id (or the same --start-at)", ra, rb)
			}
			if d := diffJSON(scen[i], scen[j]); d != "" {
				add(i, j, "different scenarios: %s", d)
			}
		}
	}
	// A known N: every shard 0..N-1 must be there.
	if len(rs) > 0 && rs[0].Shard != nil {
		n := rs[0].Shard.Count
		have := map[int]bool{}
		same := true
		for _, r := range rs {
			if r.Shard == nil || r.Shard.Count != n {
				same = false
				break
			}
			have[r.Shard.Index] = true
		}
		if same {
			var missing []string
			for k := range n {
				if !have[k] {
					missing = append(missing, fmt.Sprintf("%d/%d", k, n))
				}
			}
			if len(missing) > 0 {
				add(-1, -1, "shard %s missing: the run has %d shards and %d are given", strings.Join(missing, ", "), n, len(have))
			}
		}
	}
	return errors.Join(errs...)
}

// histNeed pairs a histogram with the summary whose count says it must hold values.
type histNeed struct {
	name, summary string
	count         int64
	hist          *Hist
}

func (r *Result) histogramNeeds() []histNeed {
	return []histNeed{
		{"connect_latency", "connections.connect_latency_us", r.Connections.ConnectLatencyUS.Count, r.Histograms.ConnectLatency},
		{"ping_rtt", "connections.ping_rtt_us", r.Connections.PingRTTUS.Count, r.Histograms.PingRTT},
		{"latency", "latency_us", r.LatencyUS.Count, r.Histograms.Latency},
		{"latency_raw", "latency_raw_us", r.LatencyRaw.Count, r.Histograms.LatencyRaw},
		{"schedule_lag", "client.schedule_lag_us", r.Client.ScheduleLagUS.Count, r.Histograms.ScheduleLag},
	}
}

// comparableScenario is the scenario JSON of a result without what may differ between the
// shards of one run (parameters.bind), in a canonical form.
func comparableScenario(raw json.RawMessage) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	if p, ok := v["parameters"].(map[string]any); ok {
		delete(p, "bind")
	}
	b, _ := json.Marshal(v)
	return b
}

// diffJSON names the first field where two JSON documents differ, with both values, or
// returns "" when they are equal.
func diffJSON(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		if len(a) == 0 || len(b) == 0 {
			return "one result has no scenario"
		}
		return "the scenarios differ"
	}
	return diffValue("", va, vb)
}

func diffValue(path string, a, b any) string {
	show := func(v any) string {
		if v == nil {
			return "absent"
		}
		s, _ := json.Marshal(v)
		if len(s) > 60 {
			return string(s[:57]) + "..."
		}
		return string(s)
	}
	ma, oka := a.(map[string]any)
	mb, okb := b.(map[string]any)
	if oka && okb {
		var keys []string
		for k := range ma {
			keys = append(keys, k)
		}
		for k := range mb {
			if _, ok := ma[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if d := diffValue(p, ma[k], mb[k]); d != "" {
				return d
			}
		}
		return ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if slices.Equal(ja, jb) {
		return ""
	}
	if path == "" {
		path = "scenario"
	}
	return fmt.Sprintf("%s is %s in one and %s in the other", path, show(a), show(b))
}
