//go:build linux

package exporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/mqblast/mqblast/tuning"
)

var sinkReading Reading

// BenchmarkScrapeNodeExporter scrapes node_exporter and reports this process's CPU per
// scrape (getrusage: every goroutine, the HTTP client's included) and what scraping once a
// second costs as a percent of one core. real: node_exporter 1.5.0 itself, in a namespace
// over a veth; fixture: a captured body of it from an httptest server, the parse alone
// with less of the network.
func BenchmarkScrapeNodeExporter(b *testing.B) {
	b.Run("real", func(b *testing.B) {
		_, _, url := nodeExporterHost(b)
		benchScrape(b, url)
	})
	b.Run("fixture", func(b *testing.B) {
		body, err := os.ReadFile(fixture)
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write(body)
		}))
		b.Cleanup(srv.Close)
		benchScrape(b, srv.URL)
	})
}

func benchScrape(b *testing.B, url string) {
	s, err := New([]string{url}, Options{Timeout: 5 * time.Second, Series: []string{`node_cpu_seconds_total{mode="idle"}`}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	r := s.Scrape(context.Background()) // the connection, and a body's size
	if r.Targets[0].Err != "" || r.Host == nil {
		b.Fatalf("scrape: %+v", r.Targets[0])
	}
	b.ReportAllocs()
	cpu0 := tuning.SelfCPU()
	b.ResetTimer()
	for b.Loop() {
		sinkReading = s.Scrape(context.Background())
	}
	b.StopTimer()
	if e := sinkReading.Targets[0].Err; e != "" {
		b.Fatal(e)
	}
	per := float64(tuning.SelfCPU()-cpu0) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(100*per/float64(time.Second), "core%@1Hz")
	b.ReportMetric(float64(sinkReading.Targets[0].Families), "families")
}
