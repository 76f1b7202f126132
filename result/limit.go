package result

// Limit is the answer of a search for the highest rate a broker sustains within an SLO
// (mqblast limit): the publish rate was stepped up geometrically from a start rate until a
// step failed, then bisected between the last step that held and the first that failed.
// Rates are totals, every publisher together, in messages per second offered; the
// per-client figures beside them are what `--set parameters.publish_rate=` takes to redo a
// step as a plain run.
type Limit struct {
	// Found is false when no step held (even the start rate failed the SLO), or none ran.
	Found bool `json:"found"`
	// Sustained is the highest rate whose step held; FirstFailed the lowest whose step
	// failed (0: none failed up to MaxRate or the time allowed).
	// Rates are connections per second when the search stepped the connect rate (Unit).
	Sustained            float64 `json:"sustained"`
	SustainedPerClient   float64 `json:"sustained_per_client"`
	FirstFailed          float64 `json:"first_failed"`
	FirstFailedPerClient float64 `json:"first_failed_per_client"`
	// Precision is the precision asked for (0.05: the answer within 5 %); Reached the one
	// the search reached (FirstFailed/Sustained - 1), 0 when nothing failed.
	Precision float64 `json:"precision"`
	Reached   float64 `json:"reached"`
	// Publishers is how many publishers share the rate; Vary the scenario field varied.
	Publishers int    `json:"publishers"`
	Vary       string `json:"vary"`
	// Kind is what the search found: "publish-rate", "connect-rate" (Vary
	// parameters.connection_rate) or "connections" (a count: the connections the broker
	// holds; its rates are counts of connections open at once).
	Kind string `json:"kind"`
	// BrokerRSSPerConnBytes and BrokerHostMemPerConnBytes are what each connection held
	// cost the broker (a connection-count search): the slope of the broker process's
	// resident set (its pid, or its host's process endpoint), and of its host's memory in use
	// (node_exporter: the process's and the kernel's, socket buffers among it), over the
	// connections held at each step that held, from the run's start with none; 0 when not
	// sampled. BrokerKernelPerConnBytes is the second less the first (the host's only).
	BrokerRSSPerConnBytes     float64 `json:"broker_rss_per_connection_bytes,omitempty"`
	BrokerHostMemPerConnBytes float64 `json:"broker_host_mem_per_connection_bytes,omitempty"`
	BrokerKernelPerConnBytes  float64 `json:"broker_kernel_per_connection_bytes,omitempty"`
	// SLO are the expressions each step was held to; FailedSLO those the first failed
	// step broke (with "broker stalled" when it failed by the broker holding publishers).
	SLO       []string `json:"slo"`
	FailedSLO []string `json:"failed_slo,omitempty"`
	// LimitedBy is who set the limit, from the first failed step's evidence: "broker",
	// "client" or "host"; LowerBound says the figure is a lower bound for the broker (the
	// client or the host set it), Fix what to change then.
	LimitedBy  string   `json:"limited_by,omitempty"`
	LowerBound bool     `json:"lower_bound,omitempty"`
	Evidence   []string `json:"evidence,omitempty"`
	Fix        string   `json:"fix,omitempty"`
	// Ended says why the search stopped: "precision" (reached), "max_rate" (every step up
	// to it held), "max_duration", "interrupted", "start_failed", "clients_exhausted" (a
	// connect-rate search had too few clients left for its next step), "broker_gone" (a
	// step ended with no connection open: the broker went away).
	Ended string `json:"ended"`
	// Confirmed says the answer was held once more at the end of the search and held
	// (--confirm); false when it was not: confirm off, or the search ended first
	// (max_duration, max_rate, interrupted, broker_gone, ...).
	Confirmed bool        `json:"confirmed"`
	Steps     []LimitStep `json:"steps"`
}

// VaryConnectionRate is the rate field of a search that steps a Connections scenario's
// connect rate: its rates are connections per second of the whole run, each step's
// per_client the same (connection_rate is the whole run's), and each step is judged by its
// connect figures (connections, connect_latency_us).
const VaryConnectionRate = "parameters.connection_rate"

// The kinds of search (Limit.Kind).
const (
	KindPublishRate = "publish-rate"
	KindConnectRate = "connect-rate"
	KindConnections = "connections"
)

// Connect reports whether the search stepped the connect rate.
func (l *Limit) Connect() bool { return l.Vary == VaryConnectionRate || l.Kind == KindConnectRate }

// Count reports whether the search grew the connections held (Kind "connections").
func (l *Limit) Count() bool { return l.Kind == KindConnections }

// Unit is the unit of the search's rates: "msg/s", "connections/s" or "connections".
func (l *Limit) Unit() string {
	if l.Count() {
		return "connections"
	}
	if l.Connect() {
		return "connections/s"
	}
	return "msg/s"
}

// LimitStep is one probe of the search: a rate held for a step, its window's summary (after
// the settle time; loss and unsent over the whole step and the pause after it, when the
// schedule was idle so that what was in flight arrived), and whether it held.
type LimitStep struct {
	Index     int     `json:"index"`
	Rate      float64 `json:"rate"`
	PerClient float64 `json:"per_client"`
	OK        bool    `json:"ok"`
	// Failed are the expressions it broke, and "broker stalled" when the broker held it.
	Failed []string `json:"failed,omitempty"`
	// Overruled marks a step the search did not go by (--confirm): a failed step whose
	// repeat at the same rate held, or a step that held at a rate where two steps failed
	// (the answer's check found it not sustained).
	Overruled bool `json:"overruled,omitempty"`
	// BrokerGone marks a step that ended with no connection open: the broker went away (it
	// was stopped, or crashed) and the step measured nothing of it. The search stops there.
	BrokerGone bool `json:"broker_gone,omitempty"`
	// BrokerCPUPercent is the broker process's CPU over the step's window (100 = one
	// core: its pid's, else its host's process endpoint's), BrokerHostCPUPercent its
	// host's (100 = every CPU), ClientCPUPercent the client's, when known (0: not sampled).
	BrokerCPUPercent float64 `json:"broker_cpu_percent,omitempty"`
	// BrokerCPUQuota is the smallest CPU quota of the broker process's cgroups over the
	// step, in cores (0: none, or not sampled by its pid): at it, the broker is at its limit.
	BrokerCPUQuota       float64 `json:"broker_cpu_quota,omitempty"`
	BrokerHostCPUPercent float64 `json:"broker_host_cpu_percent,omitempty"`
	ClientCPUPercent     float64 `json:"client_cpu_percent,omitempty"`
	// RunDelayShare is the share of the step's time (and its pause's) the client's threads
	// waited for a CPU (of one core's time).
	RunDelayShare float64 `json:"run_delay_share,omitempty"`
	// Held is the connections open at the step's end (a connection-count search: its
	// rate is the count it asked for); BrokerRSSBytes the broker process's resident set
	// and BrokerHostMemUsedBytes its host's memory in use over its hold, when sampled.
	Held                   int64   `json:"held,omitempty"`
	BrokerRSSBytes         float64 `json:"broker_rss_bytes,omitempty"`
	BrokerHostMemUsedBytes float64 `json:"broker_host_mem_used_bytes,omitempty"`
	StageSummary
}
