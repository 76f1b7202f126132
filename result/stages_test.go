package result

import (
	"strings"
	"testing"
)

// stagedResult is a run of 6 one-second intervals from t_s 1 (publishing starts at t_s 1):
// stage 0 is intervals 1-3 at 100 msgs/s with latencies of 1 ms, stage 1 intervals 4-6 at
// 300 msgs/s with 20 ms latencies, a schedule lag of 15 ms and 0.2 s held in interval 5;
// interval 6 lost 30 copies (its histograms hold every message written).
func stagedResult() *Result {
	r := &Result{Schema: Schema}
	r.Intervals = append(r.Intervals, Interval{TS: 1}) // connect
	for i := 1; i <= 6; i++ {
		stage := 0
		rate, lat, lag := int64(100), int64(1000), int64(100)
		if i > 3 {
			stage, rate, lat, lag = 1, 300, 20000, 15000
		}
		lh, rh, gh := NewHist(), NewHist(), NewHist()
		for range rate {
			lh.Record(lat)
			rh.Record(lat / 2)
			gh.Record(lag)
		}
		iv := Interval{TS: float64(1 + i), Stage: &stage, Offered: rate, OfferedPerS: float64(rate), Published: rate,
			Expected: rate, Received: rate, PublishPerS: float64(rate), ReceivePerS: float64(rate),
			Histograms: &IntervalHistograms{Latency: lh, LatencyRaw: rh, ScheduleLag: gh}}
		if i == 5 {
			iv.HeldUS = 200_000
		}
		if i == 6 {
			iv.Received -= 30
			iv.Unsent = 5
		}
		r.Intervals = append(r.Intervals, iv)
	}
	r.Intervals = append(r.Intervals, Interval{TS: 7.3}) // the drain's tail
	r.Stages = []Stage{{Index: 0, PublishRate: 10, StartS: 0, DurationS: 3, StageSummary: StageSummary{FromS: 1, ToS: 4}},
		{Index: 1, PublishRate: 30, Ramp: true, StartS: 3, DurationS: 3, StageSummary: StageSummary{FromS: 4, ToS: 7}}}
	r.SummarizeStages()
	return r
}

func TestStageSummaries(t *testing.T) {
	t.Parallel()
	r := stagedResult()
	s0, s1 := r.Stages[0], r.Stages[1]
	if s0.Intervals != 3 || s0.SpanS != 3 || s0.OfferedPerS != 100 || s0.Throughput.ReceivePerS != 100 ||
		s0.Messages.Published != 300 || s0.Messages.Lost != 0 || s0.LatencyUS.P99 != 1000 || s0.LatencyUS.Count != 300 {
		t.Errorf("stage 0: %+v", s0.StageSummary)
	}
	if s0.Client.Saturated || s0.BrokerStalled.Stalled || s0.PublishRate != 10 || s0.StartS != 0 {
		t.Errorf("stage 0 verdicts: %+v", s0)
	}
	if s1.Intervals != 3 || s1.OfferedPerS != 300 || s1.Messages.Received != 870 || s1.Messages.Lost != 30 ||
		s1.Messages.UnsentTotal != 5 || s1.Throughput.ReceivePerS != 290 || s1.LatencyUS.P50 < 19900 || s1.LatencyUS.P50 > 20100 {
		t.Errorf("stage 1: %+v", s1.StageSummary)
	}
	// Late while the broker held the publishers: one judgement, the broker's (Judge).
	if s1.Client.Saturated || !s1.BrokerStalled.Stalled || s1.BrokerStalled.HeldS != 0.2 {
		t.Errorf("stage 1 verdicts: client %+v, broker %+v", s1.Client, s1.BrokerStalled)
	}
	r.Intervals[5].HeldUS = 0 // late, and nothing held: the client's
	r.SummarizeStages()
	if c := r.Stages[1].Client; !c.Saturated || r.Stages[1].BrokerStalled.Stalled ||
		!strings.Contains(strings.Join(c.SaturationEvidence, ""), "schedule lag p99 15.007ms > 10ms") {
		t.Errorf("stage 1 without the hold: client %+v, broker %+v", c, r.Stages[1].BrokerStalled)
	}
	// Window takes intervals by time: the last two seconds of stage 0 and the first of
	// stage 1 (middles 2.5, 3.5 and 4.5 in [2, 5)).
	w := Window(r, 2, 5)
	if w.Intervals != 3 || w.Messages.Offered != 100+100+300 || w.LatencyUS.Count != 500 || w.LatencyUS.Max < 19900 {
		t.Errorf("window [2, 5): %+v", w)
	}
	if e := Window(r, 100, 200); e.Intervals != 0 || e.OfferedPerS != 0 || e.LatencyUS.Count != 0 {
		t.Errorf("an empty window: %+v", e)
	}
}

// TestStageThresholds: a stage's summary takes the result document's threshold paths, and
// refuses one it has not, naming its nearest fields.
func TestStageThresholds(t *testing.T) {
	t.Parallel()
	r := stagedResult()
	exprs := []string{"latency_us.p99<5000", "messages.lost==0", "messages.unsent_total==0", "throughput.receive_per_s>=95",
		"client.saturated==0", "broker_stalled.stalled==0", "offered_per_s>150"}
	s0, s1 := &r.Stages[0].StageSummary, &r.Stages[1].StageSummary
	if err := s0.EvaluateThresholds(exprs); err != nil {
		t.Fatal(err)
	}
	if err := s1.EvaluateThresholds(exprs); err != nil {
		t.Fatal(err)
	}
	ok := func(ts []Threshold) string {
		var b strings.Builder
		for _, x := range ts {
			if x.OK {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
		}
		return b.String()
	}
	if got := ok(s0.Thresholds); got != "++++++-" {
		t.Errorf("stage 0 verdicts %s: %+v", got, s0.Thresholds)
	}
	if got := ok(s1.Thresholds); got != "---++-+" { // stalled: not saturated beside it
		t.Errorf("stage 1 verdicts %s: %+v", got, s1.Thresholds)
	}
	if s1.Thresholds[1].Value != 30 || s1.Thresholds[0].Value < 19900 {
		t.Errorf("stage 1 values: %+v", s1.Thresholds)
	}
	err := s0.EvaluateThresholds([]string{"connections.refused==0"})
	if err == nil || !strings.Contains(err.Error(), `has no field "refused"`) || len(s0.Thresholds) != len(exprs) {
		t.Errorf("a path a summary has not: %v (thresholds kept: %d)", err, len(s0.Thresholds))
	}
	if err := CheckStageThresholdPaths([]string{"latency_us.p999<1", "messages.duplicated==0"}); err != nil {
		t.Error(err)
	}
	// The summary read back keeps its thresholds: SummarizeStages recomputes the figures only.
	r.SummarizeStages()
	if len(r.Stages[1].Thresholds) != len(exprs) {
		t.Errorf("SummarizeStages dropped the thresholds")
	}
}

// TestMergeStages: merged shards' stages come from their added intervals.
func TestMergeStages(t *testing.T) {
	t.Parallel()
	a, b := stagedResult(), stagedResult()
	m := Merge([]*Result{a, b})
	if len(m.Stages) != 2 {
		t.Fatalf("merged stages: %+v", m.Stages)
	}
	if s := m.Stages[1]; s.OfferedPerS != 600 || s.Messages.Lost != 60 || s.LatencyUS.Count != 2*900 || s.Intervals != 3 {
		t.Errorf("merged stage 1: %+v", s.StageSummary)
	}
	if a.Stages[1].OfferedPerS != 300 {
		t.Errorf("Merge changed its input: %+v", a.Stages[1])
	}
}
