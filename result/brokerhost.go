package result

// BrokerHost is what the broker's host said of itself through the Prometheus endpoints its
// operators run (--broker-metrics): node_exporter for the host, process-exporter or a
// process collector for the broker process, and the series a user named. Averages and
// peaks are over the intervals inside the measure window (over the whole run when none
// is inside it); a failed scrape leaves a gap, counted, never a guessed value.
type BrokerHost struct {
	Sources []MetricsSource `json:"sources"`
	// Gaps is the number of intervals in which a scrape of some endpoint failed or timed
	// out: that endpoint's figures are missing from the interval (the next span that
	// succeeds covers the time since its last answer).
	Gaps int `json:"gaps"`
	// CPUs is the broker host's CPU count; CPU* are percent of the whole host (100 = every
	// CPU busy; busy is every mode but idle and iowait).
	CPUs           int     `json:"cpus,omitempty"`
	CPUPercentAvg  float64 `json:"cpu_percent_avg,omitempty"`
	CPUPercentPeak float64 `json:"cpu_percent_peak,omitempty"`
	// Memory used (total - available) and available, in bytes.
	MemUsedAvgBytes      float64 `json:"mem_used_avg_bytes,omitempty"`
	MemUsedPeakBytes     float64 `json:"mem_used_peak_bytes,omitempty"`
	MemAvailableMinBytes float64 `json:"mem_available_min_bytes,omitempty"`
	// Network of the broker host (every device but lo), per second.
	RxBytesPerSAvg    float64 `json:"rx_bytes_per_s_avg,omitempty"`
	RxBytesPerSPeak   float64 `json:"rx_bytes_per_s_peak,omitempty"`
	TxBytesPerSAvg    float64 `json:"tx_bytes_per_s_avg,omitempty"`
	TxBytesPerSPeak   float64 `json:"tx_bytes_per_s_peak,omitempty"`
	RxPacketsPerSAvg  float64 `json:"rx_packets_per_s_avg,omitempty"`
	TxPacketsPerSAvg  float64 `json:"tx_packets_per_s_avg,omitempty"`
	TCPEstablishedMax float64 `json:"tcp_established_max,omitempty"`
	TCPTimeWaitMax    float64 `json:"tcp_time_wait_max,omitempty"`
	// ListenDrops and ListenOverflows are the broker host's kernel counters over the run:
	// connections its listen queue could not take.
	ListenDrops     float64 `json:"listen_drops,omitempty"`
	ListenOverflows float64 `json:"listen_overflows,omitempty"`
	// Process is the broker process as the endpoint saw it, when broker_process holds the
	// local sampler's figures too (both are kept, so that they can be set side by side).
	Process *BrokerProcess `json:"process,omitempty"`
	// Series are the --broker-metric series over the measure window, by spec.
	Series map[string]SeriesSummary `json:"series,omitempty"`
}

// MetricsSource is one --broker-metrics endpoint: what it served and how its scrapes went.
type MetricsSource struct {
	URL string `json:"url"`
	// Kinds are what it was recognised as: node_exporter, process-exporter, process.
	Kinds     []string `json:"kinds,omitempty"`
	ScrapesOK int      `json:"scrapes_ok"`
	Failed    int      `json:"scrapes_failed"`
	// TookMSMax is the longest scrape that succeeded.
	TookMSMax float64 `json:"took_ms_max"`
	LastError string  `json:"last_error,omitempty"`
}

// SeriesSummary is one --broker-metric series: a counter's rate per second, or a gauge's
// value, averaged over the measure window, with its peak.
type SeriesSummary struct {
	Counter bool    `json:"counter"`
	Avg     float64 `json:"avg"`
	Peak    float64 `json:"peak"`
	// Samples is how many intervals had a value.
	Samples int `json:"samples"`
}

// IntervalBrokerHost is one interval's figures of the broker's host (--broker-metrics);
// nil in an interval where no endpoint answered. Host figures are absent (zero) when no
// node_exporter answered, process figures when no process endpoint did (HasProcess).
type IntervalBrokerHost struct {
	CPUPercent        float64 `json:"cpu_percent,omitempty"`
	MemUsedBytes      float64 `json:"mem_used_bytes,omitempty"`
	MemAvailableBytes float64 `json:"mem_available_bytes,omitempty"`
	RxBytesPerS       float64 `json:"rx_bytes_per_s,omitempty"`
	TxBytesPerS       float64 `json:"tx_bytes_per_s,omitempty"`
	RxPacketsPerS     float64 `json:"rx_packets_per_s,omitempty"`
	TxPacketsPerS     float64 `json:"tx_packets_per_s,omitempty"`
	TCPEstab          float64 `json:"tcp_established,omitempty"`
	TCPTimeWait       float64 `json:"tcp_time_wait,omitempty"`
	ListenDrops       float64 `json:"listen_drops,omitempty"`
	HasHost           bool    `json:"has_host,omitempty"`
	// The broker process as the endpoint saw it (100 = one core).
	ProcessCPUPercent float64 `json:"process_cpu_percent,omitempty"`
	ProcessRSSBytes   float64 `json:"process_rss_bytes,omitempty"`
	ProcessFDs        float64 `json:"process_fds,omitempty"`
	HasProcess        bool    `json:"has_process,omitempty"`
	// Series are the --broker-metric values: a counter's rate per second, a gauge's value.
	Series map[string]float64 `json:"series,omitempty"`
}

// BrokerBusy is the verdict that the broker's CPU, not the client, set the run's limit:
// the broker's host at 95 % or more of its CPUs over the measure window, or the broker
// process at 95 % or more of one core. Evidence names the figure and where it came from.
type BrokerBusy struct {
	Busy     bool     `json:"busy"`
	Evidence []string `json:"evidence,omitempty"`
}
