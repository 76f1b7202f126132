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
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// ErrInterrupted reports a run stopped by its context (Ctrl-C); its result is partial.
var ErrInterrupted = errors.New("bench: run interrupted")

// Runner describes one run: connect every client (paced); then, for a
// Connections run, hold them for Duration with keepalive; for a messaging run, wait for
// every SUBACK, publish on the open-loop schedule through Warmup and Duration (the measure
// window), stop, Drain, and disconnect.
type Runner struct {
	Engine      reactor.Config // Observer is set by the run
	Duration    time.Duration
	Messaging   bool          // publishers publish: the messaging phases run
	Subscribers int           // clients that subscribe: the run waits for their SUBACKs
	Warmup      time.Duration // the first part of Duration, not measured
	Drain       time.Duration // after publishing stops, time for the last messages to arrive
	Interval    time.Duration // default 1 s
	ToolVersion string
	Scenario    []byte // the effective scenario as JSON, copied into the result
	// Progress receives one interval line per Interval (nil: none).
	Progress io.Writer
	// OnInterval, if set, receives each interval's snapshot (a worker process streams it to
	// its parent). The snapshot is the caller's to keep.
	OnInterval func(iv result.Interval, s *result.Snapshot)
	// StartGate, if set, is called once every subscription is in place and returns when
	// to start publishing: worker processes wait there for each other, so that nobody
	// publishes before every process's subscribers are subscribed.
	StartGate func() (time.Time, error)
	// Watch, if set, samples the host's kernel counters and the broker process once per
	// interval (nil: not watched; a worker process leaves that to its parent).
	Watch *Watch
	// Stream classifies a receiving client's stream of a publisher (Recorder.Stream); nil
	// accepts every stream.
	Stream func(client int, publisher uint32) (scenario.StreamKind, int)
}

// subscribeTimeout bounds the wait for SUBACKs.
const subscribeTimeout = 30 * time.Second

// Run performs the run. On ctx cancellation it disconnects, returns the partial result and
// ErrInterrupted. A result is returned whenever the engine started.
func (cr *Runner) Run(ctx context.Context) (*result.Result, error) {
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
	rec.Stream = cr.Stream
	cfg.Observer = rec
	eng, err := reactor.New(cfg)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	res := &result.Result{
		Schema: result.Schema, ToolVersion: cr.ToolVersion, StartedAt: time.Now().UTC(),
		Broker: cfg.Brokers, Scenario: cr.Scenario,
		Host: result.HostInfo{Hostname: host, Cores: runtime.NumCPU(), Kernel: kernelRelease(), Procs: 1,
			Clock: hostClock()},
		Connections: result.Connections{Target: cfg.Clients},
	}
	runtime.GC()
	debug.FreeOSMemory()
	rssBefore := rss()
	cpuBefore := cpuTime()
	if err := eng.Start(); err != nil {
		return nil, err
	}
	defer eng.Stop() //nolint:errcheck
	if cr.Watch != nil {
		cr.Watch.Start()
	}

	total := result.NewSnapshot()
	start := time.Now()
	var started atomic.Int64
	snaps := make([]*result.Snapshot, loops)
	for i := range snaps {
		snaps[i] = result.NewSnapshot()
	}
	// collect moves every loop's figures into total and into carry, which the next
	// interval line reports; the drain collects more often than intervals run.
	carry := result.NewSnapshot()
	collect := func() {
		eng.OnLoops(func(i int) { rec.Take(i, snaps[i]) })
		for _, x := range snaps {
			total.Add(x)
			carry.Add(x)
			x.Reset()
		}
	}
	var progress progressLine
	prevCPU, prevAt := cpuTime(), start
	interval := func() {
		collect()
		s := carry
		carry = result.NewSnapshot()
		cpu, now := cpuTime(), time.Now()
		s.CPUNS, s.RSSBytes, prevCPU = int64(cpu-prevCPU), rss(), cpu
		d := now.Sub(prevAt)
		prevAt = now
		iv := result.NewInterval(now.Sub(start).Seconds(), eng.Open(), s, d)
		if cr.Watch != nil {
			cr.Watch.Interval(&iv, cr.Progress)
		}
		res.Intervals = append(res.Intervals, iv)
		progress.print(cr.Progress, iv, cfg.Clients)
		if cr.OnInterval != nil {
			cr.OnInterval(iv, s)
		}
	}
	tick := time.NewTicker(cr.Interval)
	defer tick.Stop()
	// wait runs intervals until d passes, until ok returns true (checked every 50 ms), or
	// until ctx ends (it then returns false).
	wait := func(d time.Duration, ok func() bool) bool {
		end := time.NewTimer(d)
		defer end.Stop()
		poll := time.NewTicker(50 * time.Millisecond)
		defer poll.Stop()
		for {
			select {
			case <-ctx.Done():
				return false
			case <-end.C:
				return true
			case <-poll.C:
				if ok != nil && ok() {
					return true
				}
			case <-tick.C:
				interval()
			}
		}
	}

	// Connect phase.
	connDone := make(chan error, 1)
	go func() {
		connDone <- eng.Connect(ctx, func(n int) { started.Store(int64(n)) })
	}()
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

	var measureCPU time.Duration
	measureWait := time.Duration(-1) // not known
	publishing := false
	switch {
	case interrupted || eng.Open() == 0: // nothing to hold or publish on: fail fast
	case !cr.Messaging:
		interrupted = !wait(cr.Duration, nil)
	default:
		if cr.Subscribers > 0 {
			want := int64(cr.Subscribers)
			interrupted = !wait(subscribeTimeout, func() bool { return eng.Subscribed() >= want })
			if !interrupted && eng.Subscribed() < want {
				res.Errors = append(res.Errors, result.ErrorCount{Kind: "subscribe_timeout", Count: want - eng.Subscribed(),
					Example: fmt.Sprintf("%d of %d SUBACKs after %v", eng.Subscribed(), want, subscribeTimeout)})
			}
		}
		if interrupted {
			break
		}
		if n := eng.PacketLimited(); n > 0 {
			ex := fmt.Sprintf("%d connections: the broker's Maximum Packet Size is below this plan's PUBLISH; "+
				"their messages are not sent and count as unsent (too_large): lower payload_size", n)
			res.Errors = append(res.Errors, result.ErrorCount{Kind: "packet_too_large_for_broker", Count: n, Example: ex})
			if cr.Progress != nil {
				fmt.Fprintln(cr.Progress, "warning:", ex)
			}
		}
		delay := 100 * time.Millisecond
		if cr.StartGate != nil {
			at, err := cr.StartGate()
			if err != nil {
				res.Errors = append(res.Errors, result.ErrorCount{Kind: "start_gate", Count: 1, Example: err.Error()})
				interrupted = true
				break
			}
			delay = max(time.Until(at), 0)
		}
		pubStart := eng.StartPublishing(delay)
		rec.SetStart(pubStart.UnixNano())
		from := pubStart.Add(cr.Warmup)
		to := pubStart.Add(cr.Duration) // the duration includes the warm-up
		rec.SetWindow(from.UnixNano(), to.UnixNano())
		res.MeasureFrom, res.MeasureTo = from.UTC(), to.UTC()
		publishing = true
		interrupted = !wait(time.Until(from), nil)
		cpu0 := cpuTime()
		wait0, ok0 := runDelay()
		if !interrupted {
			interrupted = !wait(time.Until(to), nil)
		}
		measureCPU = cpuTime() - cpu0
		wait1, ok1 := runDelay()
		if ok0 && ok1 {
			measureWait = max(wait1-wait0, 0)
		}
		eng.StopPublishing()
		if interrupted { // the window ends at the interrupt: rates divide by what ran
			now := time.Now()
			if now.Before(to) {
				rec.SetWindow(from.UnixNano(), max(now.UnixNano(), from.UnixNano()))
				res.MeasureTo = now.UTC()
				if now.Before(from) {
					res.MeasureTo = from.UTC()
				}
			}
		}
		if !interrupted {
			// Drain: until every publisher has written and had acknowledged what was due
			// before the stop and every expected copy arrived, or Drain passed. A run
			// whose plan expects no copies (publish only) ends as soon as its publishers
			// are done.
			interrupted = !wait(cr.Drain, func() bool {
				if eng.Behind() {
					return false
				}
				collect()
				return total.Received >= total.Expected
			})
		}
	}
	if ctx.Err() != nil {
		interrupted = true
	}

	// Disconnect phase: every scheduled message is accounted for first.
	eng.FinishPublishing(interrupted)
	eng.Disconnect(5 * time.Second)
	// The last, partial interval: what arrived or was written since the last tick (the
	// drain's tail, the disconnects), so that the intervals add up to the run.
	interval()
	total.Add(rec.Finish())
	res.EndedAt = time.Now().UTC()
	res.Interrupted = interrupted
	res.SetTotal(total)
	res.Connections.ConnectPhaseS = connectPhase.Seconds()
	if connectPhase > 0 {
		res.Connections.ConnectRatePerS = float64(total.Connected) / connectPhase.Seconds()
	}
	cpu := cpuTime() - cpuBefore
	res.Client.CPUS = cpu.Seconds()
	res.Client.MaxRSSBytes = maxRSS()
	if n := started.Load(); n > 0 {
		res.Client.CPUPerConnectUS = float64(cpuConnect.Microseconds()) / float64(n)
	}
	if total.Connected > 0 && rssHeld > rssBefore {
		res.Client.RSSPerConnectionBytes = float64(rssHeld-rssBefore) / float64(total.Connected)
	}
	if publishing && res.MeasureTo.After(res.MeasureFrom) {
		measured(res, total, res.MeasureTo.Sub(res.MeasureFrom), measureCPU, measureWait)
	}
	if cr.Watch != nil {
		cr.Watch.Finish(res)
	}
	if interrupted {
		return res, ErrInterrupted
	}
	return res, nil
}

// ConnectBar is a progress writer that draws the connect phase as one bar (on a
// terminal): until every client has connected or failed, the connect phase's interval lines
// go to Connecting instead of Write; the interval lines follow as usual after it.
type ConnectBar interface {
	io.Writer
	Connecting(p ConnectProgress)
}

// ConnectProgress is the connect phase so far, at an interval's end.
type ConnectProgress struct {
	TS          float64 // seconds into the run
	Target      int64
	Connected   int64   // sessions established so far (reconnects not counted)
	Established int64   // sessions open now
	Failed      int64   // clients that never connected so far
	Dropped     int64   // established connections lost so far
	PerS        float64 // connects per second in the interval
	Done        bool    // every client has connected or failed: the bar's last drawing
}

// progressLine prints interval lines with running totals.
type progressLine struct {
	barDone            bool // the connect bar has drawn its last
	connects           int64
	failed, dropped    int64
	expected, received int64 // copies expected so far, and received
	unsent, unexpected int64
	messages           bool // a message was sent or received: print message lines
}

func (p *progressLine) print(w io.Writer, iv result.Interval, target int) {
	p.connects += iv.Connected
	p.failed += iv.Failed
	p.dropped += iv.Dropped
	p.expected += iv.Expected
	p.received += iv.Received
	p.unsent += iv.Unsent
	p.unexpected += iv.Unexpected
	if w == nil {
		return
	}
	if iv.Published > 0 || iv.Received > 0 {
		p.messages = true
	}
	if p.messages {
		lat := "-"
		if iv.LatencyUS.Count > 0 {
			lat = "p50 " + result.Micros(iv.LatencyUS.P50) + " p99 " + result.Micros(iv.LatencyUS.P99)
		}
		extra := ""
		if p.unsent > 0 {
			extra += fmt.Sprintf("  unsent %d", p.unsent)
		}
		if p.unexpected > 0 {
			extra += fmt.Sprintf("  unexpected %d", p.unexpected)
		}
		fmt.Fprintf(w, "%6.1fs  sent %.0f/s  received %.0f/s  latency %s  missing %d%s  established %d/%d  dropped %d\n",
			iv.TS, iv.PublishPerS, iv.ReceivePerS, lat, max(p.expected-p.received, 0), extra, iv.Established, target, p.dropped)
		return
	}
	if b, ok := w.(ConnectBar); ok && !p.barDone {
		p.barDone = p.connects+p.failed >= int64(target)
		b.Connecting(ConnectProgress{TS: iv.TS, Target: int64(target), Connected: p.connects, Established: iv.Established,
			Failed: p.failed, Dropped: p.dropped, PerS: iv.ConnectPerS, Done: p.barDone})
		return
	}
	lat := "-"
	if iv.Connected > 0 {
		lat = "p50 " + result.Micros(iv.ConnectLatencyUS.P50) + " p99 " + result.Micros(iv.ConnectLatencyUS.P99)
	}
	fmt.Fprintf(w, "%6.1fs  established %d/%d  +%d/s  failed %d  dropped %d  connect %s\n",
		iv.TS, iv.Established, target, int64(iv.ConnectPerS), p.failed, p.dropped, lat)
}
