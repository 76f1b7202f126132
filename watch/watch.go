package watch

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/tuning/exporter"
)

// Watch samples the host while a run goes on: the kernel's network counters of the client's namespace, and of the broker's
// when the broker is a local process in another namespace, and the broker process's own
// CPU, memory and descriptors (New's pid) or its cgroup's (New's cgroup). It is sampled
// once per interval by whoever prints the intervals (bench's Runner.Run, or its Gather for
// worker processes) and fills the result at the end. Not safe for concurrent use.
type Watch struct {
	// pid is the broker's process (0: not sampled); cgroup its cgroup ("": none), read as
	// tuning.ReadCgroup does.
	pid    int
	cgroup string

	procSys, sysFS string // "/proc/sys" and "/sys/fs/cgroup" (tests use fake trees)
	clientRoot     string
	brokerRoot     string // "" when the broker shares the client's namespace, or is not local

	k0c, prevC tuning.KernelCounters
	k0b, prevB tuning.KernelCounters
	seen       map[string]bool // findings already printed

	started   time.Time
	last      time.Time
	p0, prevP tuning.ProcessSample
	cg0       tuning.CgroupSample
	procErr   error
	cgErr     error
	peakPct   float64
	peakRSS   int64
	mostOpen  int64 // the most connections an interval saw established
	rssAtMost int64 // the broker's RSS then
	fds       int
	cpuAt     []cpuSample // the broker's CPU at each interval

	remote *remoteWatch // the broker host's endpoints (SetRemote); nil: none
	sys    *sysWatch    // the broker's $SYS (ReadBrokerSys; nil: not read)
}

// cpuSample is the broker's CPU time at an instant.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// New returns a watch of the host, and of the broker process pid (0: none) and cgroup
// ("": none).
func New(pid int, cgroup string) *Watch {
	return &Watch{pid: pid, cgroup: cgroup, procSys: "/proc/sys", sysFS: "/sys/fs/cgroup",
		clientRoot: "/proc/self", seen: map[string]bool{}}
}

// Start takes the first readings; call it before the connect phase.
func (w *Watch) Start() {
	w.started = time.Now()
	w.last = w.started
	w.sysStart()
	if k, err := tuning.ReadKernel(w.clientRoot, w.procSys); err == nil {
		w.k0c, w.prevC = k, k
	}
	if w.pid > 0 {
		root := "/proc/" + strconv.Itoa(w.pid)
		if !tuning.SameNetNS(w.clientRoot, root) {
			if k, err := tuning.ReadKernel(root, w.procSys); err == nil {
				w.brokerRoot = root
				w.k0b, w.prevB = k, k
			}
		}
		w.p0, w.procErr = tuning.ReadProcess(w.pid)
		w.prevP = w.p0
		w.peakRSS = w.p0.RSSBytes
	}
	if w.cgroup != "" {
		w.cg0, w.cgErr = tuning.ReadCgroup(w.sysFS, w.cgroup)
	}
	if w.remote != nil {
		w.remote.start()
	}
}

// Interval samples at the end of interval iv, fills its kernel deltas and broker figures,
// and writes to progress (if not nil) each kernel finding the first time it appears.
func (w *Watch) Interval(iv *result.Interval, progress io.Writer) {
	now := time.Now()
	dt := now.Sub(w.last).Seconds()
	w.last = now
	var scraped chan exporter.Reading
	if w.remote != nil { // the endpoints read their /proc while this one is read
		scraped = make(chan exporter.Reading, 1)
		go func() { scraped <- w.remote.s.Scrape(context.Background()) }()
	}
	w.sysInterval(iv, progress)
	var found []tuning.KernelFinding
	if w.prevC != nil {
		if k, err := tuning.ReadKernel(w.clientRoot, w.procSys); err == nil {
			d := k.Delta(w.prevC)
			w.prevC = k
			iv.Kernel = nonZero(iv.Kernel, "", d)
			found = append(found, tuning.KernelFindings(d, w.clientWhere(), tuning.CPUWait{})...)
		}
	}
	if w.brokerRoot != "" {
		if k, err := tuning.ReadKernel(w.brokerRoot, w.procSys); err == nil {
			d := k.Delta(w.prevB)
			w.prevB = k
			iv.Kernel = nonZero(iv.Kernel, "broker.", d)
			found = append(found, tuning.KernelFindings(d, "broker host", tuning.CPUWait{})...)
		}
	}
	for _, f := range found {
		if !w.seen[f.Counter+f.Where] {
			w.seen[f.Counter+f.Where] = true
			if progress != nil {
				fmt.Fprintf(progress, "%6.1fs  kernel: %s\n", iv.TS, f)
			}
		}
	}
	w.sampleProcess(iv, now, dt)
	if w.remote != nil {
		w.remote.interval(iv, <-scraped, progress, w.local())
	}
}

// local reports whether the broker process is sampled here, through /proc.
func (w *Watch) local() bool { return w.pid > 0 && (w.procErr == nil || w.prevP != w.p0) }

// sampleProcess samples the local broker process at now, dt seconds after the last sample.
func (w *Watch) sampleProcess(iv *result.Interval, now time.Time, dt float64) {
	if w.pid > 0 && w.procErr == nil {
		p, err := tuning.ReadProcess(w.pid)
		if err != nil {
			w.procErr = err // the broker went away: keep what was sampled
			return
		}
		if dt > 0 {
			iv.BrokerCPUPercent = 100 * (p.CPU - w.prevP.CPU).Seconds() / dt
			w.peakPct = max(w.peakPct, iv.BrokerCPUPercent)
		}
		iv.BrokerRSSBytes = p.RSSBytes
		if q, _, err := tuning.CPUQuota(filepath.Dir(w.procSys), w.sysFS, w.pid); err == nil {
			iv.BrokerCPUQuota = q
		}
		w.peakRSS = max(w.peakRSS, p.RSSBytes, p.HWMBytes)
		w.fds = max(w.fds, p.FDs)
		if iv.Established > w.mostOpen {
			w.mostOpen, w.rssAtMost = iv.Established, p.RSSBytes
		}
		w.prevP = p
		w.cpuAt = append(w.cpuAt, cpuSample{now, p.CPU})
	}
}

// windowCPUOf returns the broker's CPU per second over the samples inside [from, to]: the
// steady state of the measure window, without the connect and disconnect phases.
func windowCPUOf(at []cpuSample, from, to time.Time) (perSecond float64, ok bool) {
	var a, b *cpuSample
	for i := range at {
		x := &at[i]
		if x.at.Before(from) || x.at.After(to) {
			continue
		}
		if a == nil {
			a = x
		}
		b = x
	}
	if a == nil || b == a {
		return 0, false
	}
	return (b.cpu - a.cpu).Seconds() / b.at.Sub(a.at).Seconds(), true
}

func (w *Watch) clientWhere() string {
	if w.pid > 0 && w.brokerRoot == "" {
		return "client and broker host" // a local broker in the client's namespace
	}
	return "client host"
}

// nonZero adds the non-zero counters of d (gauges left out) to m under prefix.
func nonZero(m map[string]int64, prefix string, d tuning.KernelCounters) map[string]int64 {
	for k, v := range d {
		if v == 0 || tuning.IsGauge(k) {
			continue
		}
		if m == nil {
			m = map[string]int64{}
		}
		m[prefix+k] = v
	}
	return m
}

// Finish fills the result's kernel deltas over the run and their findings, broker_process
// and broker_busy: the evidence the run's verdicts are judged from (result.Judge, which
// makes host.limited of the findings). Call it once, after the run.
func (w *Watch) Finish(res *result.Result) {
	w.sysFinish(res)
	if w.k0c != nil {
		wait := clientWait(res)
		k := &result.Kernel{Client: map[string]int64(w.prevC.Delta(w.k0c)), SameNamespace: w.brokerRoot == ""}
		k.Findings = findings(tuning.KernelFindings(w.prevC.Delta(w.k0c), w.clientWhere(), wait))
		if w.brokerRoot != "" {
			b := w.prevB.Delta(w.k0b)
			k.Broker = map[string]int64(b)
			k.Findings = append(k.Findings, findings(tuning.KernelFindings(b, "broker host", wait))...)
		}
		res.Kernel = k
	}
	if w.local() {
		bp := &result.BrokerProcess{Source: "/proc", PID: w.pid, CPUS: (w.prevP.CPU - w.p0.CPU).Seconds(),
			RSSBytes: w.prevP.RSSBytes, RSSPeakBytes: w.peakRSS, FDs: w.fds, CPUPercentPeak: w.peakPct}
		if d := w.last.Sub(w.started).Seconds(); d > 0 {
			bp.CPUPercentAvg = 100 * bp.CPUS / d
		}
		if w.procErr != nil {
			bp.Error = w.procErr.Error()
		}
		bp.CPUPerMessageUS = cpuPerMessage(w.cpuAt, res, bp.CPUS)
		if w.mostOpen > 0 && w.rssAtMost > w.p0.RSSBytes {
			bp.RSSPerConnectionBytes = float64(w.rssAtMost-w.p0.RSSBytes) / float64(w.mostOpen)
		}
		res.BrokerProcess = bp
	}
	if w.cgroup != "" {
		if res.BrokerProcess == nil {
			res.BrokerProcess = &result.BrokerProcess{}
		}
		cg := &result.CgroupFigures{Path: w.cgroup}
		if w.cgErr == nil {
			s, err := tuning.ReadCgroup(w.sysFS, w.cgroup)
			if err == nil {
				cg.CPUS = (s.CPU - w.cg0.CPU).Seconds()
				cg.MemoryBytes, cg.MemoryPeakBytes = s.MemoryBytes, s.MemoryPeakBytes
			} else {
				cg.Error = err.Error()
			}
		} else {
			cg.Error = w.cgErr.Error()
		}
		res.BrokerProcess.Cgroup = cg
	}
	if w.remote != nil {
		w.remote.finish(res, w.local())
	}
	w.busy(res)
}

// busy fills the verdict on the broker's CPU from whatever watched the broker: its host's
// endpoints, or its process (local or through an endpoint).
func (w *Watch) busy(res *result.Result) {
	var ev []string
	if w.local() {
		// Its limit: a core (a broker that runs on one thread, as Mosquitto does), or its
		// cgroup's CPU quota when that is less (a container's CPU limit).
		quota, dir, _ := tuning.CPUQuota(filepath.Dir(w.procSys), w.sysFS, w.pid)
		perS, ok := windowCPUOf(w.cpuAt, res.MeasureFrom, res.MeasureTo)
		switch {
		case ok && quota > 0 && quota < 1 && perS+cpuSlack(res) >= busyShare*quota:
			ev = append(ev, fmt.Sprintf("broker process CPU %.1f%% of a core over the measure window (pid %d, /proc): "+
				"%.0f%% of the %.3g of a core its cgroup's CPU quota allows (%s)", 100*perS, w.pid, 100*perS/quota, quota, dir))
		case ok && perS >= busyShare:
			ev = append(ev, fmt.Sprintf("broker process CPU %.0f%% of a core over the measure window (pid %d, /proc): "+
				"the limit of a broker that runs on one thread (Mosquitto does)", 100*perS, w.pid))
		}
	}
	if w.remote != nil {
		ev = append(ev, w.remote.busy(res)...)
	}
	if res.BrokerProcess == nil && res.BrokerHost == nil {
		return
	}
	res.BrokerBusy = &result.BrokerBusy{Busy: len(ev) > 0, Evidence: ev}
}

// cpuSlack is how far a process's CPU share over r's measure window may be from the truth
// from /proc's resolution alone (its two ends): next to a quota of a few percent of a core
// a tick is a fifteenth of 3 s of it.
func cpuSlack(r *result.Result) float64 {
	if w := r.MeasureTo.Sub(r.MeasureFrom).Seconds(); w > 0 {
		return 2 * tuning.ProcessCPUResolution().Seconds() / w
	}
	return 0
}

// cpuPerMessage returns the broker's CPU per message it handled (taken in and delivered):
// over the samples inside the measure window, or, with fewer than two there, cpu over the
// whole run.
func cpuPerMessage(at []cpuSample, res *result.Result, cpu float64) float64 {
	rate := res.Throughput.PublishPerS + res.Throughput.ReceivePerS
	if perS, ok := windowCPUOf(at, res.MeasureFrom, res.MeasureTo); ok && rate > 0 {
		return perS * 1e6 / rate
	}
	if n := res.Messages.Published + res.Messages.Received + res.Messages.Duplicated; n > 0 {
		return cpu * 1e6 / float64(n)
	}
	return 0
}

// clientWait is the client's wait for a CPU over the measure window, the hint a late-ACK
// finding quotes (none when the window or the wait was not measured).
func clientWait(res *result.Result) tuning.CPUWait {
	if res.Throughput.WindowS <= 0 || res.Client.RunDelayS <= 0 {
		return tuning.CPUWait{}
	}
	return tuning.CPUWait{Wait: time.Duration(res.Client.RunDelayS * float64(time.Second)),
		Span: time.Duration(res.Throughput.WindowS * float64(time.Second))}
}

// findings converts tuning's kernel findings into the result document's.
func findings(fs []tuning.KernelFinding) []result.KernelFinding {
	if len(fs) == 0 {
		return nil
	}
	out := make([]result.KernelFinding, len(fs))
	for i, f := range fs {
		out[i] = result.KernelFinding(f)
	}
	return out
}
