package exporter

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const fixture = "testdata/node_exporter-1.5.0.txt"

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	check := func(urls []string, o Options, want string, secret string) {
		t.Helper()
		_, err := New(urls, o)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%q, %+v): %v, want an error with %q", urls, o.Series, err, want)
			return
		}
		if secret != "" && strings.Contains(err.Error(), secret) {
			t.Errorf("New(%q): %v shows the secret", urls, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%q): %q is not one line", urls, err)
		}
	}
	check(nil, Options{}, "no metrics URL", "")
	check([]string{"ftp://h/metrics"}, Options{}, "want http:// or https://", "")
	check([]string{"h:9100/metrics"}, Options{}, "want http://", "")
	check([]string{"http:///metrics"}, Options{}, "no host", "")
	check([]string{"http://bob:hunter2@h:9100/metrics"}, Options{}, "credentials file", "hunter2")
	check([]string{"http://bob:hun%zzter2@h:9100/metrics"}, Options{}, "cannot parse", "hun%zzter2")
	check([]string{"http://h/m"}, Options{Timeout: -1}, "timeout", "")
	check([]string{"http://h/m"}, Options{MaxBody: -1}, "body limit", "")
	check([]string{"http://h/m"}, Options{Auth: Auth{BearerToken: "s3cr3t", Username: "u"}}, "give one", "s3cr3t")
	for _, bad := range []string{"", "a b", "1abc", `x{a="b"`, `x{a=b}`, `x{1a="b"}`, `x{a="b",a="c"}`, "x 5", "x\ny", "#x", `x{a="b"} 7`, "x.y"} {
		check([]string{"http://h/m"}, Options{Series: []string{bad}}, `want NAME or NAME{label="value",...}`, "")
	}
	s, err := New([]string{"http://h:9100/metrics", "https://[::1]:9256/metrics"},
		Options{Series: []string{"mosquitto_clients", `x_total{a="b\"c",d=""}`}})
	if err != nil {
		t.Fatal(err)
	}
	if s.o.Timeout != 800*time.Millisecond || s.o.MaxBody != 16<<20 {
		t.Errorf("defaults %v %d", s.o.Timeout, s.o.MaxBody)
	}
	if got := s.specs[1]; got.name != "x_total" || len(got.labels) != 2 || got.labels[0].GetValue() != `b"c` {
		t.Errorf("spec %+v", got)
	}
}

// TestParseNodeExporterFixture reads a body captured from the real node_exporter 1.5.0
// (Debian's, in a namespace with one veth) byte for byte.
func TestParseNodeExporterFixture(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	fams, why := parseBody(body, "text/plain; version=0.0.4; charset=utf-8")
	if why != "" {
		t.Fatal(why)
	}
	kinds, groups := recognise(fams)
	if !cmp.Equal(kinds, []string{"node_exporter"}) || groups != nil {
		t.Errorf("kinds %v groups %v", kinds, groups)
	}
	h := hostOf([]page{{t: Target{Kinds: kinds}, fams: fams}})
	want := &HostCounters{
		CPUs: 2,
		CPUSeconds: map[string]float64{
			"idle": 15390.39 + fixtureCPU(t, body, "1", "idle"), "iowait": 6.46 + fixtureCPU(t, body, "1", "iowait"),
			"irq": 0, "nice": 10.78 + fixtureCPU(t, body, "1", "nice"), "softirq": 6.8 + fixtureCPU(t, body, "1", "softirq"),
			"steal": 179.77 + fixtureCPU(t, body, "1", "steal"), "system": 103.11 + fixtureCPU(t, body, "1", "system"),
			"user": 380.05 + fixtureCPU(t, body, "1", "user"),
		},
		MemTotalBytes:     2.5275990016e+10,
		MemAvailableBytes: fixtureValue(t, body, "node_memory_MemAvailable_bytes"),
		RxBytes:           2137,
		TxBytes:           fixtureValue(t, body, `node_network_transmit_bytes_total{device="cap22687n"}`),
		RxPackets:         fixtureValue(t, body, `node_network_receive_packets_total{device="cap22687n"}`),
		TxPackets:         fixtureValue(t, body, `node_network_transmit_packets_total{device="cap22687n"}`),
		TCPEstablished:    1,
	}
	want.Devices = map[string]DeviceCounters{"cap22687n": {want.RxBytes, want.TxBytes, want.RxPackets, want.TxPackets}}
	if d := cmp.Diff(want, h, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-6 })); d != "" {
		t.Errorf("host (-want +got):\n%s", d)
	}
	// node_exporter's own process_* series are not the broker's.
	s := &Scraper{}
	if pc := s.processOf([]page{{t: Target{Kinds: kinds}, fams: fams}}); pc != nil {
		t.Errorf("node_exporter's own process read as the broker: %+v", pc)
	}
}

func fixtureValue(t *testing.T, body []byte, series string) float64 {
	t.Helper()
	for l := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("%s not in the fixture", series)
	return 0
}

func fixtureCPU(t *testing.T, body []byte, cpu, mode string) float64 {
	return fixtureValue(t, body, fmt.Sprintf(`node_cpu_seconds_total{cpu=%q,mode=%q}`, cpu, mode))
}

// TestOpenMetrics scrapes client_golang's own OpenMetrics exposition (counters named
// without _total in TYPE, _created series, # EOF) and a hand-written one with exemplars,
// timestamps in seconds, UNIT, info and stateset.
func TestOpenMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "broker_messages_total", Help: "h"}, []string{"dir"})
	c.WithLabelValues("in").Add(41)
	c.WithLabelValues("out").Add(1)
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "broker_clients", Help: "h"})
	g.Set(7)
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "broker_latency_seconds", Help: "h"})
	h.Observe(0.5)
	h.Observe(1.5)
	reg.MustRegister(c, g, h, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var ct, asked string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scraper prefers text 0.0.4, which client_golang also serves: ask for
		// OpenMetrics alone, as an endpoint that only has OpenMetrics would answer.
		asked = r.Header.Get("Accept")
		r.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, EnableOpenMetricsTextCreatedSamples: true}).ServeHTTP(w, r)
		ct = w.Header().Get("Content-Type")
	}))
	t.Cleanup(srv.Close)
	s, err := New([]string{srv.URL}, Options{Series: []string{
		"broker_messages_total", `broker_messages_total{dir="in"}`, "broker_clients", "broker_latency_seconds_count", "broker_latency_seconds_sum",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r := s.Scrape(context.Background())
	if !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("client_golang served %q, not OpenMetrics", ct)
	}
	if !strings.Contains(asked, "application/openmetrics-text;version=1.0.0") || !strings.HasPrefix(asked, "text/plain;version=0.0.4") {
		t.Errorf("Accept: %q", asked)
	}
	if r.Targets[0].Err != "" {
		t.Fatal(r.Targets[0].Err)
	}
	want := map[string]SeriesValue{
		"broker_messages_total":           {42, true},
		`broker_messages_total{dir="in"}`: {41, true},
		"broker_clients":                  {7, false},
		"broker_latency_seconds_count":    {2, true},
		"broker_latency_seconds_sum":      {2, true},
	}
	if d := cmp.Diff(want, r.Series); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	if r.Process == nil || r.Process.Source != "process collector" || r.Process.RSSBytes <= 0 || r.Process.FDs <= 0 {
		t.Errorf("process %+v", r.Process)
	}

	body := `# HELP m_total x
# TYPE m counter
# UNIT m seconds
m_total{a="x # {y} 1"} 3.5 1700000000.123 # {trace_id="abc"} 1.0 1700000000.1
m_created{a="x # {y} 1"} 1.7e9
# TYPE build info
build_info{version="1"} 1
# TYPE st stateset
st{st="a"} 1
st{st="b"} 0
# TYPE u unknown
u 4
# EOF
garbage after EOF
`
	fams, why := parseBody([]byte(body), "application/openmetrics-text; version=1.0.0; charset=utf-8")
	if why != "" {
		t.Fatal(why)
	}
	sv := seriesOf([]spec{mustSpec(t, "m_total"), mustSpec(t, "st"), mustSpec(t, "u"), mustSpec(t, "build_info")}, []page{{fams: fams}})
	wantOM := map[string]SeriesValue{"m_total": {3.5, true}, "st": {1, false}, "u": {4, false}, "build_info": {1, false}}
	if d := cmp.Diff(wantOM, sv); d != "" {
		t.Errorf("OpenMetrics series (-want +got):\n%s", d)
	}
	// A text body with OpenMetrics' float timestamp is not text.
	if _, why := parseBody([]byte("m 1 1700000000.5\n"), "text/plain"); !strings.Contains(why, "line 1") {
		t.Errorf("text with a float timestamp: %q", why)
	}
}

func mustSpec(t *testing.T, raw string) spec {
	t.Helper()
	sp, err := parseSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// TestProcessChoice: process-exporter wins over any process collector, in any URL, even
// after it has failed once; node_exporter's and process-exporter's own process_* series
// never count; the group is chosen as Options.Process says.
func TestProcessChoice(t *testing.T) {
	t.Parallel()
	parse := func(body string) page {
		fams, why := parseBody([]byte(body), "text/plain")
		if why != "" {
			t.Fatal(why)
		}
		k, g := recognise(fams)
		return page{t: Target{Kinds: k, Groups: g}, fams: fams}
	}
	proc := "process_cpu_seconds_total 5\nprocess_resident_memory_bytes 100\n"
	groups := func(names ...string) string {
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "namedprocess_namegroup_num_procs{groupname=%q} 1\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_cpu_seconds_total{groupname=%q,mode=\"user\"} 1\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_cpu_seconds_total{groupname=%q,mode=\"system\"} 2\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_cpu_seconds_total{groupname=%q,mode=\"wait\"} 100\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_memory_bytes{groupname=%q,memtype=\"resident\"} 300\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_memory_bytes{groupname=%q,memtype=\"virtual\"} 900\n", n)
			fmt.Fprintf(&b, "namedprocess_namegroup_open_filedesc{groupname=%q} 12\n", n)
		}
		return b.String()
	}
	check := func(name string, s *Scraper, want *ProcessCounters, pages ...page) {
		t.Helper()
		if got := s.processOf(pages); !cmp.Equal(got, want) {
			t.Errorf("%s: process %+v, want %+v", name, got, want)
		}
	}
	pe := &ProcessCounters{Source: "process-exporter mosquitto", CPUSeconds: 3, RSSBytes: 300, FDs: 12}
	collector := &ProcessCounters{Source: "process collector", CPUSeconds: 5, RSSBytes: 100, FDs: -1}
	check("broker's collector alone", &Scraper{}, collector, parse(proc))
	check("node_exporter's own process", &Scraper{}, nil, parse("node_load1 1\n"+proc))
	check("process-exporter's own process", &Scraper{}, pe, parse(groups("mosquitto")+proc))
	check("process-exporter beats the collector", &Scraper{}, pe, parse(proc), parse(groups("mosquitto")+proc))
	check("process-exporter failed, once seen", &Scraper{grouped: true}, nil, parse(proc), page{t: Target{Err: "timeout"}})
	check("several groups, one broker", &Scraper{}, &ProcessCounters{Source: "process-exporter emqx-node", CPUSeconds: 3, RSSBytes: 300, FDs: 12},
		parse(groups("sshd", "emqx-node", "nginx")))
	check("broker words in order", &Scraper{}, pe, parse(groups("beam.smp", "mosquitto")))
	check("several groups, no broker", &Scraper{}, nil, parse(groups("sshd", "nginx")+proc), parse(proc))
	check("named group", &Scraper{o: Options{Process: "nginx"}}, &ProcessCounters{Source: "process-exporter nginx", CPUSeconds: 3, RSSBytes: 300, FDs: 12},
		parse(groups("nginx", "mosquitto")))
	check("named group absent", &Scraper{o: Options{Process: "x"}}, nil, parse(groups("nginx", "mosquitto")))
	check("group with no process", &Scraper{}, nil, parse(strings.Replace(groups("mosquitto"), "num_procs{groupname=\"mosquitto\"} 1", "num_procs{groupname=\"mosquitto\"} 0", 1)))
}

func TestBetween(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	host := func(idle, iowait, user, system, rx, drops float64) *HostCounters {
		return &HostCounters{
			CPUs:          2,
			CPUSeconds:    map[string]float64{"idle": idle, "iowait": iowait, "user": user, "system": system},
			MemTotalBytes: 1000, MemAvailableBytes: 400, ListenDrops: drops, TCPEstablished: 3,
			RxBytes: rx, Devices: map[string]DeviceCounters{"eth0": {RxBytes: rx}},
		}
	}
	prev := Reading{At: t0, Host: host(100, 10, 50, 20, 1000, 1),
		Process: &ProcessCounters{Source: "process collector", CPUSeconds: 10, RSSBytes: 5, FDs: 7},
		Series:  map[string]SeriesValue{"c_total": {100, true}, "g": {5, false}, "gone_total": {1, true}}}
	cur := Reading{At: t0.Add(2 * time.Second), Host: host(102, 1+10, 0.5+50, 0.5+20, 3000, 4),
		Process: &ProcessCounters{Source: "process collector", CPUSeconds: 11, RSSBytes: 6, FDs: 8},
		Series:  map[string]SeriesValue{"c_total": {110, true}, "g": {3, false}, "new_total": {9, true}}}
	got := Between(prev, cur)
	want := Rates{
		Seconds: 2,
		// busy = user + system deltas (1), total = 4: idle and iowait are not busy.
		Host: &HostRates{CPUPercent: 25, MemUsedBytes: 600, MemAvailableBytes: 400, RxBytesPerS: 1000,
			TCPEstablished: 3, ListenDrops: 3},
		Process: &ProcessRates{Source: "process collector", CPUPercent: 50, CPUSeconds: 1, RSSBytes: 6, FDs: 8},
		Series:  map[string]float64{"c_total": 5, "g": 3},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rates (-want +got):\n%s", d)
	}

	// Counter resets: the exporter restarted (series), the process restarted, the host
	// rebooted, a device was recreated.
	reset := cur
	reset.Series = map[string]SeriesValue{"c_total": {3, true}, "g": {1, false}}
	reset.Process = &ProcessCounters{Source: "process collector", CPUSeconds: 0.1}
	reset.Host = host(102, 11, 50.5, 20.5, 10, 4)
	got = Between(prev, reset)
	if _, ok := got.Series["c_total"]; ok || got.Series["g"] != 1 || got.Process != nil {
		t.Errorf("after resets: series %v process %+v", got.Series, got.Process)
	}
	if got.Host == nil || got.Host.RxBytesPerS != 0 || got.Host.CPUPercent != 25 {
		t.Errorf("device recreated: host %+v", got.Host)
	}
	reset.Host = host(1, 0, 1, 1, 3000, 4)
	if got := Between(prev, reset); got.Host != nil {
		t.Errorf("host rebooted: %+v", got.Host)
	}
	other := cur
	other.Process = &ProcessCounters{Source: "process-exporter mosquitto", CPUSeconds: 20}
	if got := Between(prev, other); got.Process != nil {
		t.Errorf("source changed: %+v", got.Process)
	}
	if got := Between(cur, prev); got.Host != nil || got.Process != nil || len(got.Series) != 0 {
		t.Errorf("backwards: %+v", got)
	}
}

func TestLoadAuth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	check := func(file string, e map[string]string, want Auth) {
		t.Helper()
		got, err := LoadAuth(file, env(e))
		if err != nil || got != want {
			t.Errorf("LoadAuth(%s, %v) = %v, %v; want %v", file, e, got, err, want)
		}
	}
	check(write("token", "  abc.def==\n"), nil, Auth{BearerToken: "abc.def=="})
	check(write("basic", "# the exporters\nusername = bob\npassword=p=w d\n\n"), map[string]string{TokenEnv: "ignored"}, Auth{Username: "bob", Password: "p=w d"})
	check(write("bearer", "bearer_token=xyz\r\n"), nil, Auth{BearerToken: "xyz"})
	check("", map[string]string{UsernameEnv: "u", PasswordEnv: "p"}, Auth{Username: "u", Password: "p"})
	check("", map[string]string{TokenEnv: "t"}, Auth{BearerToken: "t"})
	check("", nil, Auth{})
	bad := func(file string, e map[string]string, want, secret string) {
		t.Helper()
		_, err := LoadAuth(file, env(e))
		if err == nil || !strings.Contains(err.Error(), want) || secret != "" && strings.Contains(err.Error(), secret) {
			t.Errorf("LoadAuth(%s): %v, want an error with %q and without %q", file, err, want, secret)
		}
	}
	bad(write("both", "username=u\npassword=s3cret\nbearer_token=t0ken\n"), nil, "give one", "s3cret")
	bad(write("unknown", "username=u\ns3cret=x\n"), nil, "line 2", "s3cret")
	bad(write("twice", "username=u\npassword=s3cret\npassword=s3cret\n"), nil, "line 3: password given twice", "s3cret")
	bad(write("nouser", "password=s3cret\n"), nil, "without a username", "s3cret")
	bad(filepath.Join(dir, "missing"), nil, "no such file", "")
	bad("", map[string]string{PasswordEnv: "s3cret"}, "without a username", "s3cret")
	bad("", map[string]string{UsernameEnv: "u", TokenEnv: "s3cret"}, "give one", "s3cret")
	if s := (Auth{Username: "u", Password: "s3cret"}).String(); strings.Contains(s, "s3cret") {
		t.Errorf("Auth.String %q", s)
	}
}
