package result

import (
	"cmp"
	"maps"
	"slices"
)

// Merge adds the results of shards of one run into one result: their snapshots (Total,
// or what a document read back shows) are added and every figure derived from them is
// computed once from the sum (SetTotal), so percentiles come from the merged histograms,
// never from averaged ones. The other figures combine by their own rule: throughput rates
// add over the longest window; the client's CPU and memory add, its per-connection
// figures weighted by connections; the kernel's counters add; the verdicts are judged
// anew from the merged evidence (Judge), each shard's client CPU its own; the run
// spans the earliest start to the latest end, its drain the longest; the latest shard to be ready and the worse
// clock are kept. Intervals are added index by index (their percentiles then come from
// the merged interval histograms, or the first shard's without them; worker processes'
// intervals are better merged from their snapshots). A shard's threshold verdicts do not hold for the whole:
// the merged result has none. The figures that need every stream at once come from the
// shards' joins (Join), joined. The inputs are not changed.
func Merge(rs []*Result) *Result {
	out := MergeParts(rs)
	out.SettleSilent(func(uint32) bool { return false }) // the shards make up the whole run
	out.Join = nil                                       // nothing is left to join
	return out
}

// MergeParts merges results of parts of one run as Merge does, and keeps in the merged
// result's Join what the parts' joins leave for parts outside them: for the worker
// processes of one shard, whose merged result is merged again (Join.Prune then keeps what
// crosses the shard).
func MergeParts(rs []*Result) *Result {
	out := *rs[0]
	out.Connections = Connections{}
	out.Client = ClientInfo{}
	out.Errors = nil // SetTotal rebuilds the derived ones; rs[0]'s must stay as they are
	out.Host.Procs = 0
	out.Thresholds = nil
	out.Shard = nil // the merged shards make up the whole run (CheckShards)
	out.Kernel, out.Host.Limited, out.Host.LimitedEvidence = nil, false, nil
	out.Start, out.Host.Clock = nil, nil
	total := NewSnapshot()
	var connectPhase float64
	var throughput Throughput
	for _, r := range rs {
		total.Add(r.snapshot())
		c := &r.Connections
		out.Connections.Target += c.Target
		for _, e := range r.Errors {
			if !derivedError(e.Kind) { // the shard's own: SetTotal does not rebuild those
				i := slices.IndexFunc(out.Errors, func(x ErrorCount) bool { return x.Kind == e.Kind })
				if i < 0 {
					out.Errors = append(out.Errors, e)
				} else {
					out.Errors[i].Count += e.Count
				}
			}
		}
		out.Start = laterStart(out.Start, r.Start)
		out.Host.Clock = worseClock(out.Host.Clock, r.Host.Clock)
		throughput.PublishPerS += r.Throughput.PublishPerS
		throughput.ReceivePerS += r.Throughput.ReceivePerS
		throughput.WindowS = max(throughput.WindowS, r.Throughput.WindowS)
		connectPhase = max(connectPhase, c.ConnectPhaseS)
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.EndedAt.After(out.EndedAt) {
			out.EndedAt = r.EndedAt
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		out.Messages.ExpectedUnknown = out.Messages.ExpectedUnknown || r.Messages.ExpectedUnknown
		out.Messages.DrainS = max(out.Messages.DrainS, r.Messages.DrainS)
		if k := r.Kernel; k != nil { // shards on several hosts: their counters add
			if out.Kernel == nil {
				out.Kernel = &Kernel{Client: map[string]int64{}, SameNamespace: k.SameNamespace}
			}
			addMap(out.Kernel.Client, k.Client)
			if len(k.Broker) > 0 {
				if out.Kernel.Broker == nil {
					out.Kernel.Broker = map[string]int64{}
				}
				addMap(out.Kernel.Broker, k.Broker)
			}
			out.Kernel.Findings = append(out.Kernel.Findings, k.Findings...)
		}
		out.Host.Procs += max(r.Host.Procs, 1)
		cl := &r.Client
		out.Client.CPUS += cl.CPUS
		out.Client.CPUMeasureS += cl.CPUMeasureS
		out.Client.RunDelayS += cl.RunDelayS
		out.Client.MaxRSSBytes += cl.MaxRSSBytes
		out.Client.RSSPerConnectionBytes += cl.RSSPerConnectionBytes * float64(c.Established)
		out.Client.CPUPerConnectUS += cl.CPUPerConnectUS * float64(c.Target)
	}
	out.Groups = mergeGroups(rs)
	out.Messages.Silent = mergeSilent(rs)
	out.Join, out.Messages.Inexact = nil, ""
	var joins []*Join
	for _, r := range rs {
		joins = append(joins, r.Join)
		if r.Join == nil { // a whole run's, or one whose join a gather left inexact
			out.Messages.Inexact = joinNotes(out.Messages.Inexact, r.Messages.Inexact)
		}
	}
	if slices.ContainsFunc(joins, func(j *Join) bool { return j != nil }) {
		out.Join = joinParts(total, joins, groupAttribution{out.Groups})
		joinSilent(out.Messages.Silent, joins, out.Join)
		out.Messages.Inexact = joinNotes(out.Messages.Inexact, out.Join.Omitted)
	}
	out.SetTotal(total)
	out.Throughput = throughput
	out.Connections.ConnectPhaseS = connectPhase
	if connectPhase > 0 {
		out.Connections.ConnectRatePerS = float64(total.Connected) / connectPhase
	}
	if total.Connected > 0 {
		out.Client.RSSPerConnectionBytes /= float64(total.Connected)
	}
	if out.Connections.Target > 0 {
		out.Client.CPUPerConnectUS /= float64(out.Connections.Target)
	}
	out.Intervals = mergeIntervals(rs)
	if len(rs[0].Stages) > 0 { // the first shard's stages, their figures from the merged intervals
		out.Stages = slices.Clone(rs[0].Stages)
		for i := range out.Stages {
			out.Stages[i].Thresholds = nil
		}
		out.SummarizeStages()
	}
	out.mergeBroker(rs)
	// The broker's $SYS figures are the first shard's: every shard's reader saw the whole
	// broker over its own run, so they do not add, and one shard's window need not cover
	// the others': they are not compared with the merged counts.
	if b := out.BrokerSys; b != nil && len(rs) > 1 {
		c := *b
		c.Comparable = false
		c.Notes = append(append([]string(nil), b.Notes...), "merged from shards: the broker's $SYS figures are the first shard's reader's, over that shard's run")
		out.BrokerSys = &c
	}
	out.NoteBrokerDrops()
	out.SetVerdicts(Judge(out.mergedEvidence(rs)))
	return &out
}

// mergedEvidence is the merged result's evidence: its figures' (the added schedule lag and
// holds, the broker's, the kernel's findings), and each part's own of the client's CPU and
// wait for one, which a sum over hosts would overstate.
func (out *Result) mergedEvidence(rs []*Result) Evidence {
	e := out.Evidence()
	e.CPUBound, e.Waited = "", ""
	for _, r := range rs {
		p := r.Evidence()
		e.CPUBound = cmp.Or(e.CPUBound, p.CPUBound)
		e.Waited = cmp.Or(e.Waited, p.Waited)
	}
	return e
}

// mergeBroker keeps the first part's figures of the broker (every part watched the same
// broker), with its CPU per message over the whole run's messages, not the first part's
// alone; the broker was busy when any part found it so.
func (out *Result) mergeBroker(rs []*Result) {
	if bp := rs[0].BrokerProcess; bp != nil {
		c := *bp
		first := rs[0].Throughput.PublishPerS + rs[0].Throughput.ReceivePerS
		if all := out.Throughput.PublishPerS + out.Throughput.ReceivePerS; first > 0 && all > 0 {
			c.CPUPerMessageUS *= first / all
		}
		out.BrokerProcess = &c
	}
	for _, r := range rs {
		if b := r.BrokerBusy; b != nil && (out.BrokerBusy == nil || b.Busy && !out.BrokerBusy.Busy) {
			out.BrokerBusy = b
		}
	}
}

// mergeIntervals adds the shards' intervals index by index: counts, rates, the client
// processes' CPU and RSS, kernel counters, and the interval histograms, whose percentiles
// are then exact (an interval without histograms keeps the first shard's percentiles). The
// time and the broker's figures (its process, its $SYS) are the first shard's. The inputs are not changed.
func mergeIntervals(rs []*Result) []Interval {
	var out []Interval
	for _, r := range rs {
		for i, iv := range r.Intervals {
			if i >= len(out) {
				iv.Kernel = maps.Clone(iv.Kernel)
				iv.Groups = mergeGroupIntervals(nil, iv.Groups)
				if h := iv.Histograms; h != nil {
					iv.Histograms = &IntervalHistograms{Latency: cloneHist(h.Latency), LatencyRaw: cloneHist(h.LatencyRaw),
						ConnectLatency: cloneHist(h.ConnectLatency), ScheduleLag: cloneHist(h.ScheduleLag)}
				}
				out = append(out, iv)
				continue
			}
			m := &out[i]
			m.Established += iv.Established
			m.Connected += iv.Connected
			m.Failed += iv.Failed
			m.Dropped += iv.Dropped
			m.ConnectPerS += iv.ConnectPerS
			m.Published += iv.Published
			m.Unsent += iv.Unsent
			m.Expected += iv.Expected
			m.RefusedCopies += iv.RefusedCopies
			m.ResponsesUnsent += iv.ResponsesUnsent
			m.Received += iv.Received
			m.Duplicated += iv.Duplicated
			m.Unexpected += iv.Unexpected
			m.Unmeasured += iv.Unmeasured
			m.PublishPerS += iv.PublishPerS
			m.ReceivePerS += iv.ReceivePerS
			m.ClientCPUPercent += iv.ClientCPUPercent
			m.ClientRSSBytes += iv.ClientRSSBytes
			m.Offered += iv.Offered
			m.OfferedPerS += iv.OfferedPerS
			m.HeldUS += iv.HeldUS
			m.Groups = mergeGroupIntervals(m.Groups, iv.Groups)
			if len(iv.Kernel) > 0 {
				if m.Kernel == nil {
					m.Kernel = map[string]int64{}
				}
				addMap(m.Kernel, iv.Kernel)
			}
			switch h := iv.Histograms; {
			case h == nil:
			case m.Histograms == nil:
				m.Histograms = &IntervalHistograms{Latency: cloneHist(h.Latency), LatencyRaw: cloneHist(h.LatencyRaw),
					ConnectLatency: cloneHist(h.ConnectLatency), ScheduleLag: cloneHist(h.ScheduleLag)}
			default:
				mh := m.Histograms
				mh.Latency, mh.LatencyRaw, mh.ConnectLatency = mergeHist(mh.Latency, h.Latency),
					mergeHist(mh.LatencyRaw, h.LatencyRaw), mergeHist(mh.ConnectLatency, h.ConnectLatency)
				mh.ScheduleLag = mergeHist(mh.ScheduleLag, h.ScheduleLag)
			}
		}
	}
	for i := range out {
		for k := range out[i].Groups {
			out[i].Groups[k].Latency.Pack()
		}
		if h := out[i].Histograms; h != nil && len(rs) > 1 {
			out[i].LatencyUS, out[i].LatencyRawUS = h.Latency.Summary(), h.LatencyRaw.Summary()
			out[i].ConnectLatencyUS, out[i].ScheduleLagUS = h.ConnectLatency.Summary(), h.ScheduleLag.Summary()
			h.pack()
		}
	}
	return out
}

// cloneHist returns a copy of h (nil for an empty one, as the document reads it).
func cloneHist(h *Hist) *Hist {
	if h.Count() == 0 {
		return nil
	}
	c := NewHist()
	c.Merge(h)
	return c
}

// mergeHist returns dst with o added (dst is one of mergeIntervals' own copies, or nil).
func mergeHist(dst, o *Hist) *Hist {
	if o.Count() == 0 {
		return dst
	}
	if dst == nil {
		return cloneHist(o)
	}
	dst.Merge(o)
	return dst
}

// laterStart merges the start records of two shards: the latest to be ready, the most late.
func laterStart(a, b *StartInfo) *StartInfo {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	c := *a
	if b.ReadyAt.After(c.ReadyAt) {
		c.ReadyAt = b.ReadyAt
	}
	c.LateMS = max(c.LateMS, b.LateMS)
	return &c
}

// worseClock merges the clock estimates of two shards' hosts: the larger errors, and
// synchronised only if both are.
func worseClock(a, b *Clock) *Clock {
	switch {
	case b == nil:
		return a
	case a == nil:
		c := *b
		return &c
	}
	return &Clock{MaxErrorUS: max(a.MaxErrorUS, b.MaxErrorUS), EstErrorUS: max(a.EstErrorUS, b.EstErrorUS),
		Synchronized: a.Synchronized && b.Synchronized}
}

// mergeGroups returns the groups of the parts rs with their clients added up (their
// figures come from the merged total's per-group snapshots, SetTotal).
func mergeGroups(rs []*Result) []Group {
	var out []Group
	for _, r := range rs {
		for i, g := range r.Groups {
			if i >= len(out) {
				out = append(out, Group{Name: g.Name, Behaviours: g.Behaviours, Numbers: g.Numbers, Shares: g.Shares})
			}
			out[i].Clients += g.Clients
			out[i].Publishers += g.Publishers
			if c := g.Churn; c != nil {
				if out[i].Churn == nil {
					out[i].Churn = &Churn{AtS: c.AtS, DownS: c.DownS, Clean: c.Clean, RatePerS: c.RatePerS}
				}
				out[i].Churn.Clients += c.Clients
				out[i].Churn.Ended += c.Ended
			}
		}
	}
	return out
}
