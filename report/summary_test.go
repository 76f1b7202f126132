package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/result"
)

// TestSummaryThresholds: the summary writes one line per threshold, its value as people
// read it and its verdict.
func TestSummaryThresholds(t *testing.T) {
	r := &result.Result{Schema: result.Schema}
	r.Thresholds = []result.Threshold{
		{Expr: "messages.lost==0", Value: 12, OK: false},
		{Expr: "latency_us.p99<50000", Value: 40000, OK: true},
		{Expr: "throughput.receive_per_s>=45000", Value: 45000.25, OK: true},
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, "threshold ") {
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	wantLines := []string{"threshold messages.lost==0 value 12 FAILED", "threshold latency_us.p99<50000 value 40000 ok",
		"threshold throughput.receive_per_s>=45000 value 45000.25 ok"}
	if d := cmp.Diff(wantLines, lines); d != "" {
		t.Errorf("summary threshold lines (-want +got)\n%s\n%s", d, buf.String())
	}
	if !strings.Contains(buf.String(), "messages.lost==0  value 12  FAILED") {
		t.Errorf("summary:\n%s", buf.String())
	}
}

// TestSummaryOfOldDocuments: the text summary of a document with every field set, and of
// the merge of two such shards, is what the code of commit 97f72b7 wrote for them (its
// bench.Result.WriteSummary; the documents are the result package's testdata), but for
// the verdicts: HOST LIMITED names its evidence, and the merge, judged anew, says who
// limited it (the sink of a calibration run that stalled: the host).
func TestSummaryOfOldDocuments(t *testing.T) {
	doc := func(n string) *result.Result { return load(t, filepath.Join("../../result/testdata/v1", n+".json")) }
	for name, r := range map[string]*result.Result{
		"v1-shard0.summary":        doc("shard0"),
		"v1-merged-shards.summary": result.Merge([]*result.Result{doc("shard0"), doc("shard1")}),
	} {
		var buf bytes.Buffer
		if err := WriteSummary(&buf, r); err != nil {
			t.Fatal(err)
		}
		golden(t, name, buf.String())
	}
}

// TestSummaryInexact: a merged result whose joins left pieces out says which figures are
// inexact, under the delivery line.
func TestSummaryInexact(t *testing.T) {
	r := &result.Result{Schema: result.Schema}
	r.Messages.Published, r.Messages.Inexact = 10, "1 share-group sets left out over the 16 MiB bound"
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "inexact          received, duplicated, lost and in flight count only what each part saw of some streams: "+
		"1 share-group sets left out over the 16 MiB bound") {
		t.Errorf("summary:\n%s", buf.String())
	}
}

// TestSummaryGroups: a mixed run's summary has a line per group with its connections,
// storm, delivery and latency, and the reconnects' latency.
func TestSummaryGroups(t *testing.T) {
	t.Parallel()
	r := &result.Result{}
	total := result.NewSnapshot()
	dev, cmd := result.NewSnapshot(), result.NewSnapshot()
	dev.Connected, dev.Reconnected, dev.Published, dev.Scheduled, dev.Expected, dev.Received = 100, 10, 50, 50, 50, 50
	dev.ReconnectLatency.Record(2000)
	dev.Latency.Record(300)
	cmd.Connected, cmd.Delivered = 2, 50
	total.Groups = []*result.Snapshot{dev, cmd}
	for _, g := range total.Groups {
		total.Add(&result.Snapshot{Connected: g.Connected, Reconnected: g.Reconnected, Published: g.Published,
			Scheduled: g.Scheduled, Expected: g.Expected, Received: g.Received})
	}
	total.ReconnectLatency.Record(2000)
	r.SetGroups([]result.GroupInfo{{Name: "devices", Behaviours: []string{"publish"}, Clients: 100, Publishers: 5},
		{Name: "backend\x1b[31m", Behaviours: []string{"subscribe"}, Clients: 2}})
	r.SetTotal(total)
	r.Groups[0].Churn = &result.Churn{AtS: 20, Clients: 10, Ended: 10}
	var b strings.Builder
	if err := WriteSummary(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"10 times after drops and reconnect storms, reconnect latency p50 2.0ms",
		"100 clients (publish): 100 connected, 0 failed, 0 dropped; storm at +20s: 10 of 10 ended (persistent sessions), 10 reconnected (p50 2.0ms p99 2.0ms); 5 publishing: 50 published, 0 unsent, 50 expected: 50 received, 0 lost, 0 in flight; latency p50 300µs",
		`group backend\x1b[31m`,
		"2 clients (subscribe): 2 connected, 0 failed, 0 dropped; its clients received 50",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// TestRedeliveredAndNotShared: re-deliveries and the copies a broker that does not share
// never delivered have their own line in the summary and row in the report's delivery
// panel, after duplicated; neither is shown when 0.
func TestRedeliveredAndNotShared(t *testing.T) {
	r := &result.Result{Schema: result.Schema}
	m := &r.Messages
	m.Published, m.Expected, m.Received, m.Redelivered, m.NotSharedCopies = 20, 20, 10, 3, 10
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"redelivered      3 copies again at QoS 1",
		"not delivered    10 expected copies on $share/ filters of a broker that does not share"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
	var keys []string
	for _, row := range deliveryPanel(r).Rows {
		keys = append(keys, row.Key)
	}
	got := strings.Join(keys, "|")
	if !strings.Contains(got, "duplicated|redelivered (QoS 1 permits it)|not delivered: $share/ on a broker that does not share|out of order") {
		t.Errorf("delivery rows %s", got)
	}
	m.Redelivered, m.NotSharedCopies = 0, 0
	keys = keys[:0]
	for _, row := range deliveryPanel(r).Rows {
		keys = append(keys, row.Key)
	}
	if got := strings.Join(keys, "|"); strings.Contains(got, "redelivered") || strings.Contains(got, "not delivered") {
		t.Errorf("rows of 0 shown: %s", got)
	}
}

// TestLimitStepVerdicts: a search's steps read the same in the text summary and in the HTML
// panel's table: a step that held, one that failed with the SLO it broke, one whose
// failure its repeat overruled, and one that held at a rate found not sustained (never an
// empty reason).
func TestLimitStepVerdicts(t *testing.T) {
	r := load(t, "limit.json")
	r.Limit.Steps[1].Overruled = true // held, at a rate where two steps failed
	r.Limit.Steps[3].Overruled = true // 32,000 msg/s: failed, then held on its repeat
	var buf bytes.Buffer
	if err := WriteSummary(&buf, r); err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "step ") {
			text = append(text, l[strings.Index(l, "unsent ")+len("unsent 0: "):])
		}
	}
	var table []string
	for _, row := range limitPanel(r).Tables[0].Rows {
		table = append(table, row[len(row)-1])
	}
	want := []string{"holds", "held, overruled: two steps at this rate failed (not sustained)", "fails: latency_us.p99<5000 (was 12703)",
		"failed, then held on its repeat: latency_us.p99<5000 (was 6507)",
		"fails: latency_us.p99<5000 (was 7879)", "fails: latency_us.p99<5000 (was 7119)"}
	if d := cmp.Diff(want, table); d != "" {
		t.Errorf("panel verdicts (-want +got)\n%s", d)
	}
	for i := range want {
		want[i] = strings.Replace(want[i], "fails: ", "FAILS ", 1)
	}
	if d := cmp.Diff(want, text); d != "" {
		t.Errorf("summary verdicts (-want +got)\n%s\n%s", d, buf.String())
	}
}

// TestSummaryVerdictsAgree: the overload run's document (Mosquitto on the client's host at
// 99 % of a core, not reading, the client 33 ms late having waited half a core's time for
// a CPU) prints BROKER STALLED, BROKER BUSY, HOST LIMITED with its evidence (no kernel
// line to see) and who limited the run, and never SATURATED beside them; without the
// broker's evidence, the same lateness is the host's, and without the wait the client's.
func TestSummaryVerdictsAgree(t *testing.T) {
	t.Parallel()
	doc := func(busy, held bool, wait float64) string {
		r := &result.Result{Host: result.HostInfo{Cores: 2}, Throughput: result.Throughput{WindowS: 7}}
		r.Messages.Scheduled, r.Messages.Published = 480_000, 470_000
		r.Client.ScheduleLagUS.P99, r.Client.CPUMeasureS, r.Client.RunDelayS = 32_767, 3.2, wait
		r.BrokerProcess = &result.BrokerProcess{Source: "/proc", PID: 7}
		if held {
			r.BrokerStalled = result.BrokerStalled{HeldS: map[string]float64{"back_pressure": 2},
				Evidence: []string{"back_pressure: 10 publishers held 40 times for 2s in all (the socket did not take the bytes: the broker did not read)"}}
		}
		r.BrokerBusy = &result.BrokerBusy{}
		if busy {
			r.BrokerBusy = &result.BrokerBusy{Busy: true, Evidence: []string{"broker process CPU 99% of a core over the measure window (pid 7, /proc)"}}
		}
		r.Judge()
		var buf bytes.Buffer
		if err := WriteSummary(&buf, r); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	heads := func(s string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			for _, h := range []string{"SATURATED", "BROKER STALLED", "BROKER BUSY", "HOST LIMITED", "limited by"} {
				if strings.HasPrefix(l, h+" ") {
					m[h] = strings.TrimSpace(strings.TrimPrefix(l, h))
				}
			}
		}
		return m
	}
	got := heads(doc(true, true, 3.65))
	if _, ok := got["SATURATED"]; ok || got["BROKER STALLED"] == "" || got["BROKER BUSY"] == "" ||
		!strings.Contains(got["HOST LIMITED"], "its threads waited 3.65 s for a CPU") || strings.Contains(got["HOST LIMITED"], "kernel lines") ||
		!strings.HasPrefix(got["limited by"], "the broker: the broker's CPU was at its limit") {
		t.Errorf("overload headlines: %q", got)
	}
	got = heads(doc(false, false, 3.65))
	if _, ok := got["SATURATED"]; ok || !strings.Contains(got["HOST LIMITED"], "the host's cores are short") ||
		!strings.HasPrefix(got["limited by"], "the host: the client was late while its threads waited for a CPU (the figures are a lower bound") {
		t.Errorf("late while waiting: %q", got)
	}
	got = heads(doc(false, false, 0))
	if _, ok := got["HOST LIMITED"]; ok || !strings.HasPrefix(got["SATURATED"], "the client, not the broker, limited this run: schedule lag p99 32.767ms > 10ms") ||
		!strings.HasPrefix(got["limited by"], "the client:") {
		t.Errorf("late by itself: %q", got)
	}
}
