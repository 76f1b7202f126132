package metrics

import (
	"encoding/json"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mqblast/mqblast/internal/doctable"
	"github.com/mqblast/mqblast/result"
)

// scrape fetches and parses url's metrics.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mf
}

func value(t *testing.T, mf map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f := mf[name]
	if f == nil || len(f.Metric) == 0 {
		t.Fatalf("no metric %s", name)
	}
	var v float64
	for _, m := range f.Metric {
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Histogram != nil:
			v += float64(m.Histogram.GetSampleCount())
		}
	}
	return v
}

// snapshotOf is the snapshot of a result's interval, as the run would have handed it over.
func snapshotOf(iv result.Interval, d float64) *result.Snapshot {
	s := result.NewSnapshot()
	s.Connected, s.Published, s.Expected, s.Received, s.Duplicated = iv.Connected, iv.Published, iv.Expected, iv.Received, iv.Duplicated
	s.Failed["timeout"] = iv.Failed
	s.Unsent["disconnected"] = iv.Unsent
	s.Unexpected["not_subscribed"] = iv.Unexpected
	s.CPUNS = int64(iv.ClientCPUPercent / 100 * d * 1e9)
	s.RSSBytes = iv.ClientRSSBytes
	s.Latency.Merge(iv.Histograms.Latency)
	s.LatencyRaw.Merge(iv.Histograms.LatencyRaw)
	s.ConnectLatency.Merge(iv.Histograms.ConnectLatency)
	return s
}

// TestLiveIntervals feeds the intervals of the report's fixed result one by one and scrapes
// after each: counters never go down, and at the end they and the histograms' counts are
// the result's.
func TestLiveIntervals(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r result.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	l := NewLive(r.Connections.Target, 2)
	s, err := Serve("127.0.0.1:0", l)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := "http://" + s.Addr() + "/metrics"
	prev := map[string]float64{}
	prevTS := 0.0
	for _, iv := range r.Intervals {
		if err := l.Interval(iv, snapshotOf(iv, iv.TS-prevTS)); err != nil {
			t.Fatal(err)
		}
		prevTS = iv.TS
		mf := scrape(t, url)
		for name, f := range mf {
			if f.GetType() != dto.MetricType_COUNTER && f.GetType() != dto.MetricType_HISTOGRAM {
				continue
			}
			v := value(t, mf, name)
			if v < prev[name] {
				t.Errorf("%s went down: %v after %v", name, v, prev[name])
			}
			prev[name] = v
		}
		if got := value(t, mf, "mqblast_connections_established"); got != float64(iv.Established) {
			t.Errorf("established %v, want %d", got, iv.Established)
		}
	}
	mf := scrape(t, url)
	if value(t, mf, "mqblast_run_finished") != 0 {
		t.Error("finished before Finish")
	}
	if mf["mqblast_soak_held"] != nil {
		t.Error("a soak's verdict before the run ended")
	}
	r.Soak = &result.Soak{Held: false, BrokerRSS: "process", BrokerRSSSlopeBytesPerH: 180 << 20, LatencyP99SlopeUSPerH: 38000}
	r.Messages.Lost = 7
	r.Messages.OwedAtEnd = 11
	r.Client.Saturated = true
	l.Finish(&r)
	mf = scrape(t, url)
	for name, want := range map[string]float64{
		"mqblast_messages_published_total":             float64(r.Messages.Published),
		"mqblast_messages_received_total":              float64(r.Messages.Received),
		"mqblast_messages_lost_total":                  7,
		"mqblast_messages_owed_at_end":                 11,
		"mqblast_client_saturated":                     1,
		"mqblast_run_finished":                         1,
		"mqblast_run_intervals_total":                  float64(len(r.Intervals)),
		"mqblast_latency_seconds":                      float64(r.LatencyUS.Count),
		"mqblast_latency_raw_seconds":                  float64(r.LatencyRaw.Count),
		"mqblast_connect_latency_seconds":              float64(r.Connections.ConnectLatencyUS.Count),
		"mqblast_connections_target":                   float64(r.Connections.Target),
		"mqblast_messages_unsent_total":                3,
		"mqblast_messages_unexpected_total":            2,
		"mqblast_soak_held":                            0,
		"mqblast_soak_broker_rss_slope_bytes_per_hour": 180 << 20,
		"mqblast_soak_latency_slope_seconds_per_hour":  0.038,
	} {
		if got := value(t, mf, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	h := mf["mqblast_latency_seconds"].Metric[0].Histogram
	if want := r.LatencyUS.Mean * float64(r.LatencyUS.Count) / 1e6; math.Abs(h.GetSampleSum()-want) > want*1e-6 {
		t.Errorf("latency sum %v s, want %v", h.GetSampleSum(), want)
	}
}

// TestBuckets: values at and next to the bounds land where Prometheus's le says (values
// below 2048 µs are exact in HdrHistogram), and the cumulative counts end at the total.
func TestBuckets(t *testing.T) {
	t.Parallel()
	h := result.NewHist()
	for _, v := range []int64{40, 50, 51, 100, 101, 250, 999, 1000, 1001, 2000, 120_000_000} {
		h.Record(v)
	}
	s := result.NewSnapshot()
	s.Latency = h
	l := NewLive(1, 1)
	if err := l.Interval(result.Interval{TS: 1}, s); err != nil {
		t.Fatal(err)
	}
	got := l.hists[hLatency].cumulative()
	want := map[float64]uint64{50e-6: 2, 100e-6: 4, 250e-6: 6, 500e-6: 6, 1e-3: 8, 2.5e-3: 10, 60: 10}
	for bound, n := range want {
		if got[bound] != n {
			t.Errorf("le=%v: %d, want %d", bound, got[bound], n)
		}
	}
	if n := l.hists[hLatency].n; n != 11 {
		t.Errorf("count %d, want 11 (one above the last bound)", n)
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"127.0.0.1:9464", "127.0.0.2:1", "[::1]:9464", "localhost:9464"} {
		if err := CheckAddr(a, false); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
	for _, a := range []string{"0.0.0.0:9464", ":9464", "10.1.2.3:9464", "example.com:9464"} {
		err := CheckAddr(a, false)
		if err == nil || !strings.Contains(err.Error(), "--metrics-public") {
			t.Errorf("%s: %v, want a refusal naming --metrics-public", a, err)
		}
		if err := CheckAddr(a, true); err != nil {
			t.Errorf("%s with --metrics-public: %v", a, err)
		}
	}
	for _, a := range []string{"9464", "127.0.0.1", "127.0.0.1:"} {
		if err := CheckAddr(a, true); err == nil || !strings.Contains(err.Error(), "HOST:PORT") {
			t.Errorf("%s: %v, want HOST:PORT", a, err)
		}
	}
}

func TestServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Serve(ln.Addr().String(), NewLive(1, 1))
	if err == nil || !strings.Contains(err.Error(), "the port is taken") {
		t.Fatalf("err %v, want the port is taken", err)
	}
}

// TestDocListsMetrics: docs/outputs.md lists exactly the metrics served, in order.
func TestDocListsMetrics(t *testing.T) {
	t.Parallel()
	names, err := doctable.Column(filepath.Join("..", "..", "docs", "outputs.md"), "## Prometheus",
		regexp.MustCompile("^\\| `(mqblast_[a-z0-9_]+)`"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, Names()) {
		t.Errorf("docs/outputs.md lists\n%v\nthe code serves\n%v", names, Names())
	}
}

// TestGroupSeries: a mixed run's group figures are series labelled with the group's name,
// added over the intervals.
func TestGroupSeries(t *testing.T) {
	l := NewLive(10, 2)
	l.SetGroups([]string{"devices", "backend"})
	for range 2 {
		s := result.NewSnapshot()
		dev, back := result.NewSnapshot(), result.NewSnapshot()
		dev.Connected, dev.Published, dev.Expected, dev.Received = 8, 5, 5, 5
		back.Connected, back.Delivered, back.Reconnected = 2, 5, 1
		s.Groups = []*result.Snapshot{dev, back}
		if err := l.Interval(result.NewInterval(1, 10, s, 1e9), s); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := Serve("127.0.0.1:0", l)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	mf := scrape(t, "http://"+srv.Addr()+"/metrics")
	got := map[string]float64{}
	for _, name := range []string{"mqblast_group_connections_connected_total", "mqblast_group_messages_published_total",
		"mqblast_group_messages_delivered_total", "mqblast_group_connections_reconnected_total"} {
		f := mf[name]
		if f == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range f.Metric {
			got[name+"/"+m.GetLabel()[0].GetValue()] = m.Counter.GetValue()
		}
	}
	want := map[string]float64{
		"mqblast_group_connections_connected_total/devices": 16, "mqblast_group_connections_connected_total/backend": 4,
		"mqblast_group_messages_published_total/devices": 10, "mqblast_group_messages_published_total/backend": 0,
		"mqblast_group_messages_delivered_total/devices": 0, "mqblast_group_messages_delivered_total/backend": 10,
		"mqblast_group_connections_reconnected_total/devices": 0, "mqblast_group_connections_reconnected_total/backend": 2,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
