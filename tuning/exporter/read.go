package exporter

import (
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mqblast/mqblast/internal/termtext"
)

// brokerWords name a broker's process-exporter group, in the order they are tried.
var brokerWords = []string{"mosquitto", "emqx", "rabbitmq", "beam", "vernemq", "hivemq", "nanomq", "flashmq"}

const groupPrefix = "namedprocess_namegroup_"

// recognise says what a body is: its kinds (see Target.Kinds) and its process-exporter
// groups. The process collector counts only where neither node_exporter's nor
// process-exporter's families are: both exporters publish their own process_* series,
// which are the exporter's process, not the broker's.
func recognise(fams map[string]*dto.MetricFamily) (kinds, groups []string) {
	node, named := false, false
	for name, f := range fams {
		switch {
		case strings.HasPrefix(name, "node_"):
			node = true
		case strings.HasPrefix(name, "namedprocess_"):
			named = true
			if !strings.HasPrefix(name, groupPrefix) {
				continue
			}
			for _, m := range f.GetMetric() {
				if g, ok := label(m, "groupname"); ok && !slices.Contains(groups, g) {
					groups = append(groups, g)
				}
			}
		}
	}
	slices.Sort(groups)
	if node {
		kinds = append(kinds, "node_exporter")
	}
	if named {
		kinds = append(kinds, "process-exporter")
	}
	if !node && !named && fams["process_cpu_seconds_total"] != nil {
		kinds = append(kinds, "process")
	}
	return kinds, groups
}

func label(m *dto.Metric, name string) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue(), true
		}
	}
	return "", false
}

// value is a counter's, gauge's or untyped sample's value.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

// sum is the sum of family name's samples whose label key is one of vals (every sample
// when key is ""), and whether there was one.
func sum(fams map[string]*dto.MetricFamily, name, key string, vals ...string) (float64, bool) {
	var s float64
	found := false
	for _, m := range fams[name].GetMetric() {
		if key != "" {
			if v, _ := label(m, key); !slices.Contains(vals, v) {
				continue
			}
		}
		if v, ok := value(m); ok {
			s, found = s+v, true
		}
	}
	return s, found
}

func has(kinds []string, k string) bool { return slices.Contains(kinds, k) }

// hostOf reads the first URL that served node_exporter's families this time.
func hostOf(pages []page) *HostCounters {
	for _, p := range pages {
		if p.fams == nil || !has(p.t.Kinds, "node_exporter") {
			continue
		}
		f := p.fams
		h := &HostCounters{CPUSeconds: map[string]float64{}, Devices: map[string]DeviceCounters{}}
		var cpus []string
		for _, m := range f["node_cpu_seconds_total"].GetMetric() {
			v, ok := value(m)
			if !ok {
				continue
			}
			cpu, _ := label(m, "cpu")
			if !slices.Contains(cpus, cpu) {
				cpus = append(cpus, cpu)
			}
			mode, _ := label(m, "mode")
			h.CPUSeconds[mode] += v
		}
		h.CPUs = len(cpus)
		h.MemTotalBytes, _ = sum(f, "node_memory_MemTotal_bytes", "")
		h.MemAvailableBytes, _ = sum(f, "node_memory_MemAvailable_bytes", "")
		for i, name := range []string{
			"node_network_receive_bytes_total", "node_network_transmit_bytes_total",
			"node_network_receive_packets_total", "node_network_transmit_packets_total",
		} {
			for _, m := range f[name].GetMetric() {
				dev, _ := label(m, "device")
				v, ok := value(m)
				if !ok || dev == "lo" {
					continue
				}
				d := h.Devices[dev]
				*d.field(i) = v
				h.Devices[dev] = d
			}
		}
		for _, d := range h.Devices {
			h.RxBytes += d.RxBytes
			h.TxBytes += d.TxBytes
			h.RxPackets += d.RxPackets
			h.TxPackets += d.TxPackets
		}
		h.TCPEstablished, _ = sum(f, "node_netstat_Tcp_CurrEstab", "")
		h.TCPTimeWait, _ = sum(f, "node_sockstat_TCP_tw", "")
		h.ListenDrops, _ = sum(f, "node_netstat_TcpExt_ListenDrops", "")
		h.ListenOverflows, _ = sum(f, "node_netstat_TcpExt_ListenOverflows", "")
		return h
	}
	return nil
}

func (d *DeviceCounters) field(i int) *float64 {
	return [...]*float64{&d.RxBytes, &d.TxBytes, &d.RxPackets, &d.TxPackets}[i]
}

// processOf reads the broker process: process-exporter's chosen group, else (when no URL
// serves process-exporter, now or before) the first URL with the process collector alone.
func (s *Scraper) processOf(pages []page) *ProcessCounters {
	grouped := false
	for _, p := range pages {
		if len(p.t.Groups) == 0 {
			continue
		}
		grouped = true
		if g := chooseGroup(p.t.Groups, s.o.Process); g != "" {
			if pc := groupOf(p.fams, g); pc != nil {
				return pc
			}
		}
	}
	if grouped || s.grouped {
		return nil
	}
	for _, p := range pages {
		if p.fams == nil || !has(p.t.Kinds, "process") {
			continue
		}
		pc := &ProcessCounters{Source: "process collector", FDs: -1}
		pc.CPUSeconds, _ = sum(p.fams, "process_cpu_seconds_total", "")
		pc.RSSBytes, _ = sum(p.fams, "process_resident_memory_bytes", "")
		if v, ok := sum(p.fams, "process_open_fds", ""); ok {
			pc.FDs = v
		}
		return pc
	}
	return nil
}

// chooseGroup is the group Options.Process names (see there); groups are sorted.
func chooseGroup(groups []string, want string) string {
	if want != "" {
		if slices.Contains(groups, want) {
			return want
		}
		return ""
	}
	if len(groups) == 1 {
		return groups[0]
	}
	for _, w := range brokerWords {
		for _, g := range groups {
			if strings.Contains(strings.ToLower(g), w) {
				return g
			}
		}
	}
	return ""
}

// groupOf reads process-exporter's group g (nil when it has no process running).
func groupOf(fams map[string]*dto.MetricFamily, g string) *ProcessCounters {
	if n, ok := sum(fams, groupPrefix+"num_procs", "groupname", g); ok && n == 0 {
		return nil
	}
	pc := &ProcessCounters{Source: "process-exporter " + termtext.Line(g), FDs: -1}
	found := false
	for _, m := range fams[groupPrefix+"cpu_seconds_total"].GetMetric() {
		if name, _ := label(m, "groupname"); name != g {
			continue
		}
		if mode, _ := label(m, "mode"); mode != "user" && mode != "system" {
			continue
		}
		if v, ok := value(m); ok {
			pc.CPUSeconds, found = pc.CPUSeconds+v, true
		}
	}
	if !found { // process-exporter before 0.5 split the modes into two families
		u, ok1 := sum(fams, groupPrefix+"cpu_user_seconds_total", "groupname", g)
		sy, ok2 := sum(fams, groupPrefix+"cpu_system_seconds_total", "groupname", g)
		pc.CPUSeconds, found = u+sy, ok1 || ok2
	}
	for _, m := range fams[groupPrefix+"memory_bytes"].GetMetric() {
		name, _ := label(m, "groupname")
		typ, _ := label(m, "memtype")
		if v, ok := value(m); ok && name == g && typ == "resident" {
			pc.RSSBytes, found = v, true
		}
	}
	if v, ok := sum(fams, groupPrefix+"open_filedesc", "groupname", g); ok {
		pc.FDs, found = v, true
	}
	if !found {
		return nil
	}
	return pc
}

// spec is a parsed series spec.
type spec struct {
	raw    string
	name   string
	labels []*dto.LabelPair
}

// parseSpec reads NAME or NAME{label="value",...} with the Prometheus text parser: the
// spec followed by a value is one sample line.
func parseSpec(raw string) (spec, error) {
	bad := func(why string) (spec, error) {
		return spec{}, fmt.Errorf(`exporter: broker metric %q: %s: want NAME or NAME{label="value",...}`, termtext.Line(raw), why)
	}
	if raw == "" || strings.ContainsAny(raw, "\n\r") || strings.HasPrefix(raw, "#") {
		return bad("not a series name")
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(raw + " 0\n"))
	if err != nil {
		var pe expfmt.ParseError
		if ok := asParseError(err, &pe); ok {
			return bad(clip(pe.Msg))
		}
		return bad(clip(err.Error()))
	}
	if len(fams) != 1 {
		return bad("not a series name")
	}
	for name, f := range fams {
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].TimestampMs != nil {
			return bad("text after the series")
		}
		sp := spec{raw: raw, name: name, labels: f.GetMetric()[0].GetLabel()}
		seen := map[string]bool{}
		for _, l := range sp.labels {
			if !model.LegacyValidation.IsValidLabelName(l.GetName()) {
				return bad(fmt.Sprintf("label name %q", termtext.Line(l.GetName())))
			}
			if seen[l.GetName()] {
				return bad(fmt.Sprintf("label %q given twice", l.GetName()))
			}
			seen[l.GetName()] = true
		}
		return sp, nil
	}
	panic("BUG: unreachable")
}

func asParseError(err error, pe *expfmt.ParseError) bool {
	v, ok := err.(expfmt.ParseError) //nolint:errorlint // the parser returns it unwrapped
	if ok {
		*pe = v
	}
	return ok
}

// matches reports whether m has every label of the spec (a label given as "" matches its
// absence too).
func (sp *spec) matches(m *dto.Metric) bool {
	for _, want := range sp.labels {
		if v, _ := label(m, want.GetName()); v != want.GetValue() {
			return false
		}
	}
	return true
}

// seriesOf sums each spec's series over every URL that answered.
func seriesOf(specs []spec, pages []page) map[string]SeriesValue {
	out := make(map[string]SeriesValue, len(specs))
	for i := range specs {
		sp := &specs[i]
		var sv SeriesValue
		found := false
		for _, p := range pages {
			f, sub := lookup(p.fams, sp.name)
			if f == nil {
				continue
			}
			counter := sub != "" || f.GetType() == dto.MetricType_COUNTER ||
				(f.GetType() == dto.MetricType_UNTYPED && strings.HasSuffix(sp.name, "_total"))
			for _, m := range f.GetMetric() {
				if !sp.matches(m) {
					continue
				}
				v, ok := subValue(m, sub)
				if !ok {
					continue
				}
				if !found {
					sv.Counter = counter
				}
				sv.Value += v
				found = true
			}
		}
		if found {
			out[sp.raw] = sv
		}
	}
	return out
}

// lookup finds family name, or the summary or histogram whose _count or _sum it is (sub
// is then "count" or "sum").
func lookup(fams map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, string) {
	if f := fams[name]; f != nil {
		return f, ""
	}
	for _, sub := range []string{"count", "sum"} {
		base, ok := strings.CutSuffix(name, "_"+sub)
		if !ok {
			continue
		}
		if f := fams[base]; f != nil && (f.GetType() == dto.MetricType_SUMMARY || f.GetType() == dto.MetricType_HISTOGRAM) {
			return f, sub
		}
	}
	return nil, ""
}

func subValue(m *dto.Metric, sub string) (float64, bool) {
	switch {
	case sub == "":
		return value(m)
	case m.Summary != nil && sub == "count":
		return float64(m.Summary.GetSampleCount()), true
	case m.Summary != nil:
		return m.Summary.GetSampleSum(), true
	case m.Histogram != nil && sub == "count":
		if m.Histogram.SampleCountFloat != nil {
			return m.Histogram.GetSampleCountFloat(), true
		}
		return float64(m.Histogram.GetSampleCount()), true
	case m.Histogram != nil:
		return m.Histogram.GetSampleSum(), true
	}
	return 0, false
}

func between(prev, cur Reading) Rates {
	r := Rates{Seconds: cur.At.Sub(prev.At).Seconds(), Series: map[string]float64{}}
	if r.Seconds <= 0 {
		return r
	}
	r.Host = hostBetween(prev.Host, cur.Host, r.Seconds)
	if p, c := prev.Process, cur.Process; p != nil && c != nil && p.Source == c.Source && c.CPUSeconds >= p.CPUSeconds {
		used := c.CPUSeconds - p.CPUSeconds
		r.Process = &ProcessRates{
			Source: c.Source, CPUSeconds: used, CPUPercent: 100 * used / r.Seconds,
			RSSBytes: c.RSSBytes, FDs: c.FDs,
		}
	}
	for name, c := range cur.Series {
		if !c.Counter {
			r.Series[name] = c.Value
			continue
		}
		if p, ok := prev.Series[name]; ok && p.Counter && c.Value >= p.Value {
			r.Series[name] = (c.Value - p.Value) / r.Seconds
		}
	}
	return r
}

func hostBetween(p, c *HostCounters, secs float64) *HostRates {
	if p == nil || c == nil {
		return nil
	}
	var total, idle float64
	for mode, v := range c.CPUSeconds {
		d := v - p.CPUSeconds[mode]
		if d < 0 {
			return nil // the host restarted
		}
		total += d
		if mode == "idle" || mode == "iowait" {
			idle += d
		}
	}
	if c.ListenDrops < p.ListenDrops || c.ListenOverflows < p.ListenOverflows {
		return nil
	}
	h := &HostRates{
		MemUsedBytes:      c.MemTotalBytes - c.MemAvailableBytes,
		MemAvailableBytes: c.MemAvailableBytes,
		TCPEstablished:    c.TCPEstablished,
		TCPTimeWait:       c.TCPTimeWait,
		ListenDrops:       c.ListenDrops - p.ListenDrops,
		ListenOverflows:   c.ListenOverflows - p.ListenOverflows,
	}
	if total > 0 {
		h.CPUPercent = 100 * (total - idle) / total
	}
	for dev, cd := range c.Devices {
		pd, ok := p.Devices[dev]
		if !ok {
			continue
		}
		var d [4]float64
		reset := false
		for i := range d {
			d[i] = *cd.field(i) - *pd.field(i)
			reset = reset || d[i] < 0 || math.IsNaN(d[i])
		}
		if reset {
			continue // the device was recreated
		}
		h.RxBytesPerS += d[0] / secs
		h.TxBytesPerS += d[1] / secs
		h.RxPacketsPerS += d[2] / secs
		h.TxPacketsPerS += d[3] / secs
	}
	return h
}
