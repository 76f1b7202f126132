package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/reactor"
)

// ErrInterrupted reports a run stopped by its context (Ctrl-C); its result is partial.
var ErrInterrupted = errors.New("bench: run interrupted")

// ConnRun describes a Connections run: connect every client (paced), hold them for Hold
// with keepalive, disconnect.
type ConnRun struct {
	Engine      reactor.Config // Observer is set by the run
	Hold        time.Duration
	Interval    time.Duration // default 1 s
	ToolVersion string
	Scenario    []byte // the effective scenario as JSON, copied into the result
	// Progress receives one interval line per Interval (nil: none).
	Progress io.Writer
	// OnInterval, if set, receives each interval's snapshot (a worker process streams it to
	// its parent). The snapshot is the caller's to keep.
	OnInterval func(iv Interval, s *Snapshot)
}

// Run performs the run. On ctx cancellation it disconnects, returns the partial result and
// ErrInterrupted. A result is returned whenever the engine started.
func (cr *ConnRun) Run(ctx context.Context) (*Result, error) {
	if cr.Interval <= 0 {
		cr.Interval = time.Second
	}
	cfg := cr.Engine
	loops := cfg.Loops
	if loops <= 0 {
		loops = runtime.NumCPU()
		cfg.Loops = loops
	}
	rec := NewRecorder(loops)
	cfg.Observer = rec
	eng, err := reactor.New(cfg)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	res := &Result{
		Schema: Schema, ToolVersion: cr.ToolVersion, StartedAt: time.Now().UTC(),
		Broker: cfg.Brokers, Scenario: cr.Scenario,
		Host:        HostInfo{Hostname: host, Cores: runtime.NumCPU(), Kernel: kernelRelease(), Procs: 1},
		Connections: Connections{Target: cfg.Clients},
	}
	runtime.GC()
	debug.FreeOSMemory()
	rssBefore := rss()
	cpuBefore := cpuTime()
	if err := eng.Start(); err != nil {
		return nil, err
	}
	defer eng.Stop() //nolint:errcheck

	total := NewSnapshot()
	start := time.Now()
	var started atomic.Int64
	take := func() *Snapshot {
		s := NewSnapshot()
		snaps := make([]*Snapshot, loops)
		eng.OnLoops(func(i int) {
			snaps[i] = NewSnapshot()
			rec.Take(i, snaps[i])
		})
		for _, x := range snaps {
			s.Add(x)
		}
		total.Add(s)
		return s
	}
	var progress progressLine
	interval := func() {
		s := take()
		iv := NewInterval(time.Since(start).Seconds(), eng.Open(), s, cr.Interval)
		res.Intervals = append(res.Intervals, iv)
		progress.print(cr.Progress, iv, cfg.Clients)
		if cr.OnInterval != nil {
			cr.OnInterval(iv, s)
		}
	}

	// Connect phase.
	connDone := make(chan error, 1)
	go func() {
		connDone <- eng.Connect(ctx, func(n int) { started.Store(int64(n)) })
	}()
	tick := time.NewTicker(cr.Interval)
	defer tick.Stop()
	interrupted := false
connect:
	for {
		select {
		case err := <-connDone:
			if err != nil {
				interrupted = true
			}
			break connect
		case <-tick.C:
			interval()
		}
	}
	connectPhase := time.Since(start)
	cpuConnect := cpuTime() - cpuBefore
	// What an idle connection costs is what stays live: collect the connect phase's garbage
	// and return it to the OS before reading the resident set.
	runtime.GC()
	debug.FreeOSMemory()
	rssHeld := rss()

	// Hold phase (nothing to hold when no connection is open: fail fast).
	if !interrupted && cr.Hold > 0 && eng.Open() > 0 {
		holdEnd := time.NewTimer(cr.Hold)
	hold:
		for {
			select {
			case <-ctx.Done():
				interrupted = true
				break hold
			case <-holdEnd.C:
				break hold
			case <-tick.C:
				interval()
			}
		}
		holdEnd.Stop()
	}
	if ctx.Err() != nil {
		interrupted = true
	}

	// Disconnect phase.
	eng.Disconnect(5 * time.Second)
	take()
	res.EndedAt = time.Now().UTC()
	res.Interrupted = interrupted
	res.fill(total)
	res.Connections.ConnectPhaseS = connectPhase.Seconds()
	if connectPhase > 0 {
		res.Connections.ConnectRatePerS = float64(total.Connected) / connectPhase.Seconds()
	}
	cpu := cpuTime() - cpuBefore
	res.Client = ClientInfo{CPUS: cpu.Seconds(), MaxRSSBytes: maxRSS()}
	if n := started.Load(); n > 0 {
		res.Client.CPUPerConnectUS = float64(cpuConnect.Microseconds()) / float64(n)
	}
	if total.Connected > 0 && rssHeld > rssBefore {
		res.Client.RSSPerConnectionBytes = float64(rssHeld-rssBefore) / float64(total.Connected)
	}
	if interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// NewInterval makes the interval record of snapshot s, taken over d and ending at ts
// seconds into the run with open sessions established.
func NewInterval(ts float64, open int64, s *Snapshot, d time.Duration) Interval {
	return Interval{
		TS: ts, Established: open, Connected: s.Connected, Failed: s.FailedTotal(),
		Dropped: s.DroppedTotal(), ConnectPerS: float64(s.Connected) / d.Seconds(),
		ConnectLatencyUS: s.ConnectLatency.Summary(),
	}
}

// progressLine prints interval lines with running totals.
type progressLine struct{ failed, dropped int64 }

func (p *progressLine) print(w io.Writer, iv Interval, target int) {
	p.failed += iv.Failed
	p.dropped += iv.Dropped
	if w == nil {
		return
	}
	lat := "-"
	if iv.Connected > 0 {
		lat = "p50 " + us(iv.ConnectLatencyUS.P50) + " p99 " + us(iv.ConnectLatencyUS.P99)
	}
	fmt.Fprintf(w, "%6.1fs  established %d/%d  +%d/s  failed %d  dropped %d  connect %s\n",
		iv.TS, iv.Established, target, int64(iv.ConnectPerS), p.failed, p.dropped, lat)
}

// us formats microseconds for humans.
func us(v int64) string {
	switch {
	case v >= 10_000_000:
		return fmt.Sprintf("%.0fs", float64(v)/1e6)
	case v >= 1_000_000:
		return fmt.Sprintf("%.2fs", float64(v)/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.1fms", float64(v)/1e3)
	default:
		return fmt.Sprintf("%dµs", v)
	}
}
