package run

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// stagesP2P is a Point-To-Point scenario of 50 pairs at QoS 1 for the stages tests.
const stagesP2P = `{"name": "stages", "type": "Point-To-Point",
  "publishers":  {"id_prefix": "stg-pub-", "client_count": 50, "qos": 1, "topics": "stg/$clientindex"},
  "subscribers": {"id_prefix": "stg-sub-", "client_count": 50, "qos": 1, "topics": "stg/$clientindex"},
  "parameters":  {"connection_rate": 500, "publish_rate": 1, "drain_sec": 3}}`

// within reports whether got is within frac of want.
func within(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

// TestStagesRun: a run of three stages against Mosquitto (a step up to 20 msg/s per
// publisher, a ramp to 60, a step down to 10; 50 publishers) changes its offered rate with
// the connections up: every interval inside a stage offers what the stage's rate says at its
// middle, and writes and delivers that within 2 %; stages[] has each stage with its offered
// and achieved rates, and they add up to the run's; the summary has a line per stage, the
// CSV a stage and an offered_per_s column, and the HTML report draws a mark at each stage
// on its time charts (in Chromium).
func TestStagesRun(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	out, csvFile, html := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.html")
	r := doOK(t, &Spec{Scenario: spec.Scenario{Name: "stages", File: json.RawMessage(stagesP2P)}, Brokers: []string{m.Addr},
		Procs: 1, NoCheck: true, Stages: "4s:20,4s:ramp:60,4s:10", Outputs: spec.Outputs{Out: out, CSV: csvFile, HTML: html}})
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	// The stages as run.
	if len(res.Stages) != 3 {
		t.Fatalf("%d stages, want 3: %+v", len(res.Stages), res.Stages)
	}
	def := []struct {
		rate  float64
		ramp  bool
		start float64
	}{{20, false, 0}, {60, true, 4}, {10, false, 8}}
	for i, st := range res.Stages {
		if st.Index != i || st.PublishRate != def[i].rate || st.Ramp != def[i].ramp || st.StartS != def[i].start || st.DurationS != 4 {
			t.Errorf("stage %d: %+v, want rate %v ramp %v start %v duration 4", i, st, def[i].rate, def[i].ramp, def[i].start)
		}
	}
	// offered(t) per second, t seconds from the start of publishing: 50 publishers.
	rateAt := func(t float64) float64 {
		switch {
		case t < 4:
			return 50 * 20
		case t < 8:
			return 50 * (20 + (60-20)*(t-4)/4)
		default:
			return 50 * 10
		}
	}
	pubStart := res.Stages[0].ToS - 4 // the first stage ends 4 s after publishing starts
	perStage := make([]int, 3)
	prev := 0.0
	for i, iv := range res.Intervals {
		start := prev
		prev = iv.TS
		if iv.Stage == nil {
			if iv.Offered > 0 && iv.TS > pubStart+0.5 && iv.TS < pubStart+11.5 {
				t.Errorf("interval %d (t %.2f): offered %d but no stage", i, iv.TS, iv.Offered)
			}
			continue
		}
		s := *iv.Stage
		perStage[s]++
		mid := (start+iv.TS)/2 - pubStart
		if want := def[s]; mid < want.start || mid > want.start+4 {
			t.Errorf("interval %d (t %.2f, %.2f s into publishing) marked stage %d", i, iv.TS, mid, s)
		}
		d := iv.TS - start
		if d < 0.9 || d > 1.1 || iv.TS > pubStart+12 { // the last one is cut at the end of publishing
			continue
		}
		want := rateAt(mid)
		if !within(iv.OfferedPerS, want, 0.02) {
			t.Errorf("interval %d (stage %d, %.2f s into publishing): offered %.1f/s, want %.0f/s", i, s, mid, iv.OfferedPerS, want)
		}
		if !within(iv.PublishPerS, iv.OfferedPerS, 0.02) || !within(iv.ReceivePerS, iv.OfferedPerS, 0.02) {
			tm.Errorf("interval %d (stage %d): written %.1f/s, arrived %.1f/s, offered %.1f/s: want them within 2 %%",
				i, s, iv.PublishPerS, iv.ReceivePerS, iv.OfferedPerS)
		}
	}
	for s, n := range perStage {
		if n < 4 || n > 5 {
			t.Errorf("stage %d has %d intervals, want 4 (aligned to the start of publishing)", s, n)
		}
	}

	// Each stage's figures, and that they add up to the run's.
	var offered, published, received int64
	for i, st := range res.Stages {
		want := []float64{1000, 2000, 500}[i]
		if !within(st.OfferedPerS, want, 0.02) {
			t.Errorf("stage %d: offered %.1f/s, want %.0f/s", i, st.OfferedPerS, want)
		}
		if !within(st.Throughput.PublishPerS, want, 0.02) || !within(st.Throughput.ReceivePerS, want, 0.02) {
			tm.Errorf("stage %d: written %.1f/s, arrived %.1f/s, want %.0f/s", i, st.Throughput.PublishPerS, st.Throughput.ReceivePerS, want)
		}
		// A stage's lost is expected minus received over its intervals: copies in flight at its
		// edges count (a QoS 1 copy crossing a boundary), so it is held to those, a thousandth
		// of its copies; the run's own messages.lost is exact and held to 0 below.
		if st.Intervals != perStage[i] || st.LatencyUS.Count == 0 || st.Messages.Lost > st.Messages.Expected/1000 || st.BrokerStalled.Stalled {
			t.Errorf("stage %d: %d intervals (marked %d), latency %+v, lost %d, stalled %v", i, st.Intervals, perStage[i],
				st.LatencyUS, st.Messages.Lost, st.BrokerStalled.Stalled)
		}
		if st.Client.Saturated {
			tm.Errorf("stage %d: the client saturated: %v", i, st.Client.SaturationEvidence)
		}
		offered += st.Messages.Offered
		published += st.Messages.Published
		received += st.Messages.Received
	}
	if want := int64(50 * (4*20 + 4*40 + 4*10)); !within(float64(offered), float64(want), 0.005) ||
		!within(float64(res.Messages.Scheduled), float64(want), 0.005) {
		t.Errorf("offered %d over the stages, scheduled %d, want %d", offered, res.Messages.Scheduled, want)
	}
	if published > res.Messages.Published || received > res.Messages.Received ||
		!within(float64(published), float64(res.Messages.Published), 0.01) || res.Messages.Lost != 0 {
		t.Errorf("the stages wrote %d and received %d of the run's %d and %d (lost %d)", published, received,
			res.Messages.Published, res.Messages.Received, res.Messages.Lost)
	}

	// The summary, the CSV, the HTML report.
	for i := range 3 {
		if !strings.Contains(r.stdout, fmt.Sprintf("stage %d ", i)) {
			t.Errorf("summary without a line for stage %d:\n%s", i, r.stdout)
		}
	}
	checkStagesCSV(t, csvFile, perStage)
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `{"x":`+strconv.FormatFloat(res.Stages[1].ToS-4, 'g', -1, 64)+`,"label":"stage 1"}`) {
		t.Errorf("the report's charts have no mark at stage 1's start (%.3f)", res.Stages[1].ToS-4)
	}
	br := browsertest.Start(t)
	pg := br.Open(t, html, "window.mqblast && window.mqblast.ready")
	want := []string{"stage 0", "stage 1", "stage 2", "end"}
	for _, id := range []string{"throughput", "latency"} {
		got := browsertest.Eval[[]string](pg, `window.mqblast.charts["`+id+`"].marks`)
		if !slices.Equal(got, want) {
			t.Errorf("chart %s drew marks %q, want %q", id, got, want)
		}
	}
	if n := browsertest.Eval[int](pg, `document.querySelectorAll("#stages table.grid tr td:first-child").length`); n != 3 {
		t.Errorf("the Stages table has %d rows, want 3", n)
	}
	if errs := pg.Errors(); len(errs) > 0 {
		t.Errorf("page errors: %v", errs)
	}
}

// checkStagesCSV checks the CSV's stage and offered_per_s columns: each stage's rows, and
// offered cells on exactly the rows of a stage.
func checkStagesCSV(t *testing.T, file string, perStage []int) {
	t.Helper()
	rows := readCSV(t, file)
	si, oi := slices.Index(rows[0], "stage"), slices.Index(rows[0], "offered_per_s")
	if si < 0 || oi < 0 {
		t.Fatalf("CSV header %v: no stage or offered_per_s column", rows[0])
	}
	got := make([]int, len(perStage))
	for _, row := range rows[1:] {
		if row[si] == "" {
			continue
		}
		s, err := strconv.Atoi(row[si])
		if err != nil || s < 0 || s >= len(got) || row[oi] == "" {
			t.Errorf("CSV row stage %q offered %q", row[si], row[oi])
			continue
		}
		got[s]++
	}
	if !slices.Equal(got, perStage) {
		t.Errorf("CSV rows per stage %v, want the result's %v", got, perStage)
	}
}

// TestStagesWorkersAndPub: a staged run in two worker processes merges each instant's
// intervals together (each stage offers its rate), and a pub run of stages runs them.
func TestStagesWorkersAndPub(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	r := doOK(t, &Spec{Scenario: spec.Scenario{Name: "stages", File: json.RawMessage(strings.ReplaceAll(stagesP2P, "stg-", "stw-"))},
		Brokers: []string{m.Addr}, Procs: 2, NoCheck: true, Stages: "3s:10,3s:30"})
	res := r.res
	if len(res.Stages) != 2 {
		t.Fatalf("stages %+v", res.Stages)
	}
	for i, want := range []float64{500, 1500} {
		st := res.Stages[i]
		if !within(st.OfferedPerS, want, 0.03) || st.Intervals < 3 || st.Intervals > 4 {
			t.Errorf("stage %d: offered %.1f/s over %d intervals, want %.0f/s over 3", i, st.OfferedPerS, st.Intervals, want)
		}
	}
	for i, iv := range res.Intervals {
		if iv.Stage != nil && *iv.Stage == 1 && iv.Offered > 0 && !within(iv.OfferedPerS, 1500, 0.03) && i != len(res.Intervals)-2 {
			t.Errorf("interval %d of stage 1: offered %.1f/s, want 1500/s from both workers", i, iv.OfferedPerS)
		}
	}

	sp := pubSpec(m.Addr, "stp/$clientindex", "publishers.client_count=10", "publishers.id_prefix=stp-")
	sp.NoCheck, sp.Procs, sp.Stages = true, 1, "2s:10,2s:ramp:30"
	res = doOK(t, sp).res
	if len(res.Stages) != 2 || !within(res.Stages[0].OfferedPerS, 100, 0.03) || !within(res.Stages[1].OfferedPerS, 200, 0.03) {
		t.Errorf("pub stages: %+v", res.Stages)
	}
	if want := int64(10 * (2*10 + 2*20)); !within(float64(res.Messages.Scheduled), float64(want), 0.01) {
		t.Errorf("pub scheduled %d, want %d", res.Messages.Scheduled, want)
	}
}
