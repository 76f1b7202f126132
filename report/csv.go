package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// column is one fixed column of the interval CSV: its header (units in the name) and how
// it reads an interval (prev is the interval before, nil for the first).
type column struct {
	name string
	cell func(iv, prev *result.Interval) string
}

func i64(v int64) string  { return strconv.FormatInt(v, 10) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func pct(p result.Percentiles, v int64) string {
	if p.Count == 0 { // no value: an empty cell, not a latency of 0
		return ""
	}
	return i64(v)
}

// percentileColumns are the columns of one histogram summary: count, mean, p50 ... max.
func percentileColumns(prefix string, get func(*result.Interval) result.Percentiles) []column {
	return []column{
		{prefix + "_count", func(iv, _ *result.Interval) string { return i64(get(iv).Count) }},
		{prefix + "_mean_us", func(iv, _ *result.Interval) string {
			if p := get(iv); p.Count > 0 {
				return f1(p.Mean)
			}
			return ""
		}},
		{prefix + "_p50_us", func(iv, _ *result.Interval) string { p := get(iv); return pct(p, p.P50) }},
		{prefix + "_p90_us", func(iv, _ *result.Interval) string { p := get(iv); return pct(p, p.P90) }},
		{prefix + "_p99_us", func(iv, _ *result.Interval) string { p := get(iv); return pct(p, p.P99) }},
		{prefix + "_p999_us", func(iv, _ *result.Interval) string { p := get(iv); return pct(p, p.P999) }},
		{prefix + "_max_us", func(iv, _ *result.Interval) string { p := get(iv); return pct(p, p.Max) }},
	}
}

// csvColumns are the fixed columns, in order (docs/outputs.md lists them; a test holds the
// two together).
var csvColumns = slices.Concat(
	[]column{
		{"t_s", func(iv, _ *result.Interval) string { return f3(iv.TS) }},
		{"interval_s", func(iv, prev *result.Interval) string {
			if prev == nil {
				return f3(iv.TS)
			}
			return f3(iv.TS - prev.TS)
		}},
		{"stage", func(iv, _ *result.Interval) string {
			if iv.Stage == nil {
				return ""
			}
			return strconv.Itoa(*iv.Stage)
		}},
		{"established", func(iv, _ *result.Interval) string { return i64(iv.Established) }},
		{"connected", func(iv, _ *result.Interval) string { return i64(iv.Connected) }},
		{"failed", func(iv, _ *result.Interval) string { return i64(iv.Failed) }},
		{"dropped", func(iv, _ *result.Interval) string { return i64(iv.Dropped) }},
		{"connect_per_s", func(iv, _ *result.Interval) string { return f3(iv.ConnectPerS) }},
	},
	percentileColumns("connect_latency", func(iv *result.Interval) result.Percentiles { return iv.ConnectLatencyUS }),
	[]column{
		{"published", func(iv, _ *result.Interval) string { return i64(iv.Published) }},
		{"unsent", func(iv, _ *result.Interval) string { return i64(iv.Unsent) }},
		{"expected", func(iv, _ *result.Interval) string { return i64(iv.Expected) }},
		{"received", func(iv, _ *result.Interval) string { return i64(iv.Received) }},
		{"duplicated", func(iv, _ *result.Interval) string { return i64(iv.Duplicated) }},
		{"unexpected", func(iv, _ *result.Interval) string { return i64(iv.Unexpected) }},
		{"unmeasured", func(iv, _ *result.Interval) string { return i64(iv.Unmeasured) }},
		{"offered_per_s", func(iv, _ *result.Interval) string {
			if iv.Stage == nil && iv.Offered == 0 { // a staged run's figure
				return ""
			}
			return f3(iv.OfferedPerS)
		}},
		{"publish_per_s", func(iv, _ *result.Interval) string { return f3(iv.PublishPerS) }},
		{"receive_per_s", func(iv, _ *result.Interval) string { return f3(iv.ReceivePerS) }},
	},
	percentileColumns("latency", func(iv *result.Interval) result.Percentiles { return iv.LatencyUS }),
	percentileColumns("latency_raw", func(iv *result.Interval) result.Percentiles { return iv.LatencyRawUS }),
	percentileColumns("schedule_lag", func(iv *result.Interval) result.Percentiles { return iv.ScheduleLagUS }),
	[]column{
		{"client_cpu_percent", func(iv, _ *result.Interval) string { return f1(iv.ClientCPUPercent) }},
		{"client_rss_bytes", func(iv, _ *result.Interval) string { return i64(iv.ClientRSSBytes) }},
		{"broker_cpu_percent", func(iv, _ *result.Interval) string {
			if iv.BrokerCPUPercent == 0 && iv.BrokerRSSBytes == 0 { // not sampled
				return ""
			}
			return f1(iv.BrokerCPUPercent)
		}},
		{"broker_rss_bytes", func(iv, _ *result.Interval) string {
			if iv.BrokerRSSBytes == 0 {
				return ""
			}
			return i64(iv.BrokerRSSBytes)
		}},
		{"broker_cpu_quota", func(iv, _ *result.Interval) string {
			if iv.BrokerCPUQuota == 0 { // none, or not sampled
				return ""
			}
			return f3(iv.BrokerCPUQuota)
		}},
		{"broker_host_cpu_percent", hostCell(func(b *result.IntervalBrokerHost) string { return f1(b.CPUPercent) })},
		{"broker_host_mem_used_bytes", hostCell(func(b *result.IntervalBrokerHost) string { return f3(b.MemUsedBytes) })},
		{"broker_host_rx_bytes_per_s", hostCell(func(b *result.IntervalBrokerHost) string { return f3(b.RxBytesPerS) })},
		{"broker_host_tx_bytes_per_s", hostCell(func(b *result.IntervalBrokerHost) string { return f3(b.TxBytesPerS) })},
		{"broker_host_tcp_established", hostCell(func(b *result.IntervalBrokerHost) string { return f3(b.TCPEstab) })},
	},
)

// hostCell is a column of the interval's broker host figures (--broker-metrics), empty
// where the interval has none (a gap, or no node_exporter).
func hostCell(f func(b *result.IntervalBrokerHost) string) func(iv, _ *result.Interval) string {
	return func(iv, _ *result.Interval) string {
		if iv.BrokerHost == nil || !iv.BrokerHost.HasHost {
			return ""
		}
		return f(iv.BrokerHost)
	}
}

// CSVColumns returns the names of the CSV's fixed columns, in order. Kernel counter
// columns (kernel_NAME) follow them, one per counter that moved in any interval.
func CSVColumns() []string {
	names := make([]string, len(csvColumns))
	for i, c := range csvColumns {
		names[i] = c.name
	}
	return names
}

// csvSysKeys are the broker's $SYS counters that any interval has a rate of (sorted), and
// whether any has its count of clients.
func csvSysKeys(r *result.Result) (keys []string, clients bool) {
	for _, iv := range r.Intervals {
		if b := iv.BrokerSys; b != nil {
			clients = clients || b.ClientsConnected > 0
			for k := range b.PerS {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys, clients
}

// groupColumns are the columns of each group of a mixed run, after the others: named
// group_NAME_ and these (docs/outputs.md lists them).
var groupColumns = []struct {
	name string
	cell func(g *result.GroupInterval) string
}{
	{"connected", func(g *result.GroupInterval) string { return i64(g.Connected) }},
	{"reconnected", func(g *result.GroupInterval) string { return i64(g.Reconnected) }},
	{"failed", func(g *result.GroupInterval) string { return i64(g.Failed) }},
	{"dropped", func(g *result.GroupInterval) string { return i64(g.Dropped) }},
	{"published", func(g *result.GroupInterval) string { return i64(g.Published) }},
	{"unsent", func(g *result.GroupInterval) string { return i64(g.Unsent) }},
	{"expected", func(g *result.GroupInterval) string { return i64(g.Expected) }},
	{"received", func(g *result.GroupInterval) string { return i64(g.Received) }},
	{"delivered", func(g *result.GroupInterval) string { return i64(g.Delivered) }},
	{"publish_per_s", func(g *result.GroupInterval) string { return f3(g.PublishPerS) }},
	{"receive_per_s", func(g *result.GroupInterval) string { return f3(g.ReceivePerS) }},
	{"latency_p50_us", func(g *result.GroupInterval) string { return pct(g.LatencyUS, g.LatencyUS.P50) }},
	{"latency_p99_us", func(g *result.GroupInterval) string { return pct(g.LatencyUS, g.LatencyUS.P99) }},
	{"latency_max_us", func(g *result.GroupInterval) string { return pct(g.LatencyUS, g.LatencyUS.Max) }},
}

// WriteCSV writes one row per interval of r (the measure window and every other phase, the
// last partial interval included): the fixed columns of CSVColumns, then one kernel_NAME
// column per kernel counter that moved in any interval (sorted by name; the broker's
// namespace's counters are named kernel_broker.NAME), then, for a run that read the
// broker's $SYS (--broker-sys), broker_sys_NAME_per_s per counter the broker published
// (publish_received, publish_sent, messages_*, bytes_*) and broker_sys_clients_connected,
// then, for a mixed run, group_NAME_COLUMN per group and groupColumns. Counts are per interval, rates per
// second over it, latencies in µs (empty cells when the interval has no value).
func WriteCSV(w io.Writer, r *result.Result) error {
	var kernel []string
	for _, iv := range r.Intervals {
		for k := range iv.Kernel {
			if !slices.Contains(kernel, k) {
				kernel = append(kernel, k)
			}
		}
	}
	slices.Sort(kernel)
	sys, sysClients := csvSysKeys(r)
	cw := csv.NewWriter(w)
	header := CSVColumns()
	for _, k := range kernel {
		header = append(header, "kernel_"+termtext.Line(k)) // a name from the document; the prefix also keeps a spreadsheet from reading it as a formula
	}
	for _, k := range sys {
		header = append(header, "broker_sys_"+termtext.Line(k)+"_per_s")
	}
	if sysClients {
		header = append(header, "broker_sys_clients_connected")
	}
	groupAt := len(header)
	for _, g := range r.Groups {
		for _, c := range groupColumns {
			header = append(header, "group_"+termtext.Line(g.Name)+"_"+c.name)
		}
	}
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("cannot write the CSV: %w", err)
	}
	row := make([]string, len(header))
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		var prev *result.Interval
		if i > 0 {
			prev = &r.Intervals[i-1]
		}
		for j, c := range csvColumns {
			row[j] = c.cell(iv, prev)
			if c.name == "expected" && r.Messages.ExpectedUnknown {
				row[j] = "" // the plan does not know its publishers (a sub alone): not 0
			}
		}
		for j, k := range kernel {
			row[len(csvColumns)+j] = i64(iv.Kernel[k])
		}
		at := len(csvColumns) + len(kernel)
		for j, k := range sys {
			row[at+j] = ""
			if b := iv.BrokerSys; b != nil {
				if v, ok := b.PerS[k]; ok {
					row[at+j] = f3(v)
				}
			}
		}
		if sysClients {
			row[groupAt-1] = ""
			if b := iv.BrokerSys; b != nil && b.ClientsConnected > 0 {
				row[groupAt-1] = i64(b.ClientsConnected)
			}
		}
		for gi := range r.Groups {
			for j, c := range groupColumns {
				cell := ""
				if gi < len(iv.Groups) {
					cell = c.cell(&iv.Groups[gi])
				}
				row[groupAt+gi*len(groupColumns)+j] = cell
			}
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("cannot write the CSV: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("cannot write the CSV: %w", err)
	}
	return nil
}
