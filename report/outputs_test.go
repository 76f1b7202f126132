package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqblast/mqblast/internal/doctable"
	"github.com/mqblast/mqblast/result"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata (result.json and the outputs, the summary and compare tables)")

// fixture builds the fixed result of the golden tests: a connect interval, two message
// intervals (one with kernel counters and the broker's figures), and the last, partial one.
func fixture() *result.Result {
	hist := func(from, n, step int64) *result.Hist {
		h := result.NewHist()
		for i := range n {
			h.Record(from + i*step)
		}
		return h
	}
	conn := hist(200, 100, 7)
	lat1, raw1 := hist(900, 500, 3), hist(800, 500, 3)
	lat2, raw2 := hist(1000, 700, 11), hist(950, 700, 10)
	lat3, raw3 := hist(5000, 20, 1000), hist(4000, 20, 900)
	iv := func(ts float64, d float64, open, published, received int64, lat, raw, con *result.Hist) result.Interval {
		return result.Interval{TS: ts, Established: open, Connected: con.Count(), ConnectPerS: float64(con.Count()) / d,
			ConnectLatencyUS: con.Summary(), Published: published, Expected: published, Received: received,
			PublishPerS: float64(published) / d, ReceivePerS: float64(received) / d,
			LatencyUS: lat.Summary(), LatencyRawUS: raw.Summary(), ClientCPUPercent: 12.5, ClientRSSBytes: 41 << 20,
			Histograms: &result.IntervalHistograms{Latency: lat, LatencyRaw: raw, ConnectLatency: con}}
	}
	ivs := []result.Interval{
		iv(1.002, 1.002, 100, 0, 0, nil, nil, conn),
		iv(2.003, 1.001, 100, 500, 500, lat1, raw1, nil),
		iv(3.001, 0.998, 100, 700, 700, lat2, raw2, nil),
		iv(3.4, 0.399, 0, 0, 20, lat3, raw3, nil),
	}
	ivs[1].ScheduleLagUS = hist(20, 500, 1).Summary() // the client's lateness while it published
	ivs[2].ScheduleLagUS = hist(30, 700, 2).Summary()
	ivs[2].Unsent, ivs[2].Unexpected, ivs[2].Duplicated = 3, 2, 1
	ivs[2].Kernel = map[string]int64{"tcp_syn_retrans": 4, "broker.listen_overflows": 1}
	ivs[1].BrokerCPUPercent, ivs[1].BrokerRSSBytes = 33.3, 12<<20
	ivs[2].BrokerCPUPercent, ivs[2].BrokerRSSBytes = 35.1, 13<<20
	lat, raw := result.NewHist(), result.NewHist()
	for _, h := range []*result.Hist{lat1, lat2, lat3} {
		lat.Merge(h)
	}
	for _, h := range []*result.Hist{raw1, raw2, raw3} {
		raw.Merge(h)
	}
	start := time.Date(2026, 12, 1, 12, 0, 0, 250e6, time.UTC)
	return &result.Result{Schema: result.Schema, ToolVersion: "test", StartedAt: start, EndedAt: start.Add(3400 * time.Millisecond),
		Broker: []string{"127.0.0.1:1883"}, Connections: result.Connections{Target: 100, Established: 100, ConnectLatencyUS: conn.Summary()},
		Messages:  result.Messages{Scheduled: 1203, Published: 1200, Expected: 1200, Received: 1220, UnsentTotal: 3},
		LatencyUS: lat.Summary(), LatencyRaw: raw.Summary(), Intervals: ivs,
		Histograms: result.Histograms{ConnectLatency: conn, Latency: lat, LatencyRaw: raw}, Errors: []result.ErrorCount{}}
}

// loadFixture reads testdata/result.json (rewritten from fixture with -update).
func loadFixture(t *testing.T) *result.Result {
	t.Helper()
	path := filepath.Join("testdata", "result.json")
	if *update {
		var b bytes.Buffer
		if err := fixture().WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r result.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// goldenBytes returns testdata/name, rewritten with got first under -update.
func goldenBytes(t *testing.T, name string, got []byte) []byte {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func TestWriteCSVGolden(t *testing.T) {
	r := loadFixture(t)
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := goldenBytes(t, "result.csv", b.Bytes()); !bytes.Equal(b.Bytes(), want) {
		t.Errorf("CSV differs from testdata/result.csv (go test -run TestWriteCSVGolden -update rewrites it):\n%s", b.String())
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1+len(r.Intervals) {
		t.Fatalf("%d lines, want a header and %d rows", len(lines), len(r.Intervals))
	}
	header := strings.Split(lines[0], ",")
	wantHeader := append(CSVColumns(), "kernel_broker.listen_overflows", "kernel_tcp_syn_retrans")
	if !slices.Equal(header, wantHeader) {
		t.Errorf("header %v\nwant %v", header, wantHeader)
	}
	// The rows add up to the result's counts (the intervals cover the run).
	col := func(name string) int { return slices.Index(header, name) }
	var published, received int64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		published += atoi(t, f[col("published")])
		received += atoi(t, f[col("received")])
	}
	if published != r.Messages.Published || received != r.Messages.Received {
		t.Errorf("rows sum to published %d received %d; the result has %d and %d", published, received,
			r.Messages.Published, r.Messages.Received)
	}
}

// TestWriteCSVExpectedUnknown: a document whose plan did not know its publishers (a sub
// alone) writes empty expected cells, not 0 of them beside the copies it received.
func TestWriteCSVExpectedUnknown(t *testing.T) {
	r := loadFixture(t)
	r.Messages.ExpectedUnknown = true
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	col := slices.Index(strings.Split(lines[0], ","), "expected")
	for _, l := range lines[1:] {
		if f := strings.Split(l, ","); f[col] != "" {
			t.Errorf("expected cell %q, want empty: %s", f[col], l)
		}
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if err := json.Unmarshal([]byte(s), &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// histLine is an interval line of an .hlog: Tag=T,start,length,max,payload.
var histLine = regexp.MustCompile(`^Tag=([a-z_]+),([\d.]+),([\d.]+),([\d.]+),(\S+)$`)

// TestWriteHlogGolden: the log equals the golden file line by line, histogram payloads
// compared decoded (their zlib bytes may change with the Go version, their counts not).
func TestWriteHlogGolden(t *testing.T) {
	r := loadFixture(t)
	var b bytes.Buffer
	if err := WriteHlog(&b, r); err != nil {
		t.Fatal(err)
	}
	want := goldenBytes(t, "result.hlog", b.Bytes())
	got, exp := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	if len(got) != len(exp) {
		t.Fatalf("%d lines, golden has %d:\n%s", len(got), len(exp), b.String())
	}
	for i := range got {
		g, w := histLine.FindStringSubmatch(got[i]), histLine.FindStringSubmatch(exp[i])
		if g == nil || w == nil {
			if got[i] != exp[i] {
				t.Errorf("line %d: %q, want %q", i+1, got[i], exp[i])
			}
			continue
		}
		if !slices.Equal(g[1:5], w[1:5]) {
			t.Errorf("line %d: %q, want %q", i+1, strings.Join(g[1:5], ","), strings.Join(w[1:5], ","))
		}
		hg, err1 := hdrhistogram.Decode([]byte(g[5]))
		hw, err2 := hdrhistogram.Decode([]byte(w[5]))
		if err1 != nil || err2 != nil || !hg.Equals(hw) {
			t.Errorf("line %d: histogram differs from the golden one (%v, %v)", i+1, err1, err2)
		}
	}
	for _, l := range []string{"#[StartTime: 1796126400 (seconds since epoch), 2026-12-01T12:00:00Z]",
		"#[BaseTime: 1796126400 (seconds since epoch)]",
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"`} {
		if !slices.Contains(got, l) {
			t.Errorf("no line %q", l)
		}
	}
}

// TestHlogReadBack: hdrhistogram-go's log reader reads every interval's histograms back,
// with the result's counts per interval and in total, and times inside the run.
func TestHlogReadBack(t *testing.T) {
	r := loadFixture(t)
	var b bytes.Buffer
	if err := WriteHlog(&b, r); err != nil {
		t.Fatal(err)
	}
	rd := hdrhistogram.NewHistogramLogReader(&b)
	type key struct {
		tag string
		i   int
	}
	counts := map[key]int64{}
	totals := map[string]*hdrhistogram.Histogram{}
	seen := map[string]int{}
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		i := seen[h.Tag()]
		seen[h.Tag()]++
		counts[key{h.Tag(), i}] = h.TotalCount()
		if totals[h.Tag()] == nil {
			totals[h.Tag()] = hdrhistogram.New(1, 3600*1e6, 3)
		}
		totals[h.Tag()].Merge(h)
		iv := r.Intervals[i]
		wantEnd := r.StartedAt.Add(time.Duration(iv.TS * float64(time.Second))).UnixMilli()
		if d := h.EndTimeMs() - wantEnd; d < -2 || d > 2 {
			t.Errorf("%s interval %d ends at %d ms, want %d", h.Tag(), i, h.EndTimeMs(), wantEnd)
		}
	}
	for _, tag := range HlogTags {
		if seen[tag] != len(r.Intervals) {
			t.Errorf("tag %s: %d intervals, want %d", tag, seen[tag], len(r.Intervals))
		}
	}
	for i, iv := range r.Intervals {
		for tag, want := range map[string]int64{TagLatency: iv.LatencyUS.Count, TagLatencyRaw: iv.LatencyRawUS.Count,
			TagConnect: iv.ConnectLatencyUS.Count} {
			if got := counts[key{tag, i}]; got != want {
				t.Errorf("interval %d %s: count %d, want %d", i, tag, got, want)
			}
		}
	}
	for tag, want := range map[string]result.Percentiles{TagLatency: r.LatencyUS, TagLatencyRaw: r.LatencyRaw,
		TagConnect: r.Connections.ConnectLatencyUS} {
		h := totals[tag]
		if h.TotalCount() != want.Count || h.Max() != want.Max || h.ValueAtQuantile(99) != want.P99 {
			t.Errorf("%s total: count %d max %d p99 %d, want %d %d %d", tag, h.TotalCount(), h.Max(),
				h.ValueAtQuantile(99), want.Count, want.Max, want.P99)
		}
	}
}

func TestWriteHlogOldResult(t *testing.T) {
	r := loadFixture(t)
	r.Intervals[1].Histograms = nil
	err := WriteHlog(&bytes.Buffer{}, r)
	if err == nil || !strings.Contains(err.Error(), "intervals[1].histograms") {
		t.Fatalf("err %v, want one naming intervals[1].histograms", err)
	}
}

// TestDocListsCSVColumns: docs/outputs.md lists exactly the CSV's fixed columns, in order.
func TestDocListsCSVColumns(t *testing.T) {
	got := docTable(t, "## CSV")
	if !slices.Equal(got, CSVColumns()) {
		t.Errorf("docs/outputs.md CSV columns:\n%v\nthe code's:\n%v", got, CSVColumns())
	}
}

// docTable returns the first cells (`name`) of the table rows in the section of
// docs/outputs.md that starts with heading.
func docTable(t *testing.T, heading string) []string {
	t.Helper()
	names, err := doctable.Column(filepath.Join("..", "docs", "outputs.md"), heading, regexp.MustCompile("^\\| `([^`]+)`"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("docs/outputs.md: no table under %q", heading)
	}
	return names
}

// TestDocListsGroupCSVColumns: docs/outputs.md lists exactly the per-group CSV columns.
func TestDocListsGroupCSVColumns(t *testing.T) {
	got := docTable(t, "## Groups in the CSV")
	var want []string
	for _, c := range groupColumns {
		want = append(want, c.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/outputs.md group columns:\n%v\nthe code's:\n%v", got, want)
	}
}

// TestWriteCSVGroups: a mixed run's CSV has each group's columns after the others, and
// each group's columns add up to its figures.
func TestWriteCSVGroups(t *testing.T) {
	r := &result.Result{}
	r.SetGroups([]result.GroupInfo{{Name: "devices", Clients: 3, Publishers: 1}, {Name: "backend", Clients: 1}})
	total := result.NewSnapshot()
	for i := range 3 {
		s := result.NewSnapshot()
		dev, back := result.NewSnapshot(), result.NewSnapshot()
		dev.Published, dev.Expected, dev.Received, dev.Connected = int64(10+i), int64(10+i), int64(10+i), 1
		dev.Latency.Record(int64(100 * (i + 1)))
		back.Delivered = int64(10 + i)
		s.Groups = []*result.Snapshot{dev, back}
		s.Published, s.Expected, s.Received, s.Connected = dev.Published, dev.Expected, dev.Received, dev.Connected
		r.Intervals = append(r.Intervals, result.NewInterval(float64(i+1), 1, s, time.Second))
		total.Add(s)
	}
	r.SetTotal(total)
	var b strings.Builder
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	header := strings.Split(lines[0], ",")
	if !slices.Equal(header[:len(CSVColumns())], CSVColumns()) || header[len(CSVColumns())] != "group_devices_connected" ||
		header[len(header)-1] != "group_backend_latency_max_us" {
		t.Fatalf("header %v", header)
	}
	col := func(name string) int { return slices.Index(header, name) }
	var published, delivered int64
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		published += atoi(t, f[col("group_devices_published")])
		delivered += atoi(t, f[col("group_backend_delivered")])
		if f[col("group_backend_latency_p99_us")] != "" || f[col("group_devices_latency_p99_us")] == "" {
			t.Errorf("latency cells: %q %q", f[col("group_backend_latency_p99_us")], f[col("group_devices_latency_p99_us")])
		}
	}
	if published != r.Groups[0].Messages.Published || delivered != r.Groups[1].Delivered || published != 33 {
		t.Errorf("group columns add up to published %d delivered %d; the groups have %d, %d", published, delivered,
			r.Groups[0].Messages.Published, r.Groups[1].Delivered)
	}
}
