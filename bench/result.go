package bench

import (
	"encoding/json"
	"io"
	"time"
)

// Schema is the result document's schema name (DESIGN.md §6). Adding fields keeps it;
// renaming or removing one needs a new version.
const Schema = "mqblast.result/v1"

// Result is the result document of one run.
type Result struct {
	Schema      string          `json:"schema"`
	ToolVersion string          `json:"tool_version"`
	StartedAt   time.Time       `json:"started_at"`
	EndedAt     time.Time       `json:"ended_at"`
	Interrupted bool            `json:"interrupted,omitempty"`
	Broker      []string        `json:"broker"`
	Scenario    json.RawMessage `json:"scenario,omitempty"`
	Host        HostInfo        `json:"host"`
	Connections Connections     `json:"connections"`
	Messages    Messages        `json:"messages"`
	Intervals   []Interval      `json:"intervals"`
	Client      ClientInfo      `json:"client"`
	Histograms  Histograms      `json:"histograms"`
	Errors      []ErrorCount    `json:"errors"`
}

// HostInfo describes the load generator's host.
type HostInfo struct {
	Hostname string          `json:"hostname"`
	Cores    int             `json:"cores"`
	Kernel   string          `json:"kernel"`
	Procs    int             `json:"procs"`
	Checks   json.RawMessage `json:"checks,omitempty"`
}

// Connections are the connect phase's figures.
type Connections struct {
	Target           int              `json:"target"`
	Established      int64            `json:"established"`
	Failed           int64            `json:"failed"`
	Refused          map[string]int64 `json:"refused"`
	FailedBy         map[string]int64 `json:"failed_by_cause"`
	Dropped          int64            `json:"dropped"`
	Reconnected      int64            `json:"reconnected"`
	DroppedBy        map[string]int64 `json:"dropped_by_cause"`
	ConnectRatePerS  float64          `json:"connect_rate_per_s"`
	ConnectPhaseS    float64          `json:"connect_phase_s"`
	ConnectLatencyUS Percentiles      `json:"connect_latency_us"`
	Pings            int64            `json:"pings"`
	PingRTTUS        Percentiles      `json:"ping_rtt_us"`
}

// Messages counts the messages of the whole run (zero in a Connections run).
type Messages struct {
	Published  int64 `json:"published"`
	Acked      int64 `json:"acked"`
	Expected   int64 `json:"expected"`
	Received   int64 `json:"received"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	OutOfOrder int64 `json:"out_of_order"`
}

// Interval is one reporting interval.
type Interval struct {
	TS               float64     `json:"t_s"`
	Established      int64       `json:"established"`
	Connected        int64       `json:"connected"`
	Failed           int64       `json:"failed"`
	Dropped          int64       `json:"dropped"`
	ConnectPerS      float64     `json:"connect_per_s"`
	ConnectLatencyUS Percentiles `json:"connect_latency_us"`
}

// ClientInfo is the load generator's measurement of itself.
type ClientInfo struct {
	CPUS                  float64  `json:"cpu_s"`
	CPUPerConnectUS       float64  `json:"cpu_per_connect_us"`
	MaxRSSBytes           int64    `json:"max_rss_bytes"`
	RSSPerConnectionBytes float64  `json:"rss_per_connection_bytes"`
	Saturated             bool     `json:"saturated"`
	SaturationEvidence    []string `json:"saturation_evidence,omitempty"`
}

// Histograms hold the run's histograms in HdrHistogram V2 form, so shards merge exactly.
type Histograms struct {
	ConnectLatency *Hist `json:"connect_latency"`
	PingRTT        *Hist `json:"ping_rtt"`
}

// ErrorCount is one kind of error with its count and one example.
type ErrorCount struct {
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// fill sets the totals of r from the whole run's snapshot.
func (r *Result) fill(total *Snapshot) {
	c := &r.Connections
	c.Established = total.Connected
	c.Failed = total.FailedTotal()
	c.Refused = total.Refused
	c.FailedBy = total.Failed
	c.Dropped = total.DroppedTotal()
	c.Reconnected = total.Reconnected
	c.DroppedBy = total.Dropped
	c.ConnectLatencyUS = total.ConnectLatency.Summary()
	c.Pings = total.Pings
	c.PingRTTUS = total.PingRTT.Summary()
	r.Histograms = Histograms{ConnectLatency: total.ConnectLatency, PingRTT: total.PingRTT}
	r.Errors = r.Errors[:0]
	add := func(prefix string, m map[string]int64) {
		for _, k := range sortedKeys(m) {
			r.Errors = append(r.Errors, ErrorCount{Kind: prefix + k, Count: m[k], Example: total.Examples[prefix+k]})
		}
	}
	add("refused:", total.Refused)
	add("failed:", total.Failed)
	add("dropped:", total.Dropped)
}
