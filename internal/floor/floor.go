package floor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/tuning"
)

// Config is what a floor run connects and for how long.
type Config struct {
	// Engine holds the brokers, the clients and their specs, as mqblast's engine would
	// get them (bench.EngineConfig); its Observer is not used. Engine.Loops is the number
	// of loops (0: one per core), as for the engine.
	Engine reactor.Config
	// Warmup runs from the start of publishing to the start of the window; the window
	// ends Duration after the start of publishing (the duration includes the warm-up, as
	// in mqblast run). Drain is how long the loops keep reading after the window.
	Warmup, Duration, Drain time.Duration
	// StartDelay is the time from the end of set-up to the start of publishing (default
	// 100 ms, as mqblast run).
	StartDelay time.Duration
}

// Schema names the floor's result document.
const Schema = "mqblast.floor/v1"

// Result is what a floor run counted. The window is the one mqblast run measures in:
// from Warmup after the start of publishing to Duration after it.
type Result struct {
	Schema          string  `json:"schema"`
	Clients         int     `json:"clients"`
	Loops           int     `json:"loops"`
	WindowS         float64 `json:"window_s"`
	CPUWindowS      float64 `json:"cpu_window_s"`     // rusage (user+sys) of the process over the window
	ReceivedWindow  int64   `json:"received_window"`  // PUBLISH packets read in the window
	PublishedWindow int64   `json:"published_window"` // PUBLISH packets written in the window
	Received        int64   `json:"received"`         // PUBLISH packets read, whole run
	Published       int64   `json:"published"`        // PUBLISH packets written, whole run
	// CPUPerReceivedUS is CPUWindowS per PUBLISH read in the window, in microseconds.
	CPUPerReceivedUS float64 `json:"cpu_per_received_us"`
	CPUS             float64 `json:"cpu_s"`       // rusage of the process over the whole run
	CPUSetupS        float64 `json:"cpu_setup_s"` // of which the connect and subscribe set-up
	LostConns        int64   `json:"lost_conns"`  // connections that failed or were closed by the broker while running
	LostExample      string  `json:"lost_example,omitempty"`
}

// floor is one run: its loops and the flags they read.
type floor struct {
	cfg      *Config
	epoch    time.Time
	loops    []*loop
	pubStart atomic.Int64 // engine clock of publishing's start (0: not yet)
	pubStop  atomic.Int64 // engine clock from which nothing is due (0: none)
	winFrom  atomic.Int64
	winTo    atomic.Int64
	stop     atomic.Bool
	maxIn    uint32
}

// now is the run's clock: nanoseconds since its start, monotonic.
func (f *floor) now() int64 { return int64(time.Since(f.epoch)) }

// Run connects every client of cfg, publishes on the plan's schedule through the window
// and disconnects. A set-up that fails (a connect, a CONNACK or SUBACK refused) ends the
// run with its error; a connection lost afterwards is counted in the result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	ec := &cfg.Engine
	if ec.Clients <= 0 || ec.Client == nil || len(ec.Brokers) == 0 {
		return nil, errors.New("floor: no clients or no broker: give a messaging scenario and --broker")
	}
	if cfg.Duration <= cfg.Warmup {
		return nil, fmt.Errorf("floor: duration %v is not longer than the warm-up %v: raise --duration", cfg.Duration, cfg.Warmup)
	}
	if cfg.StartDelay <= 0 {
		cfg.StartDelay = 100 * time.Millisecond
	}
	nl := ec.Loops
	if nl <= 0 {
		nl = runtime.NumCPU()
	}
	var brokers []netip.AddrPort
	for _, b := range ec.Brokers {
		ap, err := netip.ParseAddrPort(b)
		if err != nil {
			return nil, fmt.Errorf("floor: broker %q: want a numeric address:port (e.g. 127.0.0.1:1883): %w", b, err)
		}
		brokers = append(brokers, ap)
	}
	f := &floor{cfg: &cfg, epoch: time.Now(), maxIn: inboundLimit(ec)}
	cpuBefore := cpuTime()
	for i := 0; i < nl; i++ {
		l, err := newLoop(f, i, brokers)
		if err != nil {
			for _, l := range f.loops {
				l.closeAll()
				l.closeEventfd()
			}
			return nil, err
		}
		f.loops = append(f.loops, l)
	}
	// As the engine: one P more than loops, so that sysmon does not take a sleeping loop's P.
	if runtime.GOMAXPROCS(0) <= nl {
		runtime.GOMAXPROCS(nl + 1)
	}
	res := &Result{Schema: Schema, Clients: ec.Clients, Loops: nl}

	// Set-up: each loop connects its clients on its own goroutine, then runs.
	var wg sync.WaitGroup
	ready := make(chan error, nl)
	for _, l := range f.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.setup()
			ready <- err
			if err != nil {
				l.closeAll()
				return
			}
			l.run()
		}()
	}
	var setupErr error
	for range f.loops {
		if err := <-ready; err != nil && setupErr == nil {
			setupErr = err
		}
	}
	if setupErr != nil {
		f.shutdown()
		wg.Wait()
		f.closeEventfds()
		return nil, setupErr
	}
	res.CPUSetupS = (cpuTime() - cpuBefore).Seconds()

	start := f.now() + int64(cfg.StartDelay)
	from, to := start+int64(cfg.Warmup), start+int64(cfg.Duration)
	f.winFrom.Store(from)
	f.winTo.Store(to)
	f.pubStop.Store(to) // nothing due after the window is sent: the schedule's count is exact
	f.pubStart.Store(start)
	f.wake()
	interrupted := !f.sleepUntil(ctx, from)
	cpu0 := cpuTime()
	if !interrupted {
		interrupted = !f.sleepUntil(ctx, to)
	}
	cpu1 := cpuTime()
	at := f.now()
	if at < to { // interrupted
		f.pubStop.Store(max(at, 1))
	}
	if !interrupted {
		f.sleepUntil(ctx, at+int64(cfg.Drain))
	}
	f.shutdown()
	wg.Wait()
	f.closeEventfds()
	res.CPUS = (cpuTime() - cpuBefore).Seconds()
	res.WindowS = time.Duration(max(min(at, to)-from, 0)).Seconds()
	res.CPUWindowS = (cpu1 - cpu0).Seconds()
	for _, l := range f.loops {
		res.Received += l.received
		res.Published += l.published
		res.ReceivedWindow += l.rxWin
		res.PublishedWindow += l.txWin
		res.LostConns += l.lostN
		if res.LostExample == "" {
			res.LostExample = l.lostEx
		}
	}
	if res.ReceivedWindow > 0 {
		res.CPUPerReceivedUS = res.CPUWindowS * 1e6 / float64(res.ReceivedWindow)
	}
	if interrupted {
		return res, context.Canceled
	}
	return res, nil
}

// sleepUntil waits until engine time t; false if ctx ended first.
func (f *floor) sleepUntil(ctx context.Context, t int64) bool {
	d := time.Duration(t - f.now())
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// wake makes every loop read its control flags.
func (f *floor) wake() {
	for _, l := range f.loops {
		l.notify()
	}
}

// closeEventfds closes the loops' eventfds after every loop has ended.
func (f *floor) closeEventfds() {
	for _, l := range f.loops {
		l.closeEventfd()
	}
}

// shutdown tells the loops to disconnect and end.
func (f *floor) shutdown() {
	f.stop.Store(true)
	f.wake()
}

// inboundLimit is the engine's inbound limit, which a 5.0 CONNECT announces as its Maximum
// Packet Size (reactor's Config.MaxInbound default).
func inboundLimit(ec *reactor.Config) uint32 {
	if ec.MaxInbound > 0 {
		return uint32(ec.MaxInbound)
	}
	pl := ec.MaxPayload
	if pl <= 0 {
		pl = 64 << 10
	}
	return uint32(max(pl+64<<10, 1<<20))
}

// cpuTime returns the CPU time (user and system) of the process.
var cpuTime = tuning.SelfCPU
