package bench

import (
	"encoding/json"
	"fmt"
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
	MeasureFrom time.Time       `json:"measure_from,omitzero"`
	MeasureTo   time.Time       `json:"measure_to,omitzero"`
	Broker      []string        `json:"broker"`
	Scenario    json.RawMessage `json:"scenario,omitempty"`
	Host        HostInfo        `json:"host"`
	Shard       *ShardInfo      `json:"shard,omitempty"` // --shard I/N; nil for a whole run
	Connections Connections     `json:"connections"`
	Messages    Messages        `json:"messages"`
	Throughput  Throughput      `json:"throughput"`
	LatencyUS   Percentiles     `json:"latency_us"`     // corrected: from the due time
	LatencyRaw  Percentiles     `json:"latency_raw_us"` // from the actual write
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

// Messages counts the messages of the whole run, warm-up and drain included, so that they
// can be held against the broker's own counters (zero in a Connections run).
type Messages struct {
	Published       int64 `json:"published"`
	Acked           int64 `json:"acked"`
	Expected        int64 `json:"expected"`
	Received        int64 `json:"received"`
	Lost            int64 `json:"lost"`
	Duplicated      int64 `json:"duplicated"`
	OutOfOrder      int64 `json:"out_of_order"`
	Unmeasured      int64 `json:"unmeasured"`
	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// SubscribeRefused counts refused filters by SUBACK reason (the last failing filter's
	// reason for a SUBACK that refuses several).
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
}

// Throughput covers the measure window: messages due inside it.
type Throughput struct {
	PublishPerS float64 `json:"publish_per_s"`
	ReceivePerS float64 `json:"receive_per_s"`
	WindowS     float64 `json:"window_s"`
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
	Published        int64       `json:"published"`
	Expected         int64       `json:"expected"`
	Received         int64       `json:"received"`
	Duplicated       int64       `json:"duplicated"`
	PublishPerS      float64     `json:"publish_per_s"`
	ReceivePerS      float64     `json:"receive_per_s"`
	LatencyUS        Percentiles `json:"latency_us"`
}

// ClientInfo is the load generator's measurement of itself.
type ClientInfo struct {
	CPUS                  float64     `json:"cpu_s"`
	CPUPerConnectUS       float64     `json:"cpu_per_connect_us"`
	MaxRSSBytes           int64       `json:"max_rss_bytes"`
	RSSPerConnectionBytes float64     `json:"rss_per_connection_bytes"`
	Saturated             bool        `json:"saturated"`
	ScheduleLagUS         Percentiles `json:"schedule_lag_us"`
	SaturationEvidence    []string    `json:"saturation_evidence,omitempty"`
}

// Histograms hold the run's histograms in HdrHistogram V2 form, so shards merge exactly.
type Histograms struct {
	ConnectLatency *Hist `json:"connect_latency"`
	PingRTT        *Hist `json:"ping_rtt"`
	Latency        *Hist `json:"latency"`
	LatencyRaw     *Hist `json:"latency_raw"`
	ScheduleLag    *Hist `json:"schedule_lag"`
}

// ErrorCount is one kind of error with its count and one example.
type ErrorCount struct {
	Kind    string `json:"kind"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
}

// saturationLag is the schedule lag (p99) past which the client itself is the limit.
const saturationLag = 10 * time.Millisecond

// measured sets the measure window's throughput and the client's saturation verdict.
// cpu is the client's CPU time during the window.
func (r *Result) measured(total *Snapshot, window, cpu time.Duration) {
	w := window.Seconds()
	r.Throughput = Throughput{WindowS: w,
		PublishPerS: float64(total.PublishedMeasured) / w, ReceivePerS: float64(total.ReceivedMeasured) / w}
	c := &r.Client
	if lag := time.Duration(c.ScheduleLagUS.P99) * time.Microsecond; lag > saturationLag {
		c.Saturated = true
		c.SaturationEvidence = append(c.SaturationEvidence,
			fmt.Sprintf("schedule lag p99 %v > %v: messages went out late because of the client", lag, saturationLag))
	}
	if util := cpu.Seconds() / w / float64(max(r.Host.Cores, 1)); util > 0.9 {
		c.Saturated = true
		c.SaturationEvidence = append(c.SaturationEvidence,
			fmt.Sprintf("client CPU %.0f%% of %d cores during the measure window", 100*util, r.Host.Cores))
	}
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
	r.Histograms = Histograms{ConnectLatency: total.ConnectLatency, PingRTT: total.PingRTT,
		Latency: total.Latency, LatencyRaw: total.LatencyRaw, ScheduleLag: total.ScheduleLag}
	m := &r.Messages
	*m = Messages{Published: total.Published, Acked: total.Acked, Expected: total.Expected,
		Received: total.Received, Duplicated: total.Duplicated, OutOfOrder: total.OutOfOrder,
		Unmeasured: total.Unmeasured, Subscribed: total.Subscribed, SubscribeFailed: total.SubscribeFailed,
		SubscribeRefused: total.SubscribeRefused}
	if distinct := total.Received - total.Duplicated - total.Unmeasured; total.Expected > distinct {
		m.Lost = total.Expected - distinct
	}
	r.LatencyUS = total.Latency.Summary()
	r.LatencyRaw = total.LatencyRaw.Summary()
	r.Client.ScheduleLagUS = total.ScheduleLag.Summary()
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
