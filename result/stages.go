package result

import (
	"fmt"
	"math"
	"reflect"
	"time"
)

// Stage is one stage of a staged run (the scenario's parameters.stages) with its figures: its
// definition, where it lies in the run, and the summary of the intervals that cover it.
type Stage struct {
	Index int `json:"index"`
	// PublishRate is the rate of each publisher the stage reaches (msgs/s), Ramp whether it
	// reaches it linearly over the stage from the previous stage's rate (else in a step at
	// its start).
	PublishRate float64 `json:"publish_rate"`
	Ramp        bool    `json:"ramp,omitempty"`
	// StartS and DurationS place the stage from the start of publishing, in seconds.
	StartS    float64 `json:"start_s"`
	DurationS float64 `json:"duration_s"`
	// Source says who made the stage while the run went on: "api" for a change through
	// the live page's API (a rate, a pause at publish_rate 0, a resume); absent for a stage
	// of the plan (parameters.stages, or the plan's one rate of a run that could be steered).
	Source string `json:"source,omitempty"`
	StageSummary
}

// StageSummary is the summary of a window of a run's intervals (Window): a stage's, or a
// step's of a search for the broker's limit. Its fields are named as the result document's,
// so that a threshold expression reads the same over either (EvaluateThresholds).
type StageSummary struct {
	// FromS and ToS are the window in the intervals' time (t_s: seconds into the run);
	// Intervals the intervals whose middle lies in it, over SpanS seconds.
	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	Intervals int     `json:"intervals"`
	SpanS     float64 `json:"span_s"`
	// OfferedPerS is what the schedule made due per second over the window, every
	// publisher together; Throughput what was written and what arrived.
	OfferedPerS   float64       `json:"offered_per_s"`
	Throughput    Throughput    `json:"throughput"`
	Messages      StageMessages `json:"messages"`
	LatencyUS     Percentiles   `json:"latency_us"`     // from the due time, of the copies that arrived in the window
	LatencyRawUS  Percentiles   `json:"latency_raw_us"` // from the write
	ScheduleLagUS Percentiles   `json:"schedule_lag_us"`
	Client        StageClient   `json:"client"`
	BrokerStalled StageStalled  `json:"broker_stalled"`
	// Connections are the window's first connects and their verdicts, ConnectLatencyUS the
	// connect latency of those that connected in it (a Connections run's, or a search
	// stepping the connection rate).
	Connections      StageConnections `json:"connections"`
	ConnectLatencyUS Percentiles      `json:"connect_latency_us"`
	// BrokerDropped is what the broker said it dropped by its own policy in the window
	// ($SYS publish/messages/dropped with --broker-sys: a subscriber's queue full), from
	// its per-second rates: as exact as its refresh (sys_interval) is short.
	BrokerDropped int64 `json:"broker_dropped"`
	// Broker is the broker's process and host over the window, when sampled (its pid, a
	// local broker, --broker-metrics): nil otherwise.
	Broker *StageBroker `json:"broker,omitempty"`
	// Thresholds are the verdicts of the expressions evaluated over this summary.
	Thresholds []Threshold `json:"thresholds,omitempty"`
}

// StageBroker is the broker's process and host over a window: its process's CPU (100 =
// one core) averaged and its resident set at its peak, from its pid or its host's process
// endpoint; its host's CPU (100 = every CPU) averaged, its memory in use at its peak and
// available at its least (node_exporter). A figure not sampled is 0.
type StageBroker struct {
	CPUPercent            float64 `json:"cpu_percent"`
	RSSBytes              float64 `json:"rss_bytes"`
	HostCPUPercent        float64 `json:"host_cpu_percent"`
	HostMemUsedBytes      float64 `json:"host_mem_used_bytes"`
	HostMemAvailableBytes float64 `json:"host_mem_available_bytes"`
}

// add takes one interval's broker figures into b, counting the CPU samples in n (process,
// host) for the averages.
func (b *StageBroker) add(iv *Interval, n *[2]float64) bool {
	h, any := iv.BrokerHost, false
	switch {
	case iv.BrokerCPUPercent > 0 || iv.BrokerRSSBytes > 0:
		b.CPUPercent, n[0] = b.CPUPercent+iv.BrokerCPUPercent, n[0]+1
		b.RSSBytes, any = max(b.RSSBytes, float64(iv.BrokerRSSBytes)), true
	case h != nil && h.HasProcess:
		b.CPUPercent, n[0] = b.CPUPercent+h.ProcessCPUPercent, n[0]+1
		b.RSSBytes, any = max(b.RSSBytes, h.ProcessRSSBytes), true
	}
	if h != nil && h.HasHost {
		b.HostCPUPercent, n[1] = b.HostCPUPercent+h.CPUPercent, n[1]+1
		b.HostMemUsedBytes = max(b.HostMemUsedBytes, h.MemUsedBytes)
		if b.HostMemAvailableBytes == 0 || h.MemAvailableBytes < b.HostMemAvailableBytes {
			b.HostMemAvailableBytes = h.MemAvailableBytes
		}
		any = true
	}
	return any
}

// StageMessages are a window's message counts, the sums of its intervals': what was written
// in the window and what arrived in it. Lost is expected minus received over the window
// (at least 0): copies that were in flight at either edge of the window count too, so it is
// exact only for a window that ends with the run; the run's own messages.lost is exact.
// Unsent is what the intervals report, and publishers report most of it at the end of
// publishing: it falls in the last stage.
type StageMessages struct {
	Offered         int64 `json:"offered"`
	Published       int64 `json:"published"`
	Expected        int64 `json:"expected"`
	RefusedCopies   int64 `json:"refused_copies,omitempty"`   // expected copies of messages the broker refused
	ResponsesUnsent int64 `json:"responses_unsent,omitempty"` // expected responses a responder of the run did not send
	Received        int64 `json:"received"`
	Lost            int64 `json:"lost"`
	UnsentTotal     int64 `json:"unsent_total"`
	Duplicated      int64 `json:"duplicated"`
	UnexpectedTotal int64 `json:"unexpected_total"`
}

// StageConnections are a window's connection counts, the sums of its intervals': the
// connections established in it (connected), the connect attempts that failed or were
// refused in it (failed), and the rate of the first over the window.
type StageConnections struct {
	Connected   int64   `json:"connected"`
	Failed      int64   `json:"failed"`
	ConnectPerS float64 `json:"connect_per_s"`
}

// StageClient is the client's verdict over a window: saturated when it built messages late
// (schedule lag p99 over StageLagLimit) while the broker did not hold the publishers back
// (Judge: the window's verdicts are one judgement).
type StageClient struct {
	Saturated          bool     `json:"saturated"`
	SaturationEvidence []string `json:"saturation_evidence,omitempty"`
}

// StageStalled is the broker's verdict over a window: stalled when it held the publishers
// (flow control, a socket it did not read, no connection) for StageStallMin of publisher
// time or more, or connections dropped in it.
type StageStalled struct {
	Stalled  bool     `json:"stalled"`
	HeldS    float64  `json:"held_s"` // publisher-seconds held, holds that ended in the window
	Dropped  int64    `json:"dropped"`
	Evidence []string `json:"evidence,omitempty"`
}

// Limits of a window's verdicts: the run's own.
const (
	StageLagLimit = 10 * time.Millisecond
	StageStallMin = stallMin
)

// Window summarises the intervals of r whose middle lies in [from, to) seconds into the run
// (t_s): their counts added, rates over their span, percentiles from their histograms merged
// (an interval without histograms adds its counts only), the verdicts. An interval spans
// from the previous one's t_s (0 for the first) to its own.
func Window(r *Result, from, to float64) StageSummary {
	return summarize(r, from, to, func(_ *Interval, mid float64) bool { return mid >= from && mid < to })
}

// summarize summarises the intervals of r that pick takes (given each with its middle, in
// t_s) as the window [from, to).
func summarize(r *Result, from, to float64, pick func(iv *Interval, mid float64) bool) StageSummary {
	s := StageSummary{FromS: from, ToS: to}
	lat, raw, lag, conn := NewHist(), NewHist(), NewHist(), NewHist()
	var heldUS int64
	var broker StageBroker
	var brokerN [2]float64
	sampled := false
	dropped := 0.0
	prev := 0.0
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		start := prev
		prev = iv.TS
		if !pick(iv, (start+iv.TS)/2) {
			continue
		}
		s.Intervals++
		s.SpanS += iv.TS - start
		m := &s.Messages
		m.Offered += iv.Offered
		m.Published += iv.Published
		m.Expected += iv.Expected
		m.RefusedCopies += iv.RefusedCopies
		m.ResponsesUnsent += iv.ResponsesUnsent
		m.Received += iv.Received
		m.UnsentTotal += iv.Unsent
		m.Duplicated += iv.Duplicated
		m.UnexpectedTotal += iv.Unexpected
		s.BrokerStalled.Dropped += iv.Dropped
		s.Connections.Connected += iv.Connected
		s.Connections.Failed += iv.Failed
		heldUS += iv.HeldUS
		sampled = broker.add(iv, &brokerN) || sampled
		if b := iv.BrokerSys; b != nil {
			dropped += b.PerS[SysPublishDropped] * (iv.TS - start)
		}
		if h := iv.Histograms; h != nil {
			lat.Merge(h.Latency)
			raw.Merge(h.LatencyRaw)
			lag.Merge(h.ScheduleLag)
			conn.Merge(h.ConnectLatency)
		}
	}
	s.BrokerDropped = int64(math.Round(dropped))
	if sampled {
		if brokerN[0] > 0 {
			broker.CPUPercent /= brokerN[0]
		}
		if brokerN[1] > 0 {
			broker.HostCPUPercent /= brokerN[1]
		}
		s.Broker = &broker
	}
	m := &s.Messages
	m.Lost = max(m.Expected-m.Received-m.RefusedCopies-m.ResponsesUnsent, 0)
	if s.SpanS > 0 {
		s.OfferedPerS = float64(m.Offered) / s.SpanS
		s.Throughput = Throughput{PublishPerS: float64(m.Published) / s.SpanS, ReceivePerS: float64(m.Received) / s.SpanS,
			WindowS: s.SpanS}
		s.Connections.ConnectPerS = float64(s.Connections.Connected) / s.SpanS
	}
	s.LatencyUS, s.LatencyRawUS, s.ScheduleLagUS, s.ConnectLatencyUS = lat.Summary(), raw.Summary(), lag.Summary(), conn.Summary()
	var e Evidence // the window's verdicts are one judgement, as the run's
	if p99 := time.Duration(s.ScheduleLagUS.P99) * time.Microsecond; p99 > StageLagLimit {
		e.Late = fmt.Sprintf("schedule lag p99 %v > %v", p99, StageLagLimit)
	}
	b := &s.BrokerStalled
	held := time.Duration(heldUS) * time.Microsecond
	b.HeldS = held.Seconds()
	if held >= StageStallMin {
		b.Stalled = true
		b.Evidence = append(b.Evidence, fmt.Sprintf("publishers held for %v in all (flow control, back pressure or no connection)",
			held.Round(time.Millisecond)))
	}
	if b.Dropped > 0 {
		b.Stalled = true
		b.Evidence = append(b.Evidence, fmt.Sprintf("%d connections dropped", b.Dropped))
	}
	if b.Stalled {
		e.Stalled = b.Evidence
	}
	if v := Judge(e); v.Saturated {
		s.Client.Saturated = true
		s.Client.SaturationEvidence = []string{e.Late + ": the client built messages late"}
	}
	return s
}

// SummarizeStages computes every stage's summary anew from r's intervals, keeping each
// stage's definition and thresholds: the intervals the run marked as the stage's (their
// stage), less those whose middle lies before the stage's from_s (a warm-up in the first
// stage). A merge calls it on the added intervals.
func (r *Result) SummarizeStages() {
	for i := range r.Stages {
		st := &r.Stages[i]
		th := st.Thresholds
		from := st.FromS
		st.StageSummary = summarize(r, st.FromS, st.ToS, func(iv *Interval, mid float64) bool {
			return iv.Stage != nil && *iv.Stage == i && mid >= from
		})
		st.Thresholds = th
	}
}

// CheckStageThresholdPaths parses every expression and checks that its path names a numeric
// (or boolean) field of a stage summary (StageSummary): the fields a threshold can read per
// stage or per step.
func CheckStageThresholdPaths(exprs []string) error {
	_, err := parseThresholdsOf(exprs, reflect.TypeFor[StageSummary](), "a stage's summary")
	return err
}

// EvaluateThresholds evaluates every expression over the summary as over a result document
// (see Result.EvaluateThresholds) and sets s.Thresholds, one entry per expression in order.
// Paths are those of StageSummary's JSON form: latency_us.p99, messages.lost,
// messages.unsent_total, throughput.receive_per_s, offered_per_s, client.saturated,
// broker_stalled.stalled and so on. It returns an error, and leaves s.Thresholds unchanged,
// when an expression is malformed or names no numeric field of a summary.
func (s *StageSummary) EvaluateThresholds(exprs []string) error {
	parsed, err := parseThresholdsOf(exprs, reflect.TypeFor[StageSummary](), "a stage's summary")
	if err != nil {
		return err
	}
	saved := s.Thresholds
	s.Thresholds = nil
	out, err := evaluate(s, parsed)
	s.Thresholds = saved
	if err != nil {
		return err
	}
	s.Thresholds = out
	return nil
}

// StageAt returns the index of the stage of r whose window holds t seconds into the run
// (t_s), or -1.
func (r *Result) StageAt(t float64) int {
	for i, st := range r.Stages {
		if t >= st.FromS && t < st.ToS {
			return i
		}
	}
	return -1
}
