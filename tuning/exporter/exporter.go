package exporter

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// Options are a scraper's settings, the same for every URL.
type Options struct {
	// Timeout bounds one scrape of one URL, connection and body included (default 800ms).
	Timeout time.Duration
	// MaxBody is the most bytes read of one body (default 16 MiB); a longer body is cut
	// there and that scrape failed ("body over N bytes").
	MaxBody int64
	// Auth is sent with every scrape; it is never printed, logged or recorded.
	Auth Auth
	// Series are --broker-metric specs: NAME or NAME{label="value",...}. A spec's value
	// is the sum over the series of that name whose labels include the given ones.
	Series []string
	// Process names the process-exporter group to read ("": the only group there is, or
	// the one whose name contains "mosquitto", "emqx", "rabbitmq", "beam", "vernemq",
	// "hivemq", "nanomq", "flashmq", in that order, the first by name when several hold
	// the same word; several and none of those: none read). A group with no process
	// running is not read.
	Process string
}

// Auth is a scrape's credentials: basic auth (Username, Password) or a bearer token.
type Auth struct {
	Username, Password string
	BearerToken        string
}

// String never shows the secret.
func (a Auth) String() string {
	switch {
	case a.BearerToken != "":
		return "bearer <redacted>"
	case a.Username != "":
		return a.Username + ":<redacted>"
	}
	return "none"
}

// Scraper scrapes a broker host's Prometheus endpoints. Safe for use by one goroutine.
type Scraper struct {
	urls   []string
	o      Options
	specs  []spec
	client *http.Client
	bufs   []*bytes.Buffer // one per URL, reused from scrape to scrape
	// grouped is set once a scrape has seen process-exporter's series: from then on the
	// process collector is never the broker process, even when process-exporter fails.
	grouped bool
}

// New checks the URLs (http or https, a host, no credentials in them) and the series
// specs, and returns a scraper. It sends nothing.
func New(urls []string, o Options) (*Scraper, error) {
	return newScraper(urls, o)
}

// URLs returns the scraper's URLs, as given (without any userinfo).
func (s *Scraper) URLs() []string { return s.urls }

// Scrape scrapes every URL at once, each bounded by the timeout, and returns what they
// said. It returns when all have answered or timed out, or ctx ends.
func (s *Scraper) Scrape(ctx context.Context) Reading {
	return s.scrape(ctx)
}

// Reading is one scrape of every URL.
type Reading struct {
	At      time.Time // when the scrape started
	Targets []Target  // one per URL, in order
	// Host is what node_exporter said (nil: no URL served node_exporter's metrics, or it
	// failed this time).
	Host *HostCounters
	// Process is the broker process (nil: no URL served process-exporter's or a process
	// collector's metrics, or it failed this time).
	Process *ProcessCounters
	// Series are the --broker-metric values, by spec as given; a spec that was not found
	// this time is absent.
	Series map[string]SeriesValue
}

// Target is one URL's scrape.
type Target struct {
	URL string
	// Kinds are what the body was recognised as: "node_exporter", "process-exporter",
	// "process" (the standard process collector), in that order; empty when none.
	Kinds    []string
	Families int           // metric families parsed
	Took     time.Duration // from request to parsed body
	// Groups are the process-exporter groups this URL published, sorted, so that a caller
	// can name the one to read when Options.Process chose none.
	Groups []string
	// Err is why the scrape failed ("" when it did not): one line, no secrets, terminal-safe.
	Err string
}

// HostCounters are node_exporter's figures at one scrape.
type HostCounters struct {
	CPUs int // distinct cpu labels of node_cpu_seconds_total
	// CPUSeconds is node_cpu_seconds_total summed over CPUs, by mode.
	CPUSeconds        map[string]float64
	MemTotalBytes     float64 // node_memory_MemTotal_bytes
	MemAvailableBytes float64 // node_memory_MemAvailable_bytes
	// Network totals over every device but lo (node_network_{receive,transmit}_{bytes,packets}_total).
	RxBytes, TxBytes, RxPackets, TxPackets float64
	TCPEstablished                         float64 // node_netstat_Tcp_CurrEstab
	TCPTimeWait                            float64 // node_sockstat_TCP_tw
	ListenDrops                            float64 // node_netstat_TcpExt_ListenDrops (a counter)
	ListenOverflows                        float64 // node_netstat_TcpExt_ListenOverflows (a counter)
	// Devices are the network counters by device (lo left out), which the totals sum;
	// Between takes each device's own delta, so that a device that comes, goes or is
	// recreated between two readings does not move the rates.
	Devices map[string]DeviceCounters
}

// DeviceCounters are one network device's counters.
type DeviceCounters struct {
	RxBytes, TxBytes, RxPackets, TxPackets float64
}

// ProcessCounters are the broker process's figures at one scrape.
type ProcessCounters struct {
	// Source is "process-exporter GROUP" or "process collector".
	Source     string
	CPUSeconds float64 // user + system
	RSSBytes   float64
	FDs        float64 // open descriptors; -1 when not published
}

// SeriesValue is one --broker-metric spec's value at one scrape.
type SeriesValue struct {
	Value   float64
	Counter bool // a counter (its rate is what an interval shows), else a gauge
}

// Rates are the figures of the span between two readings.
type Rates struct {
	Seconds float64 // cur.At - prev.At
	// Host (nil without HostCounters in both, or when a CPU or listen counter went down):
	// CPU busy percent of the whole host, 100 * (the sum over modes but idle and iowait of
	// node_cpu_seconds_total's delta) / (the sum over every mode of its delta), so 100 =
	// every CPU busy; memory used (total - available) and available at cur; network per
	// second (devices in both readings, a device whose counter went down left out); TCP
	// gauges at cur; listen drops and overflows in the span.
	Host *HostRates
	// Process (nil without ProcessCounters in both, when their Source differs, or when its
	// CPU counter went down: the process restarted): CPU percent (100 = one core), RSS and
	// descriptors at cur.
	Process *ProcessRates
	// Series: a counter's rate per second over the span, a gauge's value at cur; specs
	// missing from either reading (counters) or from cur (gauges) are absent.
	Series map[string]float64
}

// HostRates are node_exporter's figures over a span.
type HostRates struct {
	CPUPercent                                             float64
	MemUsedBytes, MemAvailableBytes                        float64
	RxBytesPerS, TxBytesPerS, RxPacketsPerS, TxPacketsPerS float64
	TCPEstablished, TCPTimeWait                            float64
	ListenDrops, ListenOverflows                           float64
}

// ProcessRates are the broker process's figures over a span.
type ProcessRates struct {
	Source     string
	CPUPercent float64
	CPUSeconds float64 // used in the span
	RSSBytes   float64
	FDs        float64
}

// Between returns the figures of the span from prev to cur. A counter that went down (the
// exporter restarted) gives no rate for that span.
func Between(prev, cur Reading) Rates {
	return between(prev, cur)
}
