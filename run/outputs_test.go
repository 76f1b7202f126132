package run

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// promText is one scrape of a /metrics page: each sample line's value by its name and
// labels as written (name{labels}), and the sum over labels by name.
type promText struct {
	samples map[string]float64
	byName  map[string]float64
}

// scrapeMetrics fetches url; ok is false when nothing listens (yet, or any more).
func scrapeMetrics(url string) (promText, bool) {
	resp, err := http.Get(url)
	if err != nil {
		return promText{}, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return promText{}, false
	}
	p := promText{samples: map[string]float64{}, byName: map[string]float64{}}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			return promText{}, false
		}
		key := l[:i]
		p.samples[key] = v
		name, _, _ := strings.Cut(key, "{")
		p.byName[name] += v
	}
	return p, sc.Err() == nil
}

// metricsRun runs sp serving its metrics on a free loopback port for 1 s after its end,
// scraping /metrics every 100 ms while it runs; it returns its result, every scrape, and
// the last one taken once mqblast_run_finished was 1.
func metricsRun(t *testing.T, sp *Spec) (*result.Result, []promText, promText) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	url := "http://" + addr + "/metrics"
	sp.Outputs.Metrics, sp.Outputs.MetricsHold = addr, spec.Duration(time.Second)
	run := goSpec(context.Background(), t, sp)
	exited := make(chan ran, 1)
	go func() { exited <- run.wait() }()
	var scrapes []promText
	var final promText
	var r ran
	finished := false
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case r = <-exited:
			if r.err != nil {
				t.Fatalf("%v\n%s", r.err, r.stderr)
			}
			break wait
		case <-tick.C:
			if p, ok := scrapeMetrics(url); ok {
				scrapes = append(scrapes, p)
				if p.byName["mqblast_run_finished"] == 1 && !finished {
					finished, final = true, p
				}
			}
		}
	}
	if !finished {
		t.Fatalf("no scrape saw mqblast_run_finished 1 (%d scrapes)\n%s", len(scrapes), r.stderr)
	}
	if !strings.Contains(r.stderr, "metrics at http://"+addr+"/metrics") {
		t.Errorf("stderr does not say where the metrics are:\n%s", r.stderr)
	}
	return r.res, scrapes, final
}

// checkMetrics holds the scrapes of a run against its result: counters and histogram
// counts never went down, and the last scrape has the result's figures.
func checkMetrics(t *testing.T, res *result.Result, scrapes []promText, final promText) {
	t.Helper()
	if len(scrapes) < 5 {
		t.Errorf("only %d scrapes during the run", len(scrapes))
	}
	for i := 1; i < len(scrapes); i++ {
		for k, v := range scrapes[i-1].samples {
			name, _, _ := strings.Cut(k, "{")
			growing := strings.HasSuffix(name, "_total") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_bucket")
			if growing && scrapes[i].samples[k] < v {
				t.Errorf("scrape %d: %s went down from %v to %v", i, k, v, scrapes[i].samples[k])
			}
		}
	}
	// The scrapes saw the run under way: messages counted before its end.
	under := 0
	for _, p := range scrapes {
		if p.byName["mqblast_run_finished"] == 0 && p.byName["mqblast_messages_received_total"] > 0 {
			under++
		}
	}
	if under < 3 {
		t.Errorf("only %d scrapes saw messages while the run went on", under)
	}
	m, c := res.Messages, res.Connections
	for name, want := range map[string]float64{
		"mqblast_messages_published_total":          float64(m.Published),
		"mqblast_messages_received_total":           float64(m.Received),
		"mqblast_messages_expected_total":           float64(m.Expected),
		"mqblast_messages_lost_total":               float64(m.Lost),
		"mqblast_connections_connected_total":       float64(c.Established),
		"mqblast_connections_target":                float64(c.Target),
		"mqblast_latency_seconds_count":             float64(res.LatencyUS.Count),
		"mqblast_latency_raw_seconds_count":         float64(res.LatencyRaw.Count),
		"mqblast_connect_latency_seconds_count":     float64(c.ConnectLatencyUS.Count),
		`mqblast_latency_seconds_bucket{le="+Inf"}`: float64(res.LatencyUS.Count),
	} {
		got, ok := final.samples[name]
		if !ok {
			got = final.byName[name]
		}
		if got != want {
			t.Errorf("%s = %v, the result has %v", name, got, want)
		}
	}
	if m.Published == 0 || res.LatencyUS.Count == 0 || res.LatencyRaw.Count == 0 {
		t.Fatalf("the run measured nothing: published %d, latency %d, raw %d", m.Published, res.LatencyUS.Count, res.LatencyRaw.Count)
	}
	// The median's bucket: the result's p50 lies at or below the first bound holding half.
	var bounds []float64
	for k := range final.samples {
		if le, ok := strings.CutPrefix(k, `mqblast_latency_seconds_bucket{le="`); ok {
			if b, err := strconv.ParseFloat(strings.TrimSuffix(le, `"}`), 64); err == nil {
				bounds = append(bounds, b)
			}
		}
	}
	half := float64(res.LatencyUS.Count) / 2
	for _, b := range bounds {
		n := final.samples[fmt.Sprintf(`mqblast_latency_seconds_bucket{le="%s"}`, strconv.FormatFloat(b, 'g', -1, 64))]
		p50 := float64(res.LatencyUS.P50) / 1e6
		if n >= half && p50 > b*1.001 || n < half && p50 < b*0.999 {
			t.Errorf("bucket le=%v holds %v of %v values, but the result's p50 is %v s", b, n, res.LatencyUS.Count, p50)
		}
	}
	if cpu := final.byName["mqblast_client_cpu_seconds_total"]; cpu <= 0 || cpu > res.Client.CPUS*1.5+0.1 {
		t.Errorf("client CPU %v s, the result has %v s", cpu, res.Client.CPUS)
	}
}

// TestRunMetricsMosquitto: /metrics scraped during a real run against Mosquitto, with the
// CSV and .hlog of the same run, all checked against the result.
func TestRunMetricsMosquitto(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	csvPath, hlogPath := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.hlog")
	sp := quick("quick-p2p-100", m.Addr, "parameters.payload_size=32", "parameters.warmup_sec=1")
	sp.Duration, sp.Procs, sp.Outputs.CSV, sp.Outputs.Hlog = spec.Duration(3*time.Second), 1, csvPath, hlogPath
	res, scrapes, final := metricsRun(t, sp)
	checkMetrics(t, res, scrapes, final)
	checkFiles(t, res, csvPath, hlogPath)
}

// TestRunMetricsProcs2: with two worker processes the parent serves the merged view, equal
// to the merged result.
func TestRunMetricsProcs2(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-p2p-100", m.Addr, "parameters.payload_size=32", "parameters.warmup_sec=1")
	sp.Duration, sp.Procs = spec.Duration(3*time.Second), 2
	res, scrapes, final := metricsRun(t, sp)
	if res.Host.Procs != 2 {
		t.Fatalf("host.procs %d, want 2", res.Host.Procs)
	}
	checkMetrics(t, res, scrapes, final)
}

// readCSV reads the rows of the CSV file at path.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkFiles reads a run's CSV and .hlog: the rows add up to the result's counts, and the
// log read back with hdrhistogram-go's reader holds the result's latency count.
func checkFiles(t *testing.T, res *result.Result, csvPath, hlogPath string) {
	t.Helper()
	rows := readCSV(t, csvPath)
	if len(rows) != 1+len(res.Intervals) {
		t.Errorf("CSV: %d rows, want a header and %d intervals", len(rows), len(res.Intervals))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var published, received, lat int64
	for _, r := range rows[1:] {
		for name, sum := range map[string]*int64{"published": &published, "received": &received, "latency_count": &lat} {
			n, err := strconv.ParseInt(r[col[name]], 10, 64)
			if err != nil {
				t.Fatalf("CSV %s %q: %v", name, r[col[name]], err)
			}
			*sum += n
		}
	}
	if published != res.Messages.Published || received != res.Messages.Received || lat != res.LatencyUS.Count {
		t.Errorf("CSV rows: published %d received %d latency %d; result %d %d %d", published, received, lat,
			res.Messages.Published, res.Messages.Received, res.LatencyUS.Count)
	}
	h, err := os.Open(hlogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rd := hdrhistogram.NewHistogramLogReader(h)
	counts := map[string]int64{}
	for {
		x, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if x == nil {
			break
		}
		counts[x.Tag()] += x.TotalCount()
	}
	if counts["latency"] != res.LatencyUS.Count || counts["latency_raw"] != res.LatencyRaw.Count ||
		counts["connect"] != res.Connections.ConnectLatencyUS.Count {
		t.Errorf(".hlog counts %v; result latency %d raw %d connect %d", counts, res.LatencyUS.Count,
			res.LatencyRaw.Count, res.Connections.ConnectLatencyUS.Count)
	}
}
