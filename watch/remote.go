package watch

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/exporter"
)

// busyShare is the share of the broker's CPU (its host's CPUs, or one core of its process)
// from which the broker is said to be the run's limit.
const busyShare = result.BusyShare

// remoteWatch scrapes the broker host's Prometheus endpoints once per interval
// (--broker-metrics) and keeps what the result needs.
type remoteWatch struct {
	s       *exporter.Scraper
	sources []result.MetricsSource
	failing []bool // a source's last scrape failed (its failure was printed)

	first, last     exporter.Reading // the first reading, and the latest one
	prevHost        exporter.Reading // the latest reading with host figures
	prevProc        exporter.Reading // the latest with process figures
	prevSeries      exporter.Reading // the latest reading (series)
	hostFirst       *exporter.HostCounters
	hostLast        *exporter.HostCounters
	procFirst       *exporter.ProcessCounters
	procLast        *exporter.ProcessCounters
	wantHost        bool // a source served node_exporter's figures at the start
	wantProc        bool
	gaps            int
	samples         []remoteSample
	cpuAt           []cpuSample // the remote process's CPU at each reading
	peakRSS, maxFDs float64
	mostOpen        int64
	rssAtMost       float64
}

// remoteSample is one interval's remote figures, at the end of its span.
type remoteSample struct {
	at time.Time
	iv result.IntervalBrokerHost
}

// SetRemote makes the watch scrape s at its start and at every interval (nil: none).
func (w *Watch) SetRemote(s *exporter.Scraper) {
	if s == nil {
		w.remote = nil
		return
	}
	n := len(s.URLs())
	r := &remoteWatch{s: s, sources: make([]result.MetricsSource, n), failing: make([]bool, n)}
	for i, u := range s.URLs() {
		r.sources[i].URL = u
	}
	w.remote = r
}

// start takes the first reading.
func (r *remoteWatch) start() {
	rd, _ := r.scrape(nil, 0)
	r.first, r.last, r.prevSeries = rd, rd, rd
	if rd.Host != nil {
		r.prevHost, r.hostFirst, r.hostLast, r.wantHost = rd, rd.Host, rd.Host, true
	}
	if rd.Process != nil {
		r.prevProc, r.procFirst, r.procLast, r.wantProc = rd, rd.Process, rd.Process, true
		r.cpuAt = append(r.cpuAt, cpuSample{rd.At, secs(rd.Process.CPUSeconds)})
		r.peakRSS, r.maxFDs = rd.Process.RSSBytes, rd.Process.FDs
	}
}

// scrape scrapes every source and accounts for it.
func (r *remoteWatch) scrape(progress io.Writer, ts float64) (exporter.Reading, bool) {
	return r.account(r.s.Scrape(context.Background()), progress, ts)
}

// account counts a scrape's outcome per source, and prints a source's failure the first
// time it fails after a success (and its return).
func (r *remoteWatch) account(rd exporter.Reading, progress io.Writer, ts float64) (_ exporter.Reading, failed bool) {
	for i, t := range rd.Targets {
		if i >= len(r.sources) {
			break
		}
		src := &r.sources[i]
		if t.Err != "" {
			failed = true
			src.Failed++
			src.LastError = t.Err
			if !r.failing[i] && progress != nil {
				fmt.Fprintf(progress, "%6.1fs  broker metrics: %s: %s (a gap in its figures until it answers)\n",
					ts, termtext.Line(src.URL), termtext.Line(t.Err))
			}
			r.failing[i] = true
			continue
		}
		src.ScrapesOK++
		src.TookMSMax = max(src.TookMSMax, float64(t.Took.Microseconds())/1000)
		for _, k := range t.Kinds {
			if !slices.Contains(src.Kinds, k) {
				src.Kinds = append(src.Kinds, k)
			}
		}
		if r.failing[i] && progress != nil {
			fmt.Fprintf(progress, "%6.1fs  broker metrics: %s answers again\n", ts, termtext.Line(src.URL))
		}
		r.failing[i] = false
	}
	return rd, failed
}

// interval takes rd, the scrape at the end of interval iv, and fills iv's broker_host
// figures; with no local process sampled, the endpoint's process figures fill the
// interval's broker columns.
func (r *remoteWatch) interval(iv *result.Interval, rd exporter.Reading, progress io.Writer, local bool) {
	rd, failed := r.account(rd, progress, iv.TS)
	if failed {
		r.gaps++
	}
	r.last = rd
	var out result.IntervalBrokerHost
	some := false
	if rd.Host != nil && r.prevHost.Host != nil {
		if h := exporter.Between(exporter.Reading{At: r.prevHost.At, Host: r.prevHost.Host},
			exporter.Reading{At: rd.At, Host: rd.Host}).Host; h != nil {
			out.HasHost, some = true, true
			out.CPUPercent, out.MemUsedBytes, out.MemAvailableBytes = h.CPUPercent, h.MemUsedBytes, h.MemAvailableBytes
			out.RxBytesPerS, out.TxBytesPerS, out.RxPacketsPerS, out.TxPacketsPerS = h.RxBytesPerS, h.TxBytesPerS, h.RxPacketsPerS, h.TxPacketsPerS
			out.TCPEstab, out.TCPTimeWait, out.ListenDrops = h.TCPEstablished, h.TCPTimeWait, h.ListenDrops+h.ListenOverflows
		}
	}
	if rd.Host != nil {
		if r.hostFirst == nil {
			r.hostFirst = rd.Host
		}
		r.prevHost, r.hostLast = rd, rd.Host
	}
	if rd.Process != nil && r.prevProc.Process != nil {
		if p := exporter.Between(exporter.Reading{At: r.prevProc.At, Process: r.prevProc.Process},
			exporter.Reading{At: rd.At, Process: rd.Process}).Process; p != nil {
			out.HasProcess, some = true, true
			out.ProcessCPUPercent, out.ProcessRSSBytes, out.ProcessFDs = p.CPUPercent, p.RSSBytes, p.FDs
			if !local {
				iv.BrokerCPUPercent, iv.BrokerRSSBytes = p.CPUPercent, int64(p.RSSBytes)
			}
		}
	}
	if rd.Process != nil {
		if r.procFirst == nil {
			r.procFirst = rd.Process
		}
		r.prevProc, r.procLast = rd, rd.Process
		r.cpuAt = append(r.cpuAt, cpuSample{rd.At, secs(rd.Process.CPUSeconds)})
		r.peakRSS, r.maxFDs = max(r.peakRSS, rd.Process.RSSBytes), max(r.maxFDs, rd.Process.FDs)
		if iv.Established > r.mostOpen {
			r.mostOpen, r.rssAtMost = iv.Established, rd.Process.RSSBytes
		}
	}
	if s := exporter.Between(r.prevSeries, rd).Series; len(s) > 0 {
		out.Series, some = s, true
	}
	if len(rd.Series) > 0 {
		r.prevSeries = rd
	}
	if some {
		iv.BrokerHost = &out
		r.samples = append(r.samples, remoteSample{rd.At, out})
	}
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// finish fills broker_host, and broker_process from the endpoint when no local process
// was sampled.
func (r *remoteWatch) finish(res *result.Result, local bool) {
	r.s.Close() // its idle connections to the endpoints
	bh := &result.BrokerHost{Sources: r.sources, Gaps: r.gaps}
	in := r.window(res.MeasureFrom, res.MeasureTo)
	var n, np int
	for _, s := range in {
		if s.iv.HasHost {
			n++
			bh.CPUPercentAvg += s.iv.CPUPercent
			bh.CPUPercentPeak = max(bh.CPUPercentPeak, s.iv.CPUPercent)
			bh.MemUsedAvgBytes += s.iv.MemUsedBytes
			bh.MemUsedPeakBytes = max(bh.MemUsedPeakBytes, s.iv.MemUsedBytes)
			bh.RxBytesPerSAvg += s.iv.RxBytesPerS
			bh.RxBytesPerSPeak = max(bh.RxBytesPerSPeak, s.iv.RxBytesPerS)
			bh.TxBytesPerSAvg += s.iv.TxBytesPerS
			bh.TxBytesPerSPeak = max(bh.TxBytesPerSPeak, s.iv.TxBytesPerS)
			bh.RxPacketsPerSAvg += s.iv.RxPacketsPerS
			bh.TxPacketsPerSAvg += s.iv.TxPacketsPerS
		}
		if s.iv.HasProcess {
			np++
		}
	}
	if n > 0 {
		f := float64(n)
		bh.CPUPercentAvg /= f
		bh.MemUsedAvgBytes /= f
		bh.RxBytesPerSAvg /= f
		bh.TxBytesPerSAvg /= f
		bh.RxPacketsPerSAvg /= f
		bh.TxPacketsPerSAvg /= f
	}
	for _, s := range r.samples { // gauges over the whole run
		bh.TCPEstablishedMax = max(bh.TCPEstablishedMax, s.iv.TCPEstab)
		bh.TCPTimeWaitMax = max(bh.TCPTimeWaitMax, s.iv.TCPTimeWait)
	}
	if h0, h1 := r.hostFirst, r.hostLast; h0 != nil && h1 != nil {
		bh.CPUs = h1.CPUs
		bh.MemAvailableMinBytes = min(h0.MemAvailableBytes, h1.MemAvailableBytes)
		for _, s := range r.samples {
			if s.iv.HasHost {
				bh.MemAvailableMinBytes = min(bh.MemAvailableMinBytes, s.iv.MemAvailableBytes)
			}
		}
		bh.ListenDrops = max(h1.ListenDrops-h0.ListenDrops, 0)
		bh.ListenOverflows = max(h1.ListenOverflows-h0.ListenOverflows, 0)
	}
	series := map[string]*result.SeriesSummary{}
	for _, s := range in {
		for _, k := range slices.Sorted(maps.Keys(s.iv.Series)) {
			v := s.iv.Series[k]
			x := series[k]
			if x == nil {
				x = &result.SeriesSummary{Counter: r.last.Series[k].Counter || r.first.Series[k].Counter, Peak: v}
				series[k] = x
			}
			x.Avg += v
			x.Peak = max(x.Peak, v)
			x.Samples++
		}
	}
	for k, x := range series {
		x.Avg /= float64(x.Samples)
		if bh.Series == nil {
			bh.Series = map[string]result.SeriesSummary{}
		}
		bh.Series[k] = *x
	}
	if bh.ListenDrops > 0 || bh.ListenOverflows > 0 { // beside the client host's kernel findings
		d := tuning.KernelCounters{"ListenOverflows": int64(bh.ListenOverflows), "ListenDrops": int64(bh.ListenDrops)}
		if res.Kernel == nil {
			res.Kernel = &result.Kernel{}
		}
		res.Kernel.Findings = append(res.Kernel.Findings, findings(tuning.KernelFindings(d, "broker host", tuning.CPUWait{}))...)
	}
	if p := r.process(res); p != nil {
		if local {
			bh.Process = p
		} else {
			res.BrokerProcess = p
		}
	}
	res.BrokerHost = bh
}

// window returns the samples whose span ends inside [from, to] (all of them when none does).
func (r *remoteWatch) window(from, to time.Time) []remoteSample {
	var in []remoteSample
	for _, s := range r.samples {
		if !s.at.Before(from) && !s.at.After(to.Add(time.Second)) {
			in = append(in, s)
		}
	}
	if len(in) == 0 {
		return r.samples
	}
	return in
}

// process returns the broker process's figures from the endpoint, as the local sampler
// gives them (nil: no endpoint published them twice).
func (r *remoteWatch) process(res *result.Result) *result.BrokerProcess {
	p0, p1 := r.procFirst, r.procLast
	if p0 == nil || p1 == nil || len(r.cpuAt) < 2 {
		return nil
	}
	src := p1.Source
	for _, s := range r.sources {
		if slices.Contains(s.Kinds, "process-exporter") || slices.Contains(s.Kinds, "process") {
			src += " at " + s.URL
			break
		}
	}
	bp := &result.BrokerProcess{Source: src, CPUS: max(p1.CPUSeconds-p0.CPUSeconds, 0),
		RSSBytes: int64(p1.RSSBytes), RSSPeakBytes: int64(r.peakRSS), FDs: int(max(r.maxFDs, 0))}
	if d := r.cpuAt[len(r.cpuAt)-1].at.Sub(r.cpuAt[0].at).Seconds(); d > 0 {
		bp.CPUPercentAvg = 100 * bp.CPUS / d
	}
	for _, s := range r.samples {
		if s.iv.HasProcess {
			bp.CPUPercentPeak = max(bp.CPUPercentPeak, s.iv.ProcessCPUPercent)
		}
	}
	bp.CPUPerMessageUS = cpuPerMessage(r.cpuAt, res, bp.CPUS)
	if r.mostOpen > 0 && r.rssAtMost > p0.RSSBytes {
		bp.RSSPerConnectionBytes = (r.rssAtMost - p0.RSSBytes) / float64(r.mostOpen)
	}
	return bp
}

// busy returns the evidence that the broker's CPU was the limit over the measure window,
// from the endpoints' figures.
func (r *remoteWatch) busy(res *result.Result) []string {
	var ev []string
	bh := res.BrokerHost
	if bh == nil {
		return nil
	}
	if bh.CPUs > 0 && bh.CPUPercentAvg >= 100*busyShare {
		ev = append(ev, fmt.Sprintf("broker host CPU %.0f%% of its %d CPUs over the measure window (node_exporter)", bh.CPUPercentAvg, bh.CPUs))
	}
	p := bh.Process
	if p == nil && res.BrokerProcess != nil && res.BrokerProcess.Source != "/proc" {
		p = res.BrokerProcess
	}
	if p != nil {
		if perS, ok := windowCPUOf(r.cpuAt, res.MeasureFrom, res.MeasureTo); ok && perS >= busyShare {
			ev = append(ev, fmt.Sprintf("broker process CPU %.0f%% of a core over the measure window (%s): "+
				"the limit of a broker that runs on one thread (Mosquitto does)", 100*perS, termtext.Line(p.Source)))
		}
	}
	return ev
}
