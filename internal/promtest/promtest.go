// Package promtest runs a real Prometheus (Debian's prometheus) for tests: on a free
// loopback port, with a storage directory of the test's, its remote-write receiver on, and
// scrape targets given by the test; and queries it through its HTTP API. A test that uses it
// is in the integration tier; without the binary it skips (in CI, where .ci/run installs
// it, it fails).
package promtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
)

// Need returns the path of the program name (a Debian package of the same name),
// skipping the test when it is not installed (failing it under CI).
func Need(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run installs it (apt-get install -y %s)", name, name)
		}
		t.Skipf("%s is not installed (apt-get install -y %s)", name, name)
	}
	return p
}

// Prometheus is a running Prometheus; it stops when the test ends.
type Prometheus struct {
	URL  string // http://127.0.0.1:PORT
	t    testing.TB
	stop func()
}

// Stop stops it now (a receiver that goes away); its storage goes with it.
func (p *Prometheus) Stop() { p.stop() }

// WriteURL is its remote-write receiver's URL.
func (p *Prometheus) WriteURL() string { return p.URL + "/api/v1/write" }

// Start starts Prometheus with its remote-write receiver on, scraping each of targets
// (HOST:PORT, or JOB=HOST:PORT to name its job; their /metrics) every scrape, and waits
// until it is ready.
func Start(t testing.TB, scrape time.Duration, targets ...string) *Prometheus {
	t.Helper()
	tier.Integration(t)
	return StartAt(t, "127.0.0.1:"+strconv.Itoa(testbroker.FreePort(t, "127.0.0.1")), scrape, targets...)
}

// StartAt is Start listening on addr (a receiver that comes up where a run already pushes).
func StartAt(t testing.TB, addr string, scrape time.Duration, targets ...string) *Prometheus {
	t.Helper()
	tier.Integration(t)
	bin := Need(t, "prometheus")
	dir := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", scrape, scrape)
	if len(targets) > 0 {
		cfg.WriteString("scrape_configs:\n")
		for i, tg := range targets {
			job, addr, ok := strings.Cut(tg, "=")
			if !ok {
				job, addr = fmt.Sprintf("target%d", i), tg
			}
			fmt.Fprintf(&cfg, "  - job_name: %q\n    static_configs:\n      - targets: [%q]\n", job, addr)
		}
	}
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--web.enable-remote-write-receiver", "--log.level=warn")
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { _ = c.Process.Kill(); _ = c.Wait(); _ = logf.Close() }) }
	t.Cleanup(stop)
	p := &Prometheus{URL: "http://" + addr, t: t, stop: stop}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r, err := http.Get(p.URL + "/-/ready"); err == nil { //nolint:noctx // a test's wait
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("prometheus is not ready at %s after 30s: %s", p.URL, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartProgram starts argv (an exporter, or a command that runs one) and waits until url
// answers 200; it stops when the test ends.
func StartProgram(t testing.TB, url string, argv ...string) {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	var log strings.Builder
	c.Stdout, c.Stderr = &log, &log
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; {
		if r, err := http.Get(url); err == nil { //nolint:noctx // a test's wait
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer at %s after 10s: %s", argv[0], url, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LabelValues returns the values of label on the series that match selector (what
// Grafana's label_values(selector, label) lists).
func (p *Prometheus) LabelValues(selector, label string) ([]string, error) {
	v := url.Values{"match[]": {selector}}
	r, err := http.Get(p.URL + "/api/v1/label/" + url.PathEscape(label) + "/values?" + v.Encode()) //nolint:noctx // a test's query
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var body struct {
		Status, Error string
		Data          []string
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("label_values(%s, %s): %w", selector, label, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("label_values(%s, %s): %s", selector, label, body.Error)
	}
	return body.Data, nil
}

// Sample is one value of an instant vector, or one point of a range vector's series.
type Sample struct {
	Labels map[string]string
	T      float64 // Unix seconds
	V      float64
}

// Query evaluates q at at (the zero time: now) through /api/v1/query and returns its
// series' samples: one per series of an instant vector, every point of a range vector's
// (in order), one for a scalar.
func (p *Prometheus) Query(q string, at time.Time) ([]Sample, error) {
	v := url.Values{"query": {q}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64))
	}
	r, err := http.Get(p.URL + "/api/v1/query?" + v.Encode()) //nolint:noctx // a test's query
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		}
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	point := func(raw []any) (float64, float64) {
		ts, _ := raw[0].(float64)
		s, _ := raw[1].(string)
		f, _ := strconv.ParseFloat(s, 64)
		return ts, f
	}
	var out []Sample
	switch body.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string
			Value  []any
		}
		if err := json.Unmarshal(body.Data.Result, &vec); err != nil {
			return nil, err
		}
		for _, s := range vec {
			ts, f := point(s.Value)
			out = append(out, Sample{Labels: s.Metric, T: ts, V: f})
		}
	case "matrix":
		var m []struct {
			Metric map[string]string
			Values [][]any
		}
		if err := json.Unmarshal(body.Data.Result, &m); err != nil {
			return nil, err
		}
		for _, s := range m {
			for _, pt := range s.Values {
				ts, f := point(pt)
				out = append(out, Sample{Labels: s.Metric, T: ts, V: f})
			}
		}
	case "scalar":
		var raw []any
		if err := json.Unmarshal(body.Data.Result, &raw); err != nil {
			return nil, err
		}
		ts, f := point(raw)
		out = append(out, Sample{T: ts, V: f})
	}
	return out, nil
}
