package result

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Schema is the result document's schema name. Adding fields keeps it; renaming or
// removing one needs a new version, and documents of every earlier writer of this
// version still read.
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
	// Run is the run's identity, which every measured header carries (nil in documents
	// written before runs had one): merge takes only documents of one run.
	Run *RunInfo `json:"run,omitempty"`
	// Start is the --start-at instant and when this run was ready for it (nil without).
	Start *StartInfo `json:"start,omitempty"`
	// FirstPublishAt is when the run's first PUBLISH was written (the earliest of the shards').
	FirstPublishAt time.Time `json:"first_publish_at,omitzero"`
	Broker         []string  `json:"broker"`
	// Spec is the run's description as it ran (mqblast.spec/v1: the scenario file's JSON
	// in it, every password the marker), from which the run is repeated (run --spec); nil
	// in documents written before runs had one.
	Spec        json.RawMessage `json:"spec,omitempty"`
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
	// BrokerStalled is the evidence that the broker, not the client, held the publishers
	// back: flow control, a socket it did not read, connections it lost.
	BrokerStalled BrokerStalled `json:"broker_stalled"`
	// BrokerBehaviour is what the broker did differently from what the plan asked: its
	// refusals (of messages, subscriptions), its DISCONNECTs, the capabilities its CONNACK
	// said it lacks, the QoS its SUBACKs granted below the asked (nil: none).
	BrokerBehaviour []BrokerBehaviour `json:"broker_behaviour,omitempty"`
	// Kernel is the kernel's network counters over the run, with findings (Watch).
	Kernel *Kernel `json:"kernel,omitempty"`
	// BrokerProcess is the broker's own CPU and memory, when it was sampled (Watch).
	BrokerProcess *BrokerProcess `json:"broker_process,omitempty"`
	// BrokerHost is the broker's host as its Prometheus endpoints saw it (--broker-metrics).
	BrokerHost *BrokerHost `json:"broker_host,omitempty"`
	// BrokerBusy says whether the broker's CPU was the limit, from the broker host's or the
	// broker process's figures (nil: the broker was not watched).
	BrokerBusy *BrokerBusy `json:"broker_busy,omitempty"`
	// LimitedBy is who limited the run, "client", "broker" or "host" (empty: nothing did),
	// and LimitedByReason why: one judgement with client.saturated, broker_stalled.stalled
	// and host.limited (Judge), so that they never contradict one another.
	LimitedBy       string      `json:"limited_by,omitempty"`
	LimitedByReason string      `json:"limited_by_reason,omitempty"`
	BrokerSys       *BrokerSys  `json:"broker_sys,omitempty"` // the broker's $SYS (--broker-sys)
	Thresholds      []Threshold `json:"thresholds,omitempty"`
	// Groups are the figures of each client group of a mixed run (nil for a run of one
	// group: its figures are the run's).
	Groups []Group `json:"groups,omitempty"`
	// Measurement says where each publishing group's messages carried their measurement,
	// when one of them publishes payloads of its own (a payload template): nil when every
	// message starts with the binary header, as before.
	Measurement []GroupMeasurement `json:"measurement,omitempty"`
	// Stages are the stages of a staged run with their figures (nil without stages).
	Stages []Stage `json:"stages,omitempty"`
	// Limit is the answer of a search for the broker's limit (mqblast limit); nil for
	// any other run.
	Limit *Limit `json:"limit,omitempty"`
	// Soak is the load held for --sustain and its drift by window (nil: no soak).
	Soak       *Soak        `json:"soak,omitempty"`
	Histograms Histograms   `json:"histograms"`
	Errors     []ErrorCount `json:"errors"`

	// BrokerKind is "sink" when the run started mqblast sink itself (run --sink); empty for
	// a broker it was given.
	BrokerKind string `json:"broker_kind,omitempty"`
	// Calibration marks a run against the sink: it measures the client host's own ceiling
	// (the sink costs almost nothing and keeps nothing), not a broker.
	Calibration bool `json:"calibration,omitempty"`
	// Network is the network profile the run went through (run --net); nil on the plain
	// network.
	Network *NetworkInfo `json:"network,omitempty"`
	// RemoteWrite are the pushes to a remote-write receiver (run --remote-write); nil when
	// none was asked for.
	RemoteWrite *RemoteWrite `json:"remote_write,omitempty"`
	// Transport says how the TLS connections were carried (absent without TLS).
	Transport Transport `json:"transport,omitzero"`

	// Join is what this part of a run leaves for the figures that need every stream at
	// once, where its streams meet other parts' (a worker's result, a shard's document);
	// nil for a whole run and when nothing crosses parts.
	Join *Join `json:"join,omitempty"`

	// Total is the additive snapshot the document's counts and histograms were derived
	// from (SetTotal). It is not written: a document read back derives it from its own
	// fields when it is merged.
	Total *Snapshot `json:"-"`
	// owing says, for a group's figures (setGroups), that the run's drain ended with
	// copies still arriving: the group's missing copies are owed as the run's are, its
	// own arrivals at the end whatever they were.
	owing bool
}

// NetworkInfo is a run's network profile: its canonical spelling (a name, or items such as
// "delay=2ms,loss=0.1%"), each direction, and what applied it: "netem" (the host's qdiscs
// toward the broker) or "emulator" (the user-space packet emulator between the client's and
// the broker's namespaces).
type NetworkInfo struct {
	Profile string `json:"profile"`
	Up      Path   `json:"up"`
	Down    Path   `json:"down"`
	Via     string `json:"via"`
}

// Path is one direction of a network profile: the delay added to every packet, the
// half-width of a uniform spread around it (each packet waits Delay ± Jitter), and the
// probability, 0 to 1, that a packet is dropped. Its JSON is tuning.Path's, which it is
// converted from.
type Path struct {
	Delay  time.Duration `json:"delay_ns"`
	Jitter time.Duration `json:"jitter_ns"`
	Loss   float64       `json:"loss"`
}

// IsZero reports whether p changes nothing.
func (p Path) IsZero() bool { return p.Delay == 0 && p.Jitter == 0 && p.Loss == 0 }

// HostInfo describes the load generator's host.
type HostInfo struct {
	Hostname string          `json:"hostname"`
	Cores    int             `json:"cores"`
	Kernel   string          `json:"kernel"`
	Procs    int             `json:"procs"`
	Clock    *Clock          `json:"clock,omitempty"` // the kernel's clock error estimate (adjtimex)
	Checks   json.RawMessage `json:"checks,omitempty"`
	// Limited says the host limited the run: its kernel (a listen queue, SYN retransmits,
	// memory pressure, conntrack or softnet drops, the hypervisor's steal) or its cores (the
	// client built messages late while its threads waited for a CPU): the figures are
	// distorted by the host, not the broker alone; LimitedEvidence are the findings.
	Limited         bool     `json:"limited"`
	LimitedEvidence []string `json:"limited_evidence,omitempty"`
}

// RunInfo is a run's identity. ID is --run-id as given, else derived from the --start-at
// instant, else generated; Tag is the 16 bits derived from it that every measured header
// carries, so that a receiver tells the run's messages from those of any other mqblast run
// on the same topics. From says which: "run-id", "start-at" or "generated". The shards and
// worker processes of one run share it.
type RunInfo struct {
	ID   string `json:"id"`
	Tag  uint16 `json:"tag"`
	From string `json:"from"`
}

// String returns the identity as the summary shows it: the ID and its tag in hex.
func (r *RunInfo) String() string {
	if r == nil {
		return "none (written before runs had an identity)"
	}
	return fmt.Sprintf("%s (tag %04x, %s)", r.ID, r.Tag, r.From)
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

// Connections are the connect phase's figures. Failed counts clients that never connected
// (Refused by reason plus FailedBy by cause); a reconnect attempt that fails is counted in
// ReconnectFailed, by cause in ReconnectFailedBy ("refused:REASON" for a CONNACK's refusal).
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
	// Client certificates minted by mqblast from a CA (--client-ca), one per TLS handshake
	// in which the broker asked for one: how many, their time to make (key, signature;
	// part of tls_handshake_us) and the client's CPU per certificate (part of
	// tls_handshake_cpu_us).
	CertsMinted        int64        `json:"certs_minted,omitempty"`
	CertMintUS         *Percentiles `json:"cert_mint_us,omitempty"`
	CertMintCPUUSPerOp float64      `json:"cert_mint_cpu_us,omitempty"`
	// ReconnectLatencyUS is the connect latency of the reconnects (Reconnected): a
	// reconnect storm's, or the backoff's after drops; absent without reconnects.
	ReconnectLatencyUS *Percentiles `json:"reconnect_latency_us,omitempty"`

	ReconnectFailed   int64            `json:"reconnect_failed,omitempty"`
	ReconnectFailedBy map[string]int64 `json:"reconnect_failed_by_cause,omitempty"`
}

// Transport is how the connections were carried. RecordLayer counts the TLS connections
// established (connections.tls_handshakes: first connects and reconnects) by what sealed
// and opened their records: "loop", the event loop's own record layer (TLS 1.3), or
// "tls.Conn", crypto/tls's (TLS 1.2, another suite, or --tls-record-layer tls.Conn).
type Transport struct {
	RecordLayer map[string]int64 `json:"record_layer,omitempty"`
}

// IsZero reports whether t says nothing (no TLS connection): the document leaves it out.
func (t Transport) IsZero() bool { return len(t.RecordLayer) == 0 }

// Messages counts the messages of the whole run, warm-up and drain included, so that they
// can be held against the broker's own counters (zero in a Connections run). Every
// scheduled message is accounted for: scheduled = published + unsent_total; every QoS 1/2
// message written: published_qos12 = acked + refused_total + unacknowledged; and every
// expected copy: expected = received + lost + owed_at_end + in_flight_at_end + in_flight_lost +
// refused_copies + responses_unsent + not_shared_copies, unless ExpectedUnknown (then expected and lost are written as null).
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
	// Acked are the QoS 1/2 messages the broker accepted (PUBACK, PUBCOMP); Refused those it
	// refused, by reason (a 5.0 PUBACK or PUBREC reason code of 0x80 and up:
	// not_authorized, quota_exceeded, ...), RefusedTotal their sum. A QoS 1/2 message
	// written is acked, refused, or unacknowledged (Unacknowledged).
	Acked        int64            `json:"acked"`
	Refused      map[string]int64 `json:"refused,omitempty"`
	RefusedTotal int64            `json:"refused_total,omitempty"`

	// PublishedQoS12 are the published messages of QoS 1 or 2; Unacknowledged those of
	// them whose exchange had not ended when their session or the run did, by the step
	// that never came (UnacknowledgedBy: no_puback, no_pubrec, no_pubcomp):
	// published_qos12 = acked + refused_total + unacknowledged (absent: 0).
	PublishedQoS12   int64            `json:"published_qos12,omitempty"`
	Unacknowledged   int64            `json:"unacknowledged,omitempty"`
	UnacknowledgedBy map[string]int64 `json:"unacknowledged_by_step,omitempty"`

	// RefusedCopies are the expected copies of the refused messages: the broker said it
	// would not deliver them, so they are neither received nor lost.
	RefusedCopies int64 `json:"refused_copies,omitempty"`
	// ResponsesUnsent are the requests a responder of the run did not answer, its window
	// of responses in flight full (the broker's Receive Maximum): their expected responses
	// are neither received nor lost.
	ResponsesUnsent int64 `json:"responses_unsent,omitempty"`
	// NotSharedCopies are the expected copies on the "$share/" filters of 3.1.1 subscribers
	// of a broker that does not share (3.1.1 has no shared subscriptions: such a broker
	// takes the filter as a topic filter, which matches nothing): not one copy arrived of
	// the messages it took, so they are neither received nor lost (broker_behaviour
	// not_shared says so).
	NotSharedCopies int64 `json:"not_shared_copies,omitempty"`
	// Expected are the copies the broker should deliver of what was published, by the plan.
	Expected int64 `json:"expected"`
	// ExpectedUnknown says the plan does not know its publishers (a Subscribe run): what
	// should have arrived, and so what was lost, is unknown; the document writes expected
	// and lost as null, and a threshold on them does not hold.
	ExpectedUnknown bool `json:"expected_unknown,omitempty"`
	// Received are the distinct copies that arrived on expected streams.
	Received int64 `json:"received"`
	// Lost are expected copies, of messages the broker acknowledged (or QoS 0 ones
	// written), that the broker will never send: still missing when the drain saw arrivals
	// stop (an interval passed in which no copy arrived and no message was written).
	Lost int64 `json:"lost"`
	// OwedAtEnd are the expected copies the broker still owed when the drain had to end
	// while copies were still arriving (at its bound: drain_sec, then on while they kept
	// arriving, up to the bound; or interrupted, also before the drain), arriving at
	// OwedArrivalPerS copies per second over its last interval: neither received nor lost.
	OwedAtEnd       int64 `json:"owed_at_end,omitempty"`
	OwedArrivalPerS int64 `json:"owed_arrival_per_s,omitempty"`
	// DrainS is how long the drain lasted, in seconds: drain_sec, or less when every copy
	// was in, or more while copies kept arriving.
	DrainS float64 `json:"drain_s,omitempty"`
	// InFlightAtEnd are expected copies that did not arrive, of messages written and still
	// unacknowledged at the end: the broker did not take them in time.
	InFlightAtEnd int64 `json:"in_flight_at_end"`
	// InFlightDropped are written messages whose connection ended unacknowledged and whose
	// session did not survive (not re-sent); InFlightLost the expected copies of them that
	// did not arrive (the connection went before the broker took them).
	InFlightDropped int64 `json:"in_flight_dropped"`
	InFlightLost    int64 `json:"in_flight_lost"`
	// DeliveredOnReturn are the received copies (in Received) that arrived at a client
	// after it reconnected and were due before: what its session kept for it while it was
	// away (a persistent session), or what was on the way when it dropped.
	DeliveredOnReturn int64 `json:"delivered_on_return,omitempty"`
	Duplicated        int64 `json:"duplicated"`
	// Redelivered are copies that arrived again at QoS 1 with the DUP flag set, or after
	// their subscriber reconnected: re-deliveries QoS 1 permits (a kept session's, or of a
	// PUBACK the broker did not get), counted apart from Duplicated, which are copies a
	// broker should not have sent.
	Redelivered int64 `json:"redelivered,omitempty"`
	// Retained are copies the broker sent from its retained store because of a
	// subscription (RETAIN set [MQTT-3.3.1-8]; not counted on a filter with Retain As
	// Published): the topic's last message, to a client that subscribed after it was
	// published or subscribed again after a reconnect. Those the client had not had are in
	// Received; RetainedAgain are those it had, counted nowhere else (not duplicates: the
	// broker sends a retained message to every new subscription).
	Retained      int64 `json:"retained,omitempty"`
	RetainedAgain int64 `json:"retained_again,omitempty"`
	OutOfOrder    int64 `json:"out_of_order"`
	// Unexpected are measured copies for no expected stream, by kind: other_run (the header
	// carries another run's tag), unknown_publisher, not_subscribed, not_expected, stale
	// (due before this run's publishing began).
	Unexpected      map[string]int64 `json:"unexpected"`
	UnexpectedTotal int64            `json:"unexpected_total"`
	// Unmeasured are payloads without mqblast's measurement header (another publisher's).
	Unmeasured      int64 `json:"unmeasured"`
	Subscribed      int64 `json:"subscribed"`
	SubscribeFailed int64 `json:"subscribe_failed"`
	// LateSubscribed are the SUBACKs of subscriptions made after every publisher had
	// published a retained message on their topics (a plain run whose publishers retain):
	// each should have had retained messages (Retained).
	LateSubscribed int64 `json:"late_subscribed,omitempty"`
	// SubscribeRefused counts refused filters by SUBACK reason (the last failing filter's
	// reason for a SUBACK that refuses several).
	SubscribeRefused map[string]int64 `json:"subscribe_refused,omitempty"`
	// Inexact, when set, says that received, duplicated, lost, in_flight_at_end and
	// in_flight_lost count only what each part saw of some streams, and which: the pieces
	// the merged parts' joins left out over their bound (Join.Omitted).
	Inexact string `json:"inexact,omitempty"`
	// Silent are the publishers that lost every copy of their messages while their
	// connections stayed up, and whether the loss is confined to them (nil: no publisher
	// expected copies, or a document of an earlier writer).
	Silent *SilentPublishers `json:"silent_publishers,omitempty"`
}

// MarshalJSON writes m, with expected and lost as null when they are unknown.
func (m Messages) MarshalJSON() ([]byte, error) {
	type plain Messages // without this method
	if !m.ExpectedUnknown {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Expected *int64 `json:"expected"` // the outer fields hide plain's
		Lost     *int64 `json:"lost"`
	}{plain: plain(m)})
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
	// RefusedCopies are the expected copies of the messages the broker refused in the
	// interval (Messages.RefusedCopies): not to arrive.
	RefusedCopies int64 `json:"refused_copies,omitempty"`
	// ResponsesUnsent are the expected responses a responder of the run did not send in
	// the interval (Messages.ResponsesUnsent).
	ResponsesUnsent int64 `json:"responses_unsent,omitempty"`
	Received        int64 `json:"received"`
	Duplicated      int64 `json:"duplicated"`
	Unexpected      int64 `json:"unexpected"`
	Unmeasured      int64 `json:"unmeasured"`
	// Kernel are the counters that moved in the interval (broker.-prefixed: the broker's
	// namespace); BrokerCPUPercent and BrokerRSSBytes the broker process's, when sampled.
	Kernel           map[string]int64 `json:"kernel,omitempty"`
	BrokerCPUPercent float64          `json:"broker_cpu_percent,omitempty"`
	BrokerRSSBytes   int64            `json:"broker_rss_bytes,omitempty"`
	// BrokerCPUQuota is the CPU the broker process's cgroups allow it, in cores (their
	// smallest CPU quota: a container's CPU limit), when sampled by its pid and capped.
	BrokerCPUQuota float64 `json:"broker_cpu_quota,omitempty"`
	// BrokerHost is the broker's host and process as its endpoints said (--broker-metrics).
	BrokerHost   *IntervalBrokerHost `json:"broker_host,omitempty"`
	PublishPerS  float64             `json:"publish_per_s"`
	ReceivePerS  float64             `json:"receive_per_s"`
	LatencyUS    Percentiles         `json:"latency_us"`
	LatencyRawUS Percentiles         `json:"latency_raw_us"`
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
	BrokerSys  *IntervalBrokerSys  `json:"broker_sys,omitempty"` // the broker's $SYS (--broker-sys)
	// Stage is the index of the stage of a staged run the interval lies in (Result.Stages;
	// nil outside publishing and in runs without stages); Offered what the publishers'
	// schedule made due in it, published or not, and OfferedPerS that per second (staged
	// runs only).
	Stage       *int    `json:"stage,omitempty"`
	Offered     int64   `json:"offered,omitempty"`
	OfferedPerS float64 `json:"offered_per_s,omitempty"`
	// HeldUS is the publisher time held by the broker (flow control, back pressure, no
	// connection) in holds that ended in the interval, µs.
	HeldUS int64 `json:"held_us,omitempty"`
	// Groups are the interval's figures of each client group of a mixed run, in the order
	// of Result.Groups (nil: one group).
	Groups []GroupInterval `json:"groups,omitempty"`
	// Slot numbers the intervals of a run aligned to its start of publishing (a staged
	// run's): the interval ending Slot intervals after it. Worker processes number their
	// lines by it, so that every part's interval of one instant merges together. Not written.
	Slot int `json:"-"`
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
	CPUS            float64 `json:"cpu_s"`
	CPUPerConnectUS float64 `json:"cpu_per_connect_us"`
	MaxRSSBytes     int64   `json:"max_rss_bytes"`
	// RSSPerConnectionBytes is the growth of the client's anonymous resident memory over the
	// connect phase (after a collection at each end) per connection established: without
	// the binary's pages, which a process touches once whatever its connections and which
	// are one copy in the page cache for every worker process.
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
	CertMint       *Hist `json:"cert_mint,omitempty"`
	Latency        *Hist `json:"latency"`
	LatencyRaw     *Hist `json:"latency_raw"`
	ScheduleLag    *Hist `json:"schedule_lag"`
	// ReconnectLatency: absent without reconnects.
	ReconnectLatency *Hist `json:"reconnect_latency,omitempty"`
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

// stallMin is the publisher time held by the broker from which the run reports it stalled.
const stallMin = 100 * time.Millisecond

// stalled fills BrokerStalled from the run's holds and unsent causes.
func (r *Result) stalled(total *Snapshot) {
	b := &r.BrokerStalled
	*b = BrokerStalled{Publishers: total.HeldPublishers, Holds: total.Holds, HeldS: map[string]float64{}}
	for _, k := range sortedKeys(total.HeldUS) {
		b.HeldS[k] = (time.Duration(total.HeldUS[k]) * time.Microsecond).Seconds()
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
	b.Stalled = r.brokerHeld() // Judge may overrule it: see Verdicts
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

// SetTotal sets r's counts, histograms and the figures derived from them (totals by
// cause, percentiles, lost copies, broker_stalled, the errors of refused, failed and
// dropped connections) from total, the whole run's snapshot, and keeps total as r.Total.
// r's other errors (the run's own, such as subscribe_timeout) are kept.
func (r *Result) SetTotal(total *Snapshot) {
	r.Total = total
	f := r.pairs(total)
	for _, p := range f.counts {
		*p.doc = *p.snap
	}
	for _, p := range f.maps {
		*p.doc = *p.snap
	}
	for _, p := range f.hists {
		*p.doc = *p.snap
	}
	c := &r.Connections
	c.Failed = total.FailedTotal()
	c.ReconnectFailed = total.ReconnectFailedTotal()
	c.Dropped = total.DroppedTotal()
	c.ConnectLatencyUS = total.ConnectLatency.Summary()
	c.PingRTTUS = total.PingRTT.Summary()
	c.TLSHandshakeUS, c.TLSHandshakeCPUUSPerOp, c.WSUpgradeUS = nil, 0, nil
	if h := total.TLSHandshake; h.Count() > 0 {
		p := h.Summary()
		c.TLSHandshakeUS = &p
		if total.TLSHandshakes > 0 {
			c.TLSHandshakeCPUUSPerOp = float64(total.TLSCPUUS) / float64(total.TLSHandshakes)
		}
	} else {
		r.Histograms.TLSHandshake = nil
	}
	if h := total.WSUpgrade; h.Count() > 0 {
		p := h.Summary()
		c.WSUpgradeUS = &p
	} else {
		r.Histograms.WSUpgrade = nil
	}
	c.CertMintUS, c.CertMintCPUUSPerOp = nil, 0
	if h := total.CertMint; h.Count() > 0 {
		p := h.Summary()
		c.CertMintUS = &p
		if total.CertsMinted > 0 {
			c.CertMintCPUUSPerOp = float64(total.CertMintCPUUS) / float64(total.CertsMinted)
		}
	} else {
		r.Histograms.CertMint = nil
	}
	c.ReconnectLatencyUS = nil
	if h := total.ReconnectLatency; h.Count() > 0 {
		p := h.Summary()
		c.ReconnectLatencyUS = &p
	} else {
		r.Histograms.ReconnectLatency = nil
	}
	m := &r.Messages
	m.UnsentTotal = total.UnsentTotal()
	m.UnexpectedTotal = total.UnexpectedTotal()
	m.RefusedTotal = total.PublishRefusedTotal()
	m.Unacknowledged = total.UnackedTotal()
	m.Lost, m.OwedAtEnd = 0, 0
	if !m.ExpectedUnknown {
		rest := max(total.Expected-total.Received-total.InFlightAtEnd-total.InFlightLost-total.RefusedCopies-total.ResponsesUnsent, 0)
		if total.OwedArrivalPerS > 0 || r.owing { // still arriving when the drain ended: owed, not lost
			m.OwedAtEnd = rest
		} else {
			m.Lost = rest
		}
	}
	m.NotSharedCopies = 0
	if r.notShared(total) {
		m.NotSharedCopies, m.Lost = m.Lost, 0
	}
	m.Silent.confine(total.Received, m.Lost)
	if total.FirstPublish > 0 {
		r.FirstPublishAt = time.Unix(0, total.FirstPublish).UTC()
	}
	r.stalled(total)
	r.behaviour(total)
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
	add("reconnect_failed:", total.ReconnectFailed)
	r.noAcknowledgement(total)
	r.setGroups(total)
}

// figures are the fields of a document paired with the snapshot's fields they show.
type figures struct {
	counts []pair[int64]
	maps   []pair[map[string]int64]
	hists  []pair[*Hist]
}

// pair is a figure of the document and the snapshot's field it comes from.
type pair[T any] struct{ doc, snap *T }

// pairs returns the counters, maps and histograms of s, each with the field of r that
// shows it: SetTotal copies them into r, snapshot reads them back. The few figures the
// document keeps in another form (TLS CPU per handshake, held seconds, the first
// publish's time, the examples of errors) are converted by each; the measure window's
// counts and an interval's CPU and RSS are not in the document.
func (r *Result) pairs(s *Snapshot) (f figures) {
	c, m, h := &r.Connections, &r.Messages, &r.Histograms
	f.counts = []pair[int64]{
		{&c.Established, &s.Connected}, {&c.Reconnected, &s.Reconnected}, {&c.Pings, &s.Pings},
		{&c.TLSHandshakes, &s.TLSHandshakes}, {&c.TLSResumed, &s.TLSResumed}, {&c.CertsMinted, &s.CertsMinted},
		{&m.Scheduled, &s.Scheduled}, {&m.Published, &s.Published}, {&m.PublishedQoS12, &s.PublishedQoS12}, {&m.Acked, &s.Acked}, {&m.RefusedCopies, &s.RefusedCopies}, {&m.ResponsesUnsent, &s.ResponsesUnsent},
		{&m.Expected, &s.Expected}, {&m.Received, &s.Received}, {&m.InFlightAtEnd, &s.InFlightAtEnd}, {&m.OwedArrivalPerS, &s.OwedArrivalPerS},
		{&m.InFlightDropped, &s.InFlightDropped}, {&m.InFlightLost, &s.InFlightLost}, {&m.DeliveredOnReturn, &s.DeliveredOnReturn},
		{&m.Duplicated, &s.Duplicated}, {&m.Redelivered, &s.Redelivered}, {&m.Retained, &s.Retained}, {&m.RetainedAgain, &s.RetainedAgain}, {&m.OutOfOrder, &s.OutOfOrder}, {&m.Unmeasured, &s.Unmeasured},
		{&m.Subscribed, &s.Subscribed}, {&m.SubscribeFailed, &s.SubscribeFailed}, {&m.LateSubscribed, &s.LateSubscribed},
		{&r.BrokerStalled.Publishers, &s.HeldPublishers},
	}
	f.maps = []pair[map[string]int64]{
		{&c.Refused, &s.Refused}, {&c.FailedBy, &s.Failed}, {&c.DroppedBy, &s.Dropped},
		{&m.Unsent, &s.Unsent}, {&m.Unexpected, &s.Unexpected}, {&m.SubscribeRefused, &s.SubscribeRefused},
		{&m.Refused, &s.PublishRefused}, {&m.UnacknowledgedBy, &s.Unacked}, {&c.ReconnectFailedBy, &s.ReconnectFailed},
		{&r.BrokerStalled.Holds, &s.Holds}, {&r.Transport.RecordLayer, &s.RecordLayer},
	}
	f.hists = []pair[*Hist]{
		{&h.ConnectLatency, &s.ConnectLatency}, {&h.PingRTT, &s.PingRTT}, {&h.TLSHandshake, &s.TLSHandshake},
		{&h.WSUpgrade, &s.WSUpgrade}, {&h.Latency, &s.Latency}, {&h.LatencyRaw, &s.LatencyRaw},
		{&h.ScheduleLag, &s.ScheduleLag}, {&h.ReconnectLatency, &s.ReconnectLatency}, {&h.CertMint, &s.CertMint},
	}
	return f
}

// snapshot returns r.Total, or for a document read back (which does not carry it) the
// snapshot its fields show: the same counts, maps and histograms (shared with r, not
// copied), and the converted figures. The measure window's counts are not in the
// document (its rates are); they are left zero.
func (r *Result) snapshot() *Snapshot {
	if r.Total != nil {
		return r.Total
	}
	s := &Snapshot{Examples: map[string]string{}}
	f := r.pairs(s)
	for _, p := range f.counts {
		*p.snap = *p.doc
	}
	for _, p := range f.maps {
		*p.snap = *p.doc
	}
	for _, p := range f.hists {
		*p.snap = *p.doc
	}
	c := &r.Connections
	s.TLSCPUUS = int64(c.TLSHandshakeCPUUSPerOp*float64(c.TLSHandshakes) + 0.5)
	s.CertMintCPUUS = int64(c.CertMintCPUUSPerOp*float64(c.CertsMinted) + 0.5)
	if held := r.BrokerStalled.HeldS; len(held) > 0 {
		s.HeldUS = make(map[string]int64, len(held))
		for k, v := range held {
			s.HeldUS[k] = int64(math.Round(v * 1e6))
		}
	}
	if !r.FirstPublishAt.IsZero() {
		s.FirstPublish = r.FirstPublishAt.UnixNano()
	}
	for _, e := range r.Errors {
		if _, ok := s.Examples[e.Kind]; !ok {
			s.Examples[e.Kind] = e.Example
		}
	}
	r.behaviourSnapshot(s)
	for i := range r.Groups {
		g := r.Groups[i].Snapshot
		if g == nil {
			g = NewGroupSnapshot()
		}
		s.Groups = append(s.Groups, g)
	}
	return s
}

// derivedError reports whether an error kind is one SetTotal derives from the counts
// (refused, failed and dropped connections, failed reconnects, a broker that acknowledged
// nothing) rather than one the run added.
func derivedError(kind string) bool {
	return strings.HasPrefix(kind, "refused:") || strings.HasPrefix(kind, "failed:") || strings.HasPrefix(kind, "dropped:") ||
		strings.HasPrefix(kind, "reconnect_failed:") || kind == ErrorNoAcknowledgement
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
