package result

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr  string
		want  ThresholdExpr
		error string // a part of the error; "" for none
	}{
		{expr: "messages.lost==0", want: ThresholdExpr{Path: []string{"messages", "lost"}, Op: "==", Limit: 0}},
		{expr: " latency_us.p99 < 50000 ", want: ThresholdExpr{Path: []string{"latency_us", "p99"}, Op: "<", Limit: 50000}},
		{expr: "connections.failed<=10", want: ThresholdExpr{Path: []string{"connections", "failed"}, Op: "<=", Limit: 10}},
		{expr: "throughput.receive_per_s>=4.5e4", want: ThresholdExpr{Path: []string{"throughput", "receive_per_s"}, Op: ">=", Limit: 45000}},
		{expr: "client.saturated!=1", want: ThresholdExpr{Path: []string{"client", "saturated"}, Op: "!=", Limit: 1}},
		{expr: "messages.acked>-1.5", want: ThresholdExpr{Path: []string{"messages", "acked"}, Op: ">", Limit: -1.5}},
		{expr: "messages.lost", error: "no comparison operator"},
		{expr: "messages.lost=0", error: "compare with =="},
		{expr: "messages.lost=<0", error: "compare with =="},
		{expr: "messages.lost!0", error: `"!0" is not an operator`},
		{expr: "==0", error: "no field path"},
		{expr: "messages.lost<", error: "no number after <"},
		{expr: "messages.lost<ten", error: `"ten" is not a number`},
		{expr: "messages.lost<NaN", error: `"NaN" is not a number`},
		{expr: "messages..lost<1", error: "empty path element"},
		{expr: "messages. lost<1", error: "holds a space"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := ParseThreshold(tc.expr)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) || !strings.Contains(err.Error(), tc.expr) {
					t.Fatalf("error %v, want one naming %q and saying %q", err, tc.expr, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Expr = tc.expr
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestCheckThresholdPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr  string
		error []string // parts of the error; nil for none
	}{
		{expr: "messages.lost==0"},
		{expr: "latency_us.p99<50000"},
		{expr: "connections.connect_latency_us.p999<1e6"},
		{expr: "client.saturated==0"},                         // a boolean
		{expr: "connections.refused.not_authorized==0"},       // a map key, absent or not
		{expr: "messages.subscribe_refused.quota_exceeded<1"}, // a map that is omitted when empty
		{expr: "interrupted==0"},
		{expr: "messages.lots==0", error: []string{`"messages.lots==0"`, `messages has no field "lots"`, "nearest: lost"}},
		{expr: "latency.p99<1", error: []string{`the result has no field "latency"`, "latency_us"}},
		{expr: "messages==0", error: []string{"messages is an object, not a number", "lost"}},
		{expr: "connections.refused<1", error: []string{"connections.refused is a map", "connections.refused.KEY"}},
		{expr: "messages.lost.x==0", error: []string{"messages.lost is a number and has no field \"x\""}},
		{expr: "broker==0", error: []string{"broker is a list, not a number"}},
		{expr: "schema==1", error: []string{"schema is a string, not a number"}},
		{expr: "started_at>0", error: []string{"started_at is a string, not a number"}},
		{expr: "scenario.parameters.publish_rate>0", error: []string{"scenario is raw JSON, not a number"}},
		{expr: "histograms.latency>0", error: []string{"histograms.latency is"}},
		{expr: "messages.lost=0", error: []string{"compare with =="}},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			err := CheckThresholdPaths([]string{tc.expr})
			if tc.error == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.error)
			}
			for _, want := range tc.error {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
	err := CheckThresholdPaths([]string{"messages.lots==0", "messages.lost==0", "x<1"})
	if err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("two bad expressions: want both reported, got %v", err)
	}
}

func TestEvaluateThresholds(t *testing.T) {
	t.Parallel()
	r := &Result{Schema: Schema}
	r.Messages.Lost = 12
	r.Messages.Published = 1000
	r.LatencyUS.P99 = 40000
	r.Throughput.ReceivePerS = 45000.25
	r.Client.Saturated = true
	r.Connections.Refused = map[string]int64{"not_authorized": 3}
	exprs := []string{"messages.lost==0", "latency_us.p99<50000", "throughput.receive_per_s>=45000",
		"client.saturated==0", "connections.refused.not_authorized<=3", "connections.refused.banned==0",
		"messages.subscribe_refused.quota_exceeded==0", "interrupted!=1"}
	if err := r.EvaluateThresholds(exprs); err != nil {
		t.Fatal(err)
	}
	want := []Threshold{
		{Expr: "messages.lost==0", Value: 12, OK: false},
		{Expr: "latency_us.p99<50000", Value: 40000, OK: true},
		{Expr: "throughput.receive_per_s>=45000", Value: 45000.25, OK: true},
		{Expr: "client.saturated==0", Value: 1, OK: false},
		{Expr: "connections.refused.not_authorized<=3", Value: 3, OK: true},
		{Expr: "connections.refused.banned==0", Value: 0, OK: true},
		{Expr: "messages.subscribe_refused.quota_exceeded==0", Value: 0, OK: true},
		{Expr: "interrupted!=1", Value: 0, OK: true},
	}
	if d := cmp.Diff(want, r.Thresholds); d != "" {
		t.Fatalf("(-want +got)\n%s", d)
	}
	if f := r.FailedThresholds(); len(f) != 2 || f[0].Expr != "messages.lost==0" || f[1].Expr != "client.saturated==0" {
		t.Errorf("failed %+v", f)
	}

	// A second evaluation replaces the first; a bad path leaves them as they were.
	if err := r.EvaluateThresholds([]string{"messages.published>999"}); err != nil || len(r.Thresholds) != 1 || !r.Thresholds[0].OK {
		t.Fatalf("%v %+v", err, r.Thresholds)
	}
	if err := r.EvaluateThresholds([]string{"messages.nope>1"}); err == nil || len(r.Thresholds) != 1 {
		t.Fatalf("bad path: %v %+v", err, r.Thresholds)
	}
}

func TestFormatThresholdValue(t *testing.T) {
	t.Parallel()
	check := func(v float64, want string) {
		t.Helper()
		if got := FormatThresholdValue(v); got != want {
			t.Errorf("FormatThresholdValue(%v) = %q, want %q", v, got, want)
		}
	}
	check(0, "0")
	check(12, "12")
	check(1e12, "1000000000000")
	check(45000.25, "45000.25")
	check(1.0/3, "0.333")
}

// TestMergeDropsThresholds: the verdicts of one shard are not those of the merged run.
func TestMergeDropsThresholds(t *testing.T) {
	t.Parallel()
	a := &Result{Schema: Schema, Thresholds: []Threshold{{Expr: "messages.lost==0", OK: true}}}
	b := &Result{Schema: Schema}
	if m := Merge([]*Result{a, b}); m.Thresholds != nil {
		t.Errorf("merged thresholds %+v", m.Thresholds)
	}
	if len(a.Thresholds) != 1 {
		t.Error("Merge changed a shard")
	}
}

// TestThresholdPathsFollowTheType: fields that the result gains later (a map under
// messages, a pointer to a struct that is omitted when nil, an open map of any) are valid
// paths once they are in the type, and read as 0 while absent from the document.
func TestThresholdPathsFollowTheType(t *testing.T) {
	t.Parallel()
	type stalled struct {
		LagUS Percentiles `json:"lag_us"`
	}
	type later struct {
		Messages struct {
			Unsent        map[string]int64 `json:"unsent,omitempty"`
			InFlightAtEnd int64            `json:"in_flight_at_end"`
		} `json:"messages"`
		BrokerStalled *stalled       `json:"broker_stalled,omitempty"`
		Kernel        map[string]any `json:"kernel,omitempty"`
	}
	typ := reflect.TypeFor[later]()
	for _, p := range []string{"messages.unsent.back_pressure", "messages.in_flight_at_end",
		"broker_stalled.lag_us.p99", "kernel.listen_overflows"} {
		if err := checkPath(typ, "the result", strings.Split(p, ".")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := checkPath(typ, "the result", []string{"messages", "unsent"}); err == nil || !strings.Contains(err.Error(), "is a map") {
		t.Errorf("messages.unsent: %v", err)
	}
	doc := map[string]any{"messages": map[string]any{"in_flight_at_end": 3.0}}
	for p, want := range map[string]float64{"messages.unsent.back_pressure": 0, "messages.in_flight_at_end": 3,
		"broker_stalled.lag_us.p99": 0} {
		if v, known, err := lookupNumber(doc, strings.Split(p, ".")); err != nil || v != want || !known {
			t.Errorf("%s = %v (known %v), %v; want %v", p, v, known, err, want)
		}
	}
}

// TestExpectedUnknown: a result whose plan does not know its publishers writes expected and
// lost as null (and says expected_unknown), reads back as unknown, and a threshold on them
// does not hold (unknown) while one on a known figure still does; a merge with such a
// shard is unknown too.
func TestExpectedUnknown(t *testing.T) {
	t.Parallel()
	total := NewSnapshot()
	total.Received = 16002
	r := &Result{Messages: Messages{ExpectedUnknown: true}}
	r.SetTotal(total)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Messages map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"expected", "lost"} {
		if v, ok := doc.Messages[k]; !ok || v != nil {
			t.Errorf("messages.%s = %v (present %v), want null", k, v, ok)
		}
	}
	if doc.Messages["expected_unknown"] != true || doc.Messages["received"] != 16002.0 {
		t.Errorf("messages %v", doc.Messages)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || !back.Messages.ExpectedUnknown || back.Messages.Received != 16002 {
		t.Fatalf("read back: %v %+v", err, back.Messages)
	}
	if err := back.EvaluateThresholds([]string{"messages.lost==0", "messages.expected>=0", "messages.received>0"}); err != nil {
		t.Fatal(err)
	}
	want := []Threshold{{Expr: "messages.lost==0", Unknown: true}, {Expr: "messages.expected>=0", Unknown: true},
		{Expr: "messages.received>0", Value: 16002, OK: true}}
	if !reflect.DeepEqual(back.Thresholds, want) || back.Thresholds[0].ValueText() != "unknown" {
		t.Errorf("thresholds %+v, want %+v", back.Thresholds, want)
	}
	known := &Result{}
	known.SetTotal(NewSnapshot())
	if b, _ := json.Marshal(known); !strings.Contains(string(b), `"expected":0,`) || strings.Contains(string(b), "expected_unknown") {
		t.Errorf("a known expected is written as before: %s", b)
	}
	if m := Merge([]*Result{known, &back}); !m.Messages.ExpectedUnknown || m.Messages.Lost != 0 {
		t.Errorf("merged with an unknown shard: %+v", m.Messages)
	}
	if err := CheckThresholdPaths([]string{"messages.expected_unknown==0", "messages.nope==0"}); err == nil ||
		!strings.Contains(err.Error(), `messages has no field "nope"`) || strings.Contains(err.Error(), "expected_unknown") {
		t.Errorf("paths under messages are still checked: %v", err)
	}
}
