package run

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
)

// fakeExporter serves node_exporter-like text whose CPU counters advance with the clock
// (one CPU busy half the time), until bad() says to misbehave: then serve does instead.
type fakeExporter struct {
	t0    time.Time
	calls atomic.Int64
	token string // a bearer token it wants ("": none)
	bad   func(call int64) bool
	serve func(w http.ResponseWriter)
	// killAfter > 0: the exporter goes away (its listener and connections closed) at the
	// call after that one.
	killAfter int64
	stop      func()
}

func (f *fakeExporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	if f.killAfter > 0 && n > f.killAfter {
		go f.stop()
		panic(http.ErrAbortHandler) // the connection is dropped without an answer
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if f.bad != nil && f.bad(n) {
		f.serve(w)
		return
	}
	s := time.Since(f.t0).Seconds()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, `# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} %f
node_cpu_seconds_total{cpu="0",mode="user"} %f
node_cpu_seconds_total{cpu="1",mode="idle"} %f
node_cpu_seconds_total{cpu="1",mode="user"} 0
# TYPE node_memory_MemTotal_bytes gauge
node_memory_MemTotal_bytes 4e+09
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes 3e+09
# TYPE node_network_receive_bytes_total counter
node_network_receive_bytes_total{device="eth0"} %f
node_network_receive_bytes_total{device="lo"} 1e+12
# TYPE node_netstat_TcpExt_ListenOverflows untyped
node_netstat_TcpExt_ListenOverflows %.0f
`, 1000+s/2, 1000+s/2, 1000+s, 1e6*s, 10*s)
}

// serveExporter serves f on loopback; stop closes the listener (the exporter is gone).
func serveExporter(t *testing.T, f *fakeExporter) (url string, stop func()) {
	t.Helper()
	f.t0 = time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	f.stop = func() { _ = srv.Close() }
	return "http://" + ln.Addr().String() + "/metrics", f.stop
}

// TestBrokerMetricsFaults: an endpoint that dies, stalls, answers garbage or 50 MB in the
// middle of a run leaves counted gaps: the run completes on time with all its intervals, it
// succeeds, and the figures of the scrapes that worked are there. (The endpoint's first
// answer is the check before the run, its second the watch's start: the fourth is the
// second interval's.) One that refuses the
// credentials at the start is a usage error that names it, and no token is printed.
func TestBrokerMetricsFaults(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	// a Connections run of 5 clients held 5 s, its clients named prefix, watching url
	conn := func(prefix, url string) *Spec {
		sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", 5, "parameters.connection_rate", 100,
			"parameters.duration_sec", 5, "publishers.id_prefix", prefix)...)
		sp.Procs, sp.NoCheck, sp.Watch.BrokerMetrics = 1, true, []string{url}
		return sp
	}
	after := func(n int64) func(int64) bool { return func(call int64) bool { return call > n } }
	cases := []struct {
		name  string
		f     *fakeExporter
		error string
	}{
		{"killed", &fakeExporter{killAfter: 4}, "connect"},
		{"slow", &fakeExporter{bad: after(4), serve: func(w http.ResponseWriter) { time.Sleep(3 * time.Second) }}, "timeout"},
		{"garbage", &fakeExporter{bad: after(4), serve: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>\x1b]0;pwned\x07 oops</body></html>\n")
		}}, "not Prometheus text"},
		{"50MB", &fakeExporter{bad: after(4), serve: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			line := []byte("# HELP x " + strings.Repeat("y", 1000) + "\n")
			for range 50 << 10 {
				if _, err := w.Write(line); err != nil {
					return
				}
			}
		}}, "over"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, _ := serveExporter(t, tc.f)
			r := doSpec(t, conn("faults-"+tc.name+"-", url))
			if r.err != nil {
				t.Fatalf("%v, want none (a failing endpoint is a gap, not a failed run)\n%s", r.err, r.stderr)
			}
			res := r.res
			bh := res.BrokerHost
			if bh == nil || len(bh.Sources) != 1 {
				t.Fatalf("broker_host %+v", bh)
			}
			s := bh.Sources[0]
			t.Logf("took %v, %d intervals; source %+v; gaps %d; cpu avg %.1f%%", r.took, len(res.Intervals), s, bh.Gaps, bh.CPUPercentAvg)
			if s.ScrapesOK < 3 || s.Failed < 2 || bh.Gaps < 2 || !strings.Contains(s.LastError, tc.error) {
				t.Errorf("source %+v, gaps %d: want the first scrapes ok, then failures (%q) counted as gaps", s, bh.Gaps, tc.error)
			}
			if strings.ContainsAny(s.LastError, "\x1b\x07\n") || strings.Contains(r.stderr, "\x1b]0;pwned") {
				t.Errorf("the endpoint's text reached the terminal raw: %q", s.LastError)
			}
			if bh.CPUs != 2 || bh.CPUPercentPeak < 20 || bh.CPUPercentPeak > 30 {
				t.Errorf("cpus %d, cpu peak %.1f%%: want the fake's 25%% of 2 CPUs from the scrapes that worked", bh.CPUs, bh.CPUPercentPeak)
			}
			// 5 s held plus connecting and disconnecting: a stalled interval loop shows as
			// fewer intervals or a longer run.
			if len(res.Intervals) < 5 || r.took > 12*time.Second {
				t.Errorf("%d intervals in %v: the run waited for the endpoint", len(res.Intervals), r.took)
			}
			found := false // the broker host's listen overflows beside the client's kernel findings
			if k := res.Kernel; k != nil {
				for _, f := range k.Findings {
					found = found || f.Counter == "ListenOverflows" && f.Where == "broker host" && f.Delta >= 10
				}
			}
			if !found || !res.Host.Limited {
				t.Errorf("kernel %+v, host.limited %v: want the broker host's ListenOverflows found", res.Kernel, res.Host.Limited)
			}
			if !strings.Contains(r.stderr, "broker metrics: "+url+": ") || !strings.Contains(r.stderr, "gap") {
				t.Errorf("stderr does not say the endpoint failed:\n%s", r.stderr)
			}
		})
	}
	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		const token, wrong = "s3cret-T0KEN-right", "s3cret-T0KEN-wrong"
		url, _ := serveExporter(t, &fakeExporter{token: token})
		bad := doSpec(t, conn("faults-auth-", url), "MQBLAST_METRICS_TOKEN="+wrong)
		if !errors.Is(bad.err, fail.ErrUsage) || !strings.Contains(bad.said(), url) || !strings.Contains(bad.said(), "401") {
			t.Errorf("wrong token: %v, want %v naming the URL and 401:\n%s", bad.err, fail.ErrUsage, bad.stderr)
		}
		auth := filepath.Join(t.TempDir(), "auth")
		if err := os.WriteFile(auth, []byte("bearer_token="+token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		sp := conn("faults-auth-", url)
		sp.Watch.MetricsAuth = auth
		good := doSpec(t, sp)
		if good.err != nil {
			t.Fatalf("right token from a file: %v\n%s", good.err, good.stderr)
		}
		if res := good.res; res.BrokerHost == nil || res.BrokerHost.Sources[0].Failed != 0 {
			t.Errorf("broker_host %+v: want every scrape answered", res.BrokerHost)
		}
		for _, out := range []string{bad.stdout, bad.said(), good.stdout, good.said()} {
			if strings.Contains(out, "s3cret") {
				t.Errorf("a token was printed:\n%s", out)
			}
		}
	})
}
