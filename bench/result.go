package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mqblast/mqblast/tuning"
)

// Schema is the result document's schema name (DESIGN.md §6). Adding fields keeps it;
// renaming or removing one needs a new version.
const Schema = "mqblast.result/v1"

// Result is the result document of one run.
type Result struct {
	Schema      string    `json:"schema"`
	ToolVersion string    `json:"tool_version"`
	StartedAt   time.Time `json:"started_at"`
	EndedAt     time.Time `json:"ended_at"`
	Interrupted bool      `json:"interrupted,omitempty"`
	MeasureFrom time.Time `json:"measure_from,omitzero"`
	MeasureTo   time.Time `json:"measure_to,omitzero"`
	// Start is the --start-at instant and when this run was ready for it (nil without).
	Start *StartInfo `json:"start,omitempty"`
	// FirstPublishAt is when the run's first PUBLISH was written (the earliest of the shards').
	FirstPublishAt time.Time       `json:"first_publish_at,omitzero"`
	Broker         []string        `json:"broker"`
	Scenario       json.RawMessage `json:"scenario,omitempty"`
	Host           HostInfo        `json:"host"`
	Shard          *ShardInfo      `json:"shard,omitempty"` // --shard I/N; nil for a whole run
	Connections    Connections     `json:"connections"`
	Messages       Messages        `json:"messages"`
	Throughput     Throughput      `json:"throughput"`
	LatencyUS      Percentiles     `json:"latency_us"`     // corrected: from the due time
	LatencyRaw     Percentiles     `json:"latency_raw_us"` // from the actual write
	Intervals      []Interval      `json:"intervals"`
	Client         ClientInfo      `json:"client"`
	// BrokerStalled is the evidence that the broker, not the client, held the publishers
	// back: flow control, a socket it did not read, connections it lost (DESIGN.md §3).
	BrokerStalled BrokerStalled `json:"broker_stalled"`
	// Kernel is the kernel's network counters over the run, with findings (Watch).
	Kernel *Kernel `json:"kernel,omitempty"`
	// BrokerProcess is the broker's own CPU and memory, when it was sampled (Watch).
	BrokerProcess *BrokerProcess `json:"broker_process,omitempty"`
	Thresholds    []Threshold    `json:"thresholds,omitempty"`
	Histograms    Histograms     `json:"histograms"`
	Errors        []ErrorCount   `json:"errors"`

	// BrokerKind is "sink" when the run started mqblast sink itself (run --sink); empty for
	// a broker it was given.
	BrokerKind string `json:"broker_kind,omitempty"`
	// Calibration marks a run against the sink: it measures the client host's own ceiling
	// (the sink costs almost nothing and keeps nothing), not a broker.
	Calibration bool `json:"calibration,omitempty"`
	// Network is the network profile the run went through (run --net); nil on the plain
	// network.
	Network *NetworkInfo `json:"network,omitempty"`
}

// NetworkInfo is a run's network profile: its canonical spelling (a name, or items such as
// "delay=2ms,loss=0.1%"), each direction, and what applied it: "netem" (the host's qdiscs
// toward the broker) or "emulator" (the user-space packet emulator between the client's and
// the broker's namespaces).
type NetworkInfo struct {
	Profile string      `json:"profile"`
	Up      tuning.Path `json:"up"`
	Down    tuning.Path `json:"down"`
	Via     string      `json:"via"`
}

// HostInfo describes the load generator's host.
type HostInfo struct {
	Hostname string          `json:"hostname"`
	Cores    int             `json:"cores"`
	Kernel   string          `json:"kernel"`
	Procs    int             `json:"procs"`
	Clock    *Clock          `json:"clock,omitempty"` // the kernel's clock error estimate (adjtimex)
	Checks   json.RawMessage `json:"checks,omitempty"`
	// Limited says the host's kernel limited the run (a listen queue, SYN retransmits,
	// memory pressure, conntrack or softnet drops): the figures are distorted by the host,
	// not the broker alone; LimitedEvidence are the findings.
	Limited         bool     `json:"limited"`
	LimitedEvidence []string `json:"limited_evidence,omitempty"`
}

// StartInfo is a run's agreed start (--start-at): At, the wall-clock instant every shard
// starts publishing; ReadyAt, when this run's subscriptions were in place; LateMS, how far
// ReadyAt was past At (the run then started at once, late; 0: on time). A merged result
// has the latest shard's ReadyAt and LateMS.
type StartInfo struct {
	At      time.Time `json:"at"`
	ReadyAt time.Time `json:"ready_at"`
	LateMS  int64     `json:"late_ms"`
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
	// TLS, for mqtts:// and wss:// brokers: the handshakes (first connects and reconnects),
	// those resumed from a session ticket, their time from the TCP connection to the end
	// of the handshake (part of connect latency, which runs from the TCP start to the
	// CONNACK) and the client's CPU per handshake. WebSocket: the upgrade's time (request to
	// 101 response).
	TLSHandshakes          int64        `json:"tls_handshakes,omitempty"`
	TLSResumed             int64        `json:"tls_resumed,omitempty"`
	TLSHandshakeUS         *Percentiles `json:"tls_handshake_us,omitempty"`
	TLSHandshakeCPUUSPerOp float64      `json:"tls_handshake_cpu_us,omitempty"`
	WSUpgradeUS            *Percentiles `json:"ws_upgrade_us,omitempty"`
}

// Messages counts the messages of the whole run, warm-up and drain included, so that they
// can be held against the broker's own counters (zero in a Connections run). Every
// scheduled message is accounted for: scheduled = published + unsent_total; and every
// expected copy: expected = received + lost + in_flight_at_end + in_flight_lost
// (DESIGN.md §3).
type Messages struct {
	// Scheduled are the messages due on the publishers' schedules before the stop.
	Scheduled int64 `json:"scheduled"`
	// Published are the messages written to their sockets (handed to the kernel).
	Published int64 `json:"published"`
	// Unsent are the scheduled messages never written, by cause: disconnected,
	// flow_control (the broker's in-flight window full until the end), too_large (over
	// the broker's Maximum Packet Size), back_pressure (the socket held a full queue: the
	// broker did not read), not_read (encoded, still queued at the end), interrupted,
	// behind (the client had not sent them by the end).
	Unsent      map[string]int64 `json:"unsent"`
	UnsentTotal int64            `json:"unsent_total"`
	Acked       int64            `json:"acked"`
	// Expected are the copies the broker should deliver of what was published, by the plan.
	Expected int64 `json:"expected"`
	// Received are the distinct copies that arrived on expected streams.
	Received int64 `json:"received"`
	// Lost are expected copies that did not arrive by the end of the drain, of messages
	// the broker acknowledged (or QoS 0 ones written): the broker lost them.
	Lost int64 `json:"lost"`
	// InFlightAtEnd are expected copies that did not arrive, of messages written and still
	// unacknowledged at the end: the broker did not take them in time.
	InFlightAtEnd int64 `json:"in_flight_at_end"`
	// InFlightDropped are written messages whose connection ended unacknowledged and whose
	// session did not survive (not re-sent); InFlightLost the expected copies of them that
	// did not arrive (the connection went before the broker took them).
	InFlightDropped int64 `json:"in_flight_dropped"`
	InFlightLost    int64 `json:"in_flight_lost"`
	Duplicated      int64 `json:"duplicated"`
	OutOfOrder      int64 `json:"out_of_order"`
	// Unexpected are measured copies for no expected stream, by kind: unknown_publisher,
	// not_subscribed, not_expected, stale (due before this run's publishing began).
	Unexpected      map[string]int64 `json:"unexpected"`
	UnexpectedTotal int64            `json:"unexpected_total"`
	// Unmeasured are payloads without mqblast's measurement header (another publisher's).
	Unmeasured      int64 `json:"unmeasured"`
	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// SubscribeRefused counts refused filters by SUBACK reason (the last failing filter's
	// reason for a SUBACK that refuses several).
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
}

// Throughput covers the measure window: messages written (publish) and arrived (receive)
// inside it, divided by the window that ran (it ends at an interrupt).
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
	Unsent           int64       `json:"unsent"`
	Expected         int64       `json:"expected"`
	Received         int64       `json:"received"`
	Duplicated       int64       `json:"duplicated"`
	Unexpected       int64       `json:"unexpected"`
	Unmeasured       int64       `json:"unmeasured"`
	// Kernel are the counters that moved in the interval (broker.-prefixed: the broker's
	// namespace); BrokerCPUPercent and BrokerRSSBytes the broker process's, when sampled.
	Kernel           map[string]int64 `json:"kernel,omitempty"`
	BrokerCPUPercent float64          `json:"broker_cpu_percent,omitempty"`
	BrokerRSSBytes   int64            `json:"broker_rss_bytes,omitempty"`
	PublishPerS      float64          `json:"publish_per_s"`
	ReceivePerS      float64          `json:"receive_per_s"`
	LatencyUS        Percentiles      `json:"latency_us"`
	LatencyRawUS     Percentiles      `json:"latency_raw_us"`
	// ScheduleLagUS is the client's own lateness in building the interval's messages (see
	// ClientInfo.ScheduleLagUS): when in the run the client fell behind.
	ScheduleLagUS Percentiles `json:"schedule_lag_us"`
	// ClientCPUPercent is the client processes' CPU over the interval (100 = one core),
	// ClientRSSBytes their resident set at its end (a parent's own is not counted).
	ClientCPUPercent float64 `json:"client_cpu_percent"`
	ClientRSSBytes   int64   `json:"client_rss_bytes"`
	// Histograms are the interval's own histograms, so that an interval log (.hlog) can be
	// written from a result, merged ones included.
	Histograms *IntervalHistograms `json:"histograms,omitempty"`
}

// IntervalHistograms are one interval's histograms in HdrHistogram V2 form (null when
// empty).
type IntervalHistograms struct {
	Latency        *Hist `json:"latency"`
	LatencyRaw     *Hist `json:"latency_raw"`
	ConnectLatency *Hist `json:"connect_latency"`
	ScheduleLag    *Hist `json:"schedule_lag,omitempty"`
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
	// CPUMeasureS is the client's CPU time over the measure window (the workers' sum);
	// make bench-floor divides it by the messages received in the window.
	CPUMeasureS float64 `json:"cpu_measure_s,omitempty"`
	// RunDelayS is how long the client's threads waited on the kernel's run queues for a CPU
	// over the measure window (the workers' sum; schedstat): CPU the host did not give it,
	// because the broker or other work shares its cores. Absent where the kernel does not
	// keep it.
	RunDelayS float64 `json:"run_delay_s,omitempty"`
}

// Histograms hold the run's histograms in HdrHistogram V2 form, so shards merge exactly.
type Histograms struct {
	ConnectLatency *Hist `json:"connect_latency"`
	PingRTT        *Hist `json:"ping_rtt"`
	TLSHandshake   *Hist `json:"tls_handshake,omitempty"`
	WSUpgrade      *Hist `json:"ws_upgrade,omitempty"`
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

// BrokerStalled is what held the publishers back on the broker's side. Held times are
// publisher-seconds (two publishers held for one second make 2).
type BrokerStalled struct {
	Stalled    bool               `json:"stalled"`
	Publishers int64              `json:"publishers"` // publishers held at least once
	Holds      map[string]int64   `json:"holds"`      // holds by kind: flow_control, back_pressure, disconnected
	HeldS      map[string]float64 `json:"held_s"`
	Evidence   []string           `json:"evidence,omitempty"`
}

// saturationLag is the schedule lag (p99) past which the client itself is the limit.
const saturationLag = 10 * time.Millisecond

// stallMin is the publisher time held by the broker from which the run reports it stalled.
const stallMin = 100 * time.Millisecond

// measured sets the measure window's throughput and the client's saturation verdict.
// cpu is the client's CPU time during the window, wait the time its threads waited for a
// CPU in it (negative: not known). Only the client's own evidence makes it saturated: its
// CPU, and lateness it caused itself (schedule lag excludes the time the broker held a
// publisher: see reactor.Observer.Published); lateness that comes with a large wait for a
// CPU says so, as the host's doing as much as the client's.
func (r *Result) measured(total *Snapshot, window, cpu, wait time.Duration) {
	w := window.Seconds()
	if w <= 0 {
		return
	}
	r.Throughput = Throughput{WindowS: w,
		PublishPerS: float64(total.PublishedMeasured) / w, ReceivePerS: float64(total.ReceivedMeasured) / w}
	c := &r.Client
	c.CPUMeasureS = cpu.Seconds()
	if wait >= 0 {
		c.RunDelayS = wait.Seconds()
	}
	if lag := time.Duration(c.ScheduleLagUS.P99) * time.Microsecond; lag > saturationLag {
		c.Saturated = true
		ev := fmt.Sprintf("schedule lag p99 %v > %v: the client built messages late while the broker was taking them", lag, saturationLag)
		if share := c.RunDelayS / w; share >= runDelayShare {
			ev += fmt.Sprintf("; its threads waited %.2f s for a CPU in the %.1f s window (%.0f%% of one core's time): "+
				"the host's cores are short (the broker or other work shares them)", c.RunDelayS, w, 100*share)
		}
		c.SaturationEvidence = append(c.SaturationEvidence, ev)
	}
	if util := cpu.Seconds() / w / float64(max(r.Host.Cores, 1)); util > 0.9 {
		c.Saturated = true
		c.SaturationEvidence = append(c.SaturationEvidence,
			fmt.Sprintf("client CPU %.0f%% of %d cores during the measure window", 100*util, r.Host.Cores))
	}
}

// runDelayShare is the share of the measure window (of one core's time) that the client's
// threads may wait for a CPU before its lateness is said to be the host's as much as its own.
const runDelayShare = 0.05

// stalled fills BrokerStalled from the run's holds and unsent causes.
func (r *Result) stalled(total *Snapshot) {
	b := &r.BrokerStalled
	*b = BrokerStalled{Publishers: total.HeldPublishers, Holds: total.Holds, HeldS: map[string]float64{}}
	var held time.Duration
	for _, k := range sortedKeys(total.HeldUS) {
		d := time.Duration(total.HeldUS[k]) * time.Microsecond
		b.HeldS[k] = d.Seconds()
		held += d
	}
	why := map[string]string{
		"flow_control":  "the in-flight window was full: acknowledgements came late",
		"back_pressure": "the socket did not take the bytes: the broker did not read",
		"disconnected":  "publishers had no connection",
	}
	for _, k := range sortedKeys(total.HeldUS) {
		if d := time.Duration(total.HeldUS[k]) * time.Microsecond; d >= time.Millisecond {
			b.Evidence = append(b.Evidence, fmt.Sprintf("%s: %d publishers held %d times for %v in all (%s)",
				k, total.HeldPublishers, total.Holds[k], d.Round(time.Millisecond), why[k]))
		}
	}
	for _, k := range []string{"disconnected", "flow_control", "back_pressure", "not_read", "too_large"} {
		if n := total.Unsent[k]; n > 0 {
			b.Evidence = append(b.Evidence, fmt.Sprintf("%d scheduled messages unsent: %s", n, k))
		}
	}
	if n := total.Dropped; len(n) > 0 {
		b.Evidence = append(b.Evidence, fmt.Sprintf("%d connections lost while held", total.DroppedTotal()))
	}
	b.Stalled = held >= stallMin || total.Unsent["disconnected"]+total.Unsent["flow_control"]+
		total.Unsent["back_pressure"]+total.Unsent["not_read"] > 0 || total.InFlightAtEnd > 0
	if !b.Stalled {
		b.Evidence = nil
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
	c.TLSHandshakes, c.TLSResumed = total.TLSHandshakes, total.TLSResumed
	if h := total.TLSHandshake; h != nil && h.Count() > 0 {
		p := h.Summary()
		c.TLSHandshakeUS, r.Histograms.TLSHandshake = &p, h
		if total.TLSHandshakes > 0 {
			c.TLSHandshakeCPUUSPerOp = float64(total.TLSCPUUS) / float64(total.TLSHandshakes)
		}
	}
	if h := total.WSUpgrade; h != nil && h.Count() > 0 {
		p := h.Summary()
		c.WSUpgradeUS, r.Histograms.WSUpgrade = &p, h
	}
	m := &r.Messages
	*m = Messages{Scheduled: total.Scheduled, Published: total.Published, Unsent: total.Unsent,
		UnsentTotal: total.UnsentTotal(), Acked: total.Acked, Expected: total.Expected,
		Received: total.Received, InFlightAtEnd: total.InFlightAtEnd, InFlightDropped: total.InFlightDropped,
		InFlightLost: total.InFlightLost,
		Duplicated:   total.Duplicated, OutOfOrder: total.OutOfOrder,
		Unexpected: total.Unexpected, UnexpectedTotal: total.UnexpectedTotal(),
		Unmeasured: total.Unmeasured, Subscribed: total.Subscribed, SubscribeFailed: total.SubscribeFailed,
		SubscribeRefused: total.SubscribeRefused}
	if total.FirstPublish > 0 {
		r.FirstPublishAt = time.Unix(0, total.FirstPublish).UTC()
	}
	m.Lost = max(total.Expected-total.Received-total.InFlightAtEnd-total.InFlightLost, 0)
	r.stalled(total)
	r.LatencyUS = total.Latency.Summary()
	r.LatencyRaw = total.LatencyRaw.Summary()
	r.Client.ScheduleLagUS = total.ScheduleLag.Summary()
	kept := r.Errors[:0] // the run's own (subscribe_timeout, ...); the others are derived anew
	for _, e := range r.Errors {
		if !derivedError(e.Kind) {
			kept = append(kept, e)
		}
	}
	r.Errors = kept
	add := func(prefix string, m map[string]int64) {
		for _, k := range sortedKeys(m) {
			r.Errors = append(r.Errors, ErrorCount{Kind: prefix + k, Count: m[k], Example: total.Examples[prefix+k]})
		}
	}
	add("refused:", total.Refused)
	add("failed:", total.Failed)
	add("dropped:", total.Dropped)
}

// derivedError reports whether an error kind is one fill derives from the counts
// (refused, failed and dropped connections) rather than one the run added.
func derivedError(kind string) bool {
	return strings.HasPrefix(kind, "refused:") || strings.HasPrefix(kind, "failed:") || strings.HasPrefix(kind, "dropped:")
}
