package metrics

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mqblast/mqblast/result"
)

// Bounds are the latency histograms' bucket upper bounds, in seconds (+Inf is implied).
var Bounds = []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10, 30, 60}

// boundsUS are Bounds in µs, the histograms' unit.
var boundsUS = func() []int64 {
	us := make([]int64, len(Bounds))
	for i, b := range Bounds {
		us[i] = int64(math.Round(b * 1e6))
	}
	return us
}()

// The live verdicts' rules, as the run's (client.saturated) and the result's (broker_stalled).
const (
	saturationLagUS = 10_000 // schedule lag p99 (µs) above which the client is late by itself
	saturationCPU   = 0.9    // share of the cores' time past which the client is saturated
	stallHeldUS     = 100_000
)

// buckets is a latency histogram in fixed buckets: counts[i] values in (bound[i-1],
// bound[i]], counts[len(Bounds)] above the last bound.
type buckets struct {
	counts []uint64
	n      uint64
	sumUS  float64
}

func newBuckets() *buckets { return &buckets{counts: make([]uint64, len(Bounds)+1)} }

// add adds h's values.
func (b *buckets) add(h *hdrhistogram.Histogram) {
	if h == nil {
		return
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i, _ := slices.BinarySearch(boundsUS, bar.From)
		b.counts[i] += uint64(bar.Count)
	}
	b.n += uint64(h.TotalCount())
	b.sumUS += h.Mean() * float64(h.TotalCount())
}

// cumulative returns the buckets as Prometheus wants them: bound (s) -> values at or below.
func (b *buckets) cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(Bounds))
	var c uint64
	for i, bound := range Bounds {
		c += b.counts[i]
		m[bound] = c
	}
	return m
}

// Live is the collector of one run's live figures. Interval and Finish may be called
// while it is scraped: it is safe for concurrent use.
type Live struct {
	mu         sync.Mutex
	target     int
	cores      int
	total      *result.Snapshot // the intervals so far, added
	last       result.Interval  // the latest interval
	intervals  int
	brokerCPUS float64 // the broker process's CPU seconds, from its intervals' percent
	hists      [3]*buckets
	final      *result.Result
	soak       *result.Soak       // a fixed-rate run's soak so far (Soak), until final
	descs      []*prometheus.Desc // defs' then hdefs'
	groups     []string           // a mixed run's group names (SetGroups)
	step       *limitStep         // the limit search's current step (Step; nil: none)
}

// limitStep is a limit search's step: its index (the result's limit.steps[].index) and rate.
type limitStep struct {
	index int
	rate  float64
}

// Step says that a limit search's step index (from 0, as the result's limit.steps[].index)
// starts, at rate (messages or connections per second, or connections for a count
// search): mqblast_limit_step names it until the next one.
func (l *Live) Step(index int, rate float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step = &limitStep{index: index, rate: rate}
}

// SetGroups names the client groups of a mixed run, in the order of its snapshots' Groups:
// the group_ series are labelled with them. Call it before the first Interval.
func (l *Live) SetGroups(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groups = names
}

// byGroup returns one sample per group, labelled with its name: f of the group's figures
// so far.
func byGroup(l *Live, f func(g *result.Snapshot) int64) []sample {
	var out []sample
	for i, name := range l.groups {
		v := int64(0)
		if i < len(l.total.Groups) && l.total.Groups[i] != nil {
			v = f(l.total.Groups[i])
		}
		out = append(out, sample{v: float64(v), labels: []string{name}})
	}
	return out
}

// The histograms, in Live.hists order.
const (
	hLatency = iota
	hLatencyRaw
	hConnect
)

// NewLive returns a collector for a run of target clients on a host of cores cores.
func NewLive(target, cores int) *Live {
	l := &Live{target: target, cores: max(cores, 1), total: result.NewSnapshot(),
		hists: [3]*buckets{newBuckets(), newBuckets(), newBuckets()}}
	for _, d := range defs {
		l.descs = append(l.descs, prometheus.NewDesc(d.name, d.help, d.labels, nil))
	}
	for _, d := range hdefs {
		l.descs = append(l.descs, prometheus.NewDesc(d.name, d.help, nil, nil))
	}
	return l
}

// Interval adds one interval: iv as the run reported it, s its snapshot (read in place
// during the call, not kept). It returns an error when a histogram of s cannot be read (a
// packed one that does not decode: its counts are then missing from the latency
// histograms; the counters still count).
func (l *Live) Interval(iv result.Interval, s *result.Snapshot) error {
	// Read s's histograms in place (not copied, not re-encoded), outside the lock: a scrape
	// need not wait for it.
	var hs [3]*hdrhistogram.Histogram
	for i, h := range [3]*result.Hist{hLatency: s.Latency, hLatencyRaw: s.LatencyRaw, hConnect: s.ConnectLatency} {
		hs[i] = h.HDR()
	}
	var err error
	for i, h := range [3]*result.Hist{s.Latency, s.LatencyRaw, s.ConnectLatency} {
		if hs[i] == nil && h.Count() > 0 {
			err = errors.New("metrics: an interval histogram could not be read")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if iv.BrokerCPUPercent > 0 {
		l.brokerCPUS += iv.BrokerCPUPercent / 100 * max(iv.TS-l.last.TS, 0)
	}
	l.total.Add(s)
	l.last = iv
	l.intervals++
	for i, h := range hs {
		l.hists[i].add(h)
	}
	return err
}

// Finish takes the figures the run knows only at its end from its result r: lost
// messages, the saturation and stall verdicts; mqblast_run_finished turns 1.
func (l *Live) Finish(r *result.Result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.final = r
}

// Soak takes the soak so far of a run that soaks (--sustain), each time a window of it
// ends: the soak series give its figures until the run's result has the whole soak. s is
// kept: the caller does not change it.
func (l *Live) Soak(s *result.Soak) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.soak = s
}

// soakSoFar is the run's soak: the result's once the run has ended, else the windows
// ended so far (nil: none).
func (l *Live) soakSoFar() *result.Soak {
	if l.final != nil {
		return l.final.Soak
	}
	return l.soak
}

// sample is one value of a metric, with its label values.
type sample struct {
	v      float64
	labels []string
}

func one(v float64) []sample { return []sample{{v: v}} }
func one64(v int64) []sample { return one(float64(v)) }
func flag(b bool) []sample {
	if b {
		return one(1)
	}
	return one(0)
}

// byLabel returns one sample per key of m (sorted), labelled with the key.
func byLabel(ms ...map[string]int64) []sample {
	var out []sample
	for _, m := range ms {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, sample{v: float64(m[k]), labels: []string{k}})
		}
	}
	return out
}

// prefixed returns m with every key prefixed.
func prefixed(prefix string, m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// def is one metric: name, help, kind, label names and its samples (l is locked).
type def struct {
	name   string
	help   string
	kind   prometheus.ValueType
	labels []string
	get    func(l *Live) []sample
}

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// defs are the counters and gauges, in exposition order (docs/outputs.md lists them).
var defs = []def{
	{"mqblast_run_intervals_total", "Intervals reported so far.", counter, nil,
		func(l *Live) []sample { return one(float64(l.intervals)) }},
	{"mqblast_run_elapsed_seconds", "Seconds from the run's start to the latest interval's end.", gauge, nil,
		func(l *Live) []sample { return one(l.last.TS) }},
	{"mqblast_run_finished", "1 once the run has ended: the end-of-run figures (lost, the verdicts) are final.", gauge, nil,
		func(l *Live) []sample { return flag(l.final != nil) }},
	{"mqblast_connections_target", "Clients the run connects.", gauge, nil,
		func(l *Live) []sample { return one(float64(l.target)) }},
	{"mqblast_connections_established", "Sessions open at the latest interval's end.", gauge, nil,
		func(l *Live) []sample { return one64(l.last.Established) }},
	{"mqblast_connections_connected_total", "Sessions established (CONNACK accepted), reconnects excluded.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Connected) }},
	{"mqblast_connections_reconnected_total", "Sessions established again after a drop.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Reconnected) }},
	{"mqblast_connections_failed_total", "Clients that never connected, by cause (refused:REASON for a CONNACK refusal).", counter, []string{"cause"},
		func(l *Live) []sample { return byLabel(l.total.Failed, prefixed("refused:", l.total.Refused)) }},
	{"mqblast_connections_reconnect_failed_total", "Reconnect attempts that failed (attempts, not clients), by cause (refused:REASON for a CONNACK refusal).", counter, []string{"cause"},
		func(l *Live) []sample { return byLabel(l.total.ReconnectFailed) }},
	{"mqblast_connections_dropped_total", "Established connections lost, by cause.", counter, []string{"cause"},
		func(l *Live) []sample { return byLabel(l.total.Dropped) }},
	{"mqblast_messages_published_total", "Messages written to their sockets.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Published) }},
	{"mqblast_messages_acked_total", "Published QoS 1/2 messages the broker acknowledged.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Acked) }},
	{"mqblast_messages_unsent_total", "Scheduled messages never written, by cause.", counter, []string{"cause"},
		func(l *Live) []sample { return byLabel(l.total.Unsent) }},
	{"mqblast_messages_expected_total", "Copies the broker should deliver of what was published.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Expected) }},
	{"mqblast_messages_received_total", "Distinct copies that arrived on expected streams.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Received) }},
	{"mqblast_messages_missing", "Expected copies not (yet) received: expected minus received so far.", gauge, nil,
		func(l *Live) []sample { return one64(max(l.total.Expected-l.total.Received, 0)) }},
	{"mqblast_messages_lost_total", "Expected copies lost by the broker: 0 until the run ends, then the result's messages.lost.", counter, nil,
		func(l *Live) []sample {
			if l.final == nil {
				return one(0)
			}
			return one64(l.final.Messages.Lost)
		}},
	{"mqblast_messages_owed_at_end", "Expected copies the broker still owed when the drain ended with copies still arriving (not lost): 0 until the run ends, then the result's messages.owed_at_end.", gauge, nil,
		func(l *Live) []sample {
			if l.final == nil {
				return one(0)
			}
			return one64(l.final.Messages.OwedAtEnd)
		}},
	{"mqblast_messages_duplicated_total", "Copies that arrived more than once.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Duplicated) }},
	{"mqblast_messages_out_of_order_total", "Copies that arrived after a later one of their stream.", counter, nil,
		func(l *Live) []sample { return one64(l.total.OutOfOrder) }},
	{"mqblast_messages_unexpected_total", "Measured copies for no expected stream, by kind.", counter, []string{"kind"},
		func(l *Live) []sample { return byLabel(l.total.Unexpected) }},
	{"mqblast_messages_unmeasured_total", "Payloads without mqblast's measurement header.", counter, nil,
		func(l *Live) []sample { return one64(l.total.Unmeasured) }},
	{"mqblast_broker_held_seconds_total", "Publisher-seconds the broker held publishers back, by kind (flow_control, back_pressure, disconnected).", counter, []string{"kind"},
		func(l *Live) []sample {
			out := byLabel(l.total.HeldUS)
			for i := range out {
				out[i].v /= 1e6
			}
			return out
		}},
	{"mqblast_broker_stalled", "1 when the broker held the publishers back (the result's broker_stalled rules on the run so far; the result's verdict at the end).", gauge, nil,
		func(l *Live) []sample {
			if l.final != nil {
				return flag(l.final.BrokerStalled.Stalled)
			}
			held := int64(0)
			for _, v := range l.total.HeldUS {
				held += v
			}
			u := l.total.Unsent
			return flag(held >= stallHeldUS || u["disconnected"]+u["flow_control"]+u["back_pressure"]+u["not_read"] > 0)
		}},
	{"mqblast_client_cpu_seconds_total", "CPU time of the client processes (user and system).", counter, nil,
		func(l *Live) []sample { return one(float64(l.total.CPUNS) / 1e9) }},
	{"mqblast_client_resident_memory_bytes", "Resident set of the client processes at the latest interval's end.", gauge, nil,
		func(l *Live) []sample { return one64(l.last.ClientRSSBytes) }},
	{"mqblast_client_cores", "CPU cores of the client's host.", gauge, nil,
		func(l *Live) []sample { return one(float64(l.cores)) }},
	{"mqblast_client_saturated", "1 when the client itself is the limit (the result's rules on the run so far: schedule lag p99 over 10 ms or CPU over 90% of the cores; the result's verdict at the end).", gauge, nil,
		func(l *Live) []sample {
			if l.final != nil {
				return flag(l.final.Client.Saturated)
			}
			lag := l.total.ScheduleLag.Summary().P99
			cpu := float64(l.total.CPUNS) / 1e9 / max(l.last.TS, 1e-9) / float64(l.cores)
			return flag(lag > saturationLagUS || (l.last.TS >= 1 && cpu > saturationCPU))
		}},
	{"mqblast_broker_process_cpu_seconds_total", "CPU time of the broker process, when it is watched (--broker-pid, --broker-cgroup, the embedded broker, or an endpoint of --broker-metrics).", counter, nil,
		func(l *Live) []sample { return one(l.brokerCPUS) }},
	{"mqblast_broker_process_resident_memory_bytes", "Resident set of the broker process at the latest interval's end, when it is watched.", gauge, nil,
		func(l *Live) []sample { return one64(l.last.BrokerRSSBytes) }},
	{"mqblast_group_connections_connected_total", "A group's sessions established (a mixed run), reconnects excluded.", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Connected }) }},
	{"mqblast_group_connections_reconnected_total", "A group's sessions established again (after drops and reconnect storms).", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Reconnected }) }},
	{"mqblast_group_messages_published_total", "Messages a group's clients wrote to their sockets.", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Published }) }},
	{"mqblast_group_messages_expected_total", "Copies the broker should deliver of what a group published.", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Expected }) }},
	{"mqblast_group_messages_received_total", "Distinct copies of a group's messages that arrived, at any client.", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Received }) }},
	{"mqblast_group_messages_delivered_total", "Copies a group's clients received, of any group's messages.", counter, []string{"group"},
		func(l *Live) []sample { return byGroup(l, func(g *result.Snapshot) int64 { return g.Delivered }) }},
	{"mqblast_broker_host_cpu_ratio", "CPU busy of the broker's host over the latest interval (1 = every CPU), from its node_exporter (--broker-metrics); absent in a gap.", gauge, nil,
		func(l *Live) []sample {
			return hostSample(l, func(b *result.IntervalBrokerHost) float64 { return b.CPUPercent / 100 })
		}},
	{"mqblast_broker_host_memory_used_bytes", "Memory in use on the broker's host (total - available) at the latest interval's end, from its node_exporter.", gauge, nil,
		func(l *Live) []sample {
			return hostSample(l, func(b *result.IntervalBrokerHost) float64 { return b.MemUsedBytes })
		}},
	{"mqblast_broker_host_network_receive_bytes_per_second", "Bytes per second the broker's host received over the latest interval (every device but lo).", gauge, nil,
		func(l *Live) []sample {
			return hostSample(l, func(b *result.IntervalBrokerHost) float64 { return b.RxBytesPerS })
		}},
	{"mqblast_broker_host_network_transmit_bytes_per_second", "Bytes per second the broker's host sent over the latest interval (every device but lo).", gauge, nil,
		func(l *Live) []sample {
			return hostSample(l, func(b *result.IntervalBrokerHost) float64 { return b.TxBytesPerS })
		}},
	{"mqblast_soak_held", "1 when the run's soak (--sustain) held, 0 when it degraded: over the windows ended so far, and at the end the result's; absent before its first window ends, and without a soak.", gauge, nil,
		func(l *Live) []sample {
			return soakSample(l, func(s *result.Soak) float64 { return map[bool]float64{true: 1}[s.Held] })
		}},
	{"mqblast_soak_latency_slope_seconds_per_hour", "The least-squares slope of the soak windows' p99 latency (from the due time), seconds per hour, over the windows ended so far.", gauge, nil,
		func(l *Live) []sample {
			return soakSample(l, func(s *result.Soak) float64 { return s.LatencyP99SlopeUSPerH / 1e6 })
		}},
	{"mqblast_soak_broker_rss_slope_bytes_per_hour", "The least-squares slope of the broker's RSS over the soak windows ended so far, bytes per hour; absent when the broker's RSS was not watched.", gauge, nil,
		func(l *Live) []sample {
			if s := l.soakSoFar(); s != nil && s.BrokerRSS != "" {
				return one(s.BrokerRSSSlopeBytesPerH)
			}
			return nil
		}},
	{"mqblast_soak_windows", "The soak windows ended so far.", gauge, nil,
		func(l *Live) []sample {
			return soakSample(l, func(s *result.Soak) float64 { return float64(len(s.Windows)) })
		}},
	{"mqblast_soak_window_latency_p99_seconds", "The p99 latency (from the due time) of the last soak window that ended.", gauge, nil,
		func(l *Live) []sample {
			return soakWindow(l, func(w *result.SoakWindow) float64 { return float64(w.LatencyUS.P99) / 1e6 })
		}},
	{"mqblast_soak_window_lost", "The copies lost in the last soak window that ended (expected minus arrived in it).", gauge, nil,
		func(l *Live) []sample {
			return soakWindow(l, func(w *result.SoakWindow) float64 { return float64(w.Lost) })
		}},
	{"mqblast_soak_window_refusals", "The refusals of the last soak window that ended: messages refused, connects failed, connections dropped.", gauge, nil,
		func(l *Live) []sample {
			return soakWindow(l, func(w *result.SoakWindow) float64 { return float64(w.Refusals()) })
		}},
	{"mqblast_soak_window_broker_rss_bytes", "The broker's mean RSS over the last soak window that ended; absent when not watched.", gauge, nil,
		func(l *Live) []sample {
			return soakWindow(l, func(w *result.SoakWindow) float64 { return float64(w.BrokerRSSBytes) }, func(w *result.SoakWindow) bool { return w.BrokerRSSBytes > 0 })
		}},
	{"mqblast_run_stage", "1 for the stage of a staged run the latest interval lies in, labelled with its index (the result's stages[]); absent outside publishing and without stages.", gauge, []string{"stage"},
		func(l *Live) []sample {
			if l.last.Stage == nil {
				return nil
			}
			return []sample{{v: 1, labels: []string{strconv.Itoa(*l.last.Stage)}}}
		}},
	{"mqblast_limit_step", "1 for the limit search's current step, labelled with its index (the result's limit.steps[].index) and rate; absent outside a search and once it has ended.", gauge, []string{"step", "rate"},
		func(l *Live) []sample {
			if l.step == nil || l.final != nil {
				return nil
			}
			return []sample{{v: 1, labels: []string{strconv.Itoa(l.step.index), strconv.FormatFloat(l.step.rate, 'f', -1, 64)}}}
		}},
}

// soakSample is f of the run's soak so far; none without one.
func soakSample(l *Live, f func(s *result.Soak) float64) []sample {
	s := l.soakSoFar()
	if s == nil {
		return nil
	}
	return one(f(s))
}

// soakWindow is f of the last window of the run's soak so far; none without one, or when
// a has says the window lacks the figure.
func soakWindow(l *Live, f func(w *result.SoakWindow) float64, has ...func(w *result.SoakWindow) bool) []sample {
	s := l.soakSoFar()
	if s == nil || len(s.Windows) == 0 {
		return nil
	}
	w := &s.Windows[len(s.Windows)-1]
	for _, h := range has {
		if !h(w) {
			return nil
		}
	}
	return one(f(w))
}

// hostSample is f of the latest interval's broker host figures; none in a gap or without
// node_exporter.
func hostSample(l *Live, f func(b *result.IntervalBrokerHost) float64) []sample {
	if b := l.last.BrokerHost; b != nil && b.HasHost {
		return one(f(b))
	}
	return nil
}

// hdefs are the histograms, in Live.hists order.
var hdefs = [3]struct{ name, help string }{
	hLatency:    {"mqblast_latency_seconds", "Message latency from the due time (corrected for coordinated omission), messages due in the measure window."},
	hLatencyRaw: {"mqblast_latency_raw_seconds", "Message latency from the actual write, messages due in the measure window."},
	hConnect:    {"mqblast_connect_latency_seconds", "Connect latency: dial to CONNACK."},
}

// Names returns every metric's name, in exposition order.
func Names() []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.name)
	}
	for _, d := range hdefs {
		out = append(out, d.name)
	}
	return out
}

// Describe implements prometheus.Collector.
func (l *Live) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range l.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (l *Live) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, d := range defs {
		for _, s := range d.get(l) {
			ch <- prometheus.MustNewConstMetric(l.descs[i], d.kind, s.v, s.labels...)
		}
	}
	for i, b := range l.hists {
		ch <- prometheus.MustNewConstHistogram(l.descs[len(defs)+i], b.n, b.sumUS/1e6, b.cumulative())
	}
}
