package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
	"github.com/mqblast/mqblast/watch"
)

// ErrInterrupted reports a run stopped by its context (Ctrl-C); its result is partial.
var ErrInterrupted = fail.ErrInterrupted

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
	// its parent). The snapshot is the caller's to keep, unless StreamOnly.
	OnInterval func(iv result.Interval, s *result.Snapshot)
	// StreamOnly hands the intervals to OnInterval only: the result carries none. A worker
	// process's parent merges them from its lines, and a worker that kept them would hold
	// every interval of the run (its groups' too) beside the connections it measures. Its
	// OnInterval must not keep the snapshot: it is emptied and reused once OnInterval returns.
	StreamOnly bool
	// onHeld, for tests, is called once the resident set after the connect phase is read.
	onHeld func(*run)
	// maxDrain, for tests, bounds the drain past Drain in place of MaxDrain (0: MaxDrain).
	maxDrain time.Duration
	// StartGate, if set, is called once every subscription is in place and returns when
	// to start publishing: worker processes wait there for each other, so that nobody
	// publishes before every process's subscribers are subscribed.
	StartGate func() (time.Time, error)
	// HoldGate, if set, is called once a Connections run's clients have their verdicts and
	// returns when the hold starts: worker processes, which dial in turns (Plan.Part), wait
	// there for each other, so that every process holds its connections through the same
	// Duration, the last dialed included.
	HoldGate func() (time.Time, error)
	// Watch, if set, samples the host's kernel counters and the broker process once per
	// interval (nil: not watched; a worker process leaves that to its parent).
	Watch *watch.Watch
	// Stream classifies a receiving client's stream of a publisher (Recorder.Stream); nil
	// accepts every stream.
	Stream func(client int, publisher uint32) (scenario.StreamKind, int)
	// StreamCycle says which messages of a publisher that cycles over topics an expected
	// stream takes (Recorder.StreamCycle); nil: every message.
	StreamCycle func(client int, publisher uint32) (positions []int, n int)
	// StreamAlso gives a client's other streams of such a publisher (Recorder.StreamAlso).
	StreamAlso func(client int, publisher uint32) []scenario.StreamPart
	// AnyRun accepts measured copies of any run as this run's (Recorder.AnyRun): for a
	// plan that does not know its publishers, when their run identity was not given.
	// Otherwise a copy whose header does not carry Engine.RunTag is another run's.
	AnyRun bool
	// RetainedLate, when above 0, says that every subscription made that long after
	// publishing began should get retained messages (Recorder.RetainedLate).
	RetainedLate time.Duration
	// Placement, if set, places a part of a run in the whole (Recorder.Placement): its
	// result then carries what crosses parts (result.Join).
	Placement *Placement
	// Describe, if set, gives a client's id and the topic it publishes to, by its index in
	// the plan: the result names its silent publishers with them (Recorder.Silent).
	Describe func(client int) (id, topic string)
	// Stages, if set, change the publishers' rate through the run (scenario's
	// parameters.stages, whose total is Duration); BaseRate is the rate of each publisher
	// the engine's schedule was built for (the stages' peak), the rate scale's 1.
	Stages   []scenario.Stage
	BaseRate float64
	// Steerable makes the run's rate changeable while it publishes (Steer): it records
	// its plan's rate as a stage when it has none, and its intervals follow the start of
	// publishing. A plan whose publishers have no one rate (BaseRate 0) is not.
	Steerable bool
	steer     steerSlot                  // set while it publishes
	clock     atomic.Pointer[stageClock] // its stages, once it publishes
	// Controller, if set, drives the publish rate while the run publishes (a search for
	// the broker's limit): it is called once, in a goroutine of its own, when publishing
	// starts, with the engine's rate control, the instant publishing started and the one
	// intervals are timed from (their t_s); the intervals are aligned to the start of
	// publishing. The measure phase ends when it returns, at Duration, or at the context's
	// end (which it sees too); the context it is given ends with the phase, and the phase
	// waits for it to return.
	Controller func(ctx context.Context, rc RateControl, pubStart, runStart time.Time)
	// ConnectController, if set, drives the connect rate of the connect phase (a search
	// for the broker's connection limit): the phase starts paused, and it is called once,
	// in a goroutine of its own, with the engine's connect control and the instant
	// intervals are timed from. The connect phase ends when it returns (the clients not
	// dialed by then never are) or when every client has its verdict and it returned.
	ConnectController func(ctx context.Context, cc ConnectControl, runStart time.Time)
	// OnMeasure, if set, is told the span a soak of the run judges as soon as the run knows
	// it, before the first interval in it: the measure window (warm-up excluded) of a
	// messaging run, the hold of a Connections run from the end of its connect phase; in
	// seconds from the run's start (StartedAt, the intervals' t_s).
	OnMeasure func(from, to float64)
	// AcceptDowngrade runs a plan the broker cannot serve as it is at what the broker
	// grants (its 5.0 CONNACK's Maximum QoS, no retain, no shared or wildcard
	// subscriptions), and says so in the result's broker_behaviour. Without it such a run
	// ends after the connect phase with the error broker_lacks.
	AcceptDowngrade bool
	// Groups, if set, are the client groups of a mixed run: the result then has each
	// group's figures (result.Group).
	Groups *Groups
	// Storms are reconnect storms, each at its time from the start of publishing
	// (reactor.Engine.Churn).
	Storms []Storm
}

// Storm is a reconnect storm of a group of a mixed run (scenario.Plan.Storms).
type Storm struct {
	At      time.Duration // from the start of publishing
	Clean   bool          // the clients come back with a clean session
	Down    time.Duration // how long they stay away
	Group   int           // index in Groups.Info
	Clients int           // of this run (or part of a run)
	Pick    func(client int) bool
	// Rate, if above 0, is steady churn: from At to the end of the duration, Rate clients
	// per second by position (Pos: a client's place among the Size of the whole storm, -1:
	// not one of them), round and round.
	Rate float64
	Pos  func(client int) int
	Size int
}

// Groups maps the clients and publishers of a mixed run's plan to their groups
// (scenario.Plan.GroupTables) and names the groups.
type Groups struct {
	Info      []result.GroupInfo
	Client    scenario.GroupRuns // by client of the plan
	Publisher scenario.GroupRuns // by publisher number
	Share     []uint8            // by share index (scenario.Plan.ShareGroups)
}

// RateControl changes the publish rate of a running schedule: reactor.Engine.SetRate.
type RateControl interface {
	SetRate(at time.Time, scale float64, ramp time.Duration) error
}

// ConnectControl changes the pace of a connect phase: reactor.Engine's.
type ConnectControl interface {
	SetConnectRate(rate float64) error
	PauseConnect()
	ConnectPending() int64
}

// subscribeTimeout bounds the wait for SUBACKs.
const subscribeTimeout = 30 * time.Second

// Run performs the run. On ctx cancellation it disconnects, returns the partial result and
// ErrInterrupted. A result is returned whenever the engine started.
func (cr *Runner) Run(ctx context.Context) (*result.Result, error) {
	r, err := cr.start(ctx)
	if err != nil {
		return nil, err
	}
	defer r.eng.Stop() //nolint:errcheck
	defer r.src.tick.Stop()
	// A phase that ends early (the context ended, the start gate failed) interrupts the
	// run: the later phases do not run, and every client still disconnects.
	interrupted := r.phases() != nil || ctx.Err() != nil
	r.stopStorms()
	r.disconnect(interrupted)
	r.finish(interrupted)
	if interrupted {
		return r.res, ErrInterrupted
	}
	return r.res, nil
}

// run is one Runner.Run under way: the engine, its recorders, the intervals so far and
// what the phases measure for the result.
type run struct {
	*Runner
	ctx context.Context
	eng *reactor.Engine
	rec *Recorder
	src *recorderSource
	log *intervalLog
	res *result.Result

	rssBefore, rssHeld    int64         // this process's anonymous resident memory before and after the connect phase
	cpuBefore, cpuConnect time.Duration // its CPU time before the run, and over the connect phase
	connectPhase          time.Duration
	started               atomic.Int64  // clients the connect phase started
	publishing            bool          // the measure phase started publishing
	measureCPU            time.Duration // this process's CPU time over the measure window
	measureWait           time.Duration // its wait for a CPU over the window; -1: not known
	stages                *stageClock   // a staged run's stages, once it publishes
	storms                stormRun
	owed                  []int64 // copies per second still arriving when the drain ended (drainEnded)
}

// stormRun is the reconnect storms under way: one goroutine each, waiting for its time.
type stormRun struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	ended []atomic.Int64 // connections each storm ended; -1: it did not come
}

// startStorms starts the storms' timers, from pubStart.
func (r *run) startStorms(pubStart time.Time) {
	if len(r.Storms) == 0 {
		return
	}
	sr := &r.storms
	sr.stop = make(chan struct{})
	sr.ended = make([]atomic.Int64, len(r.Storms))
	for k, st := range r.Storms {
		sr.ended[k].Store(-1)
		sr.wg.Add(1)
		go func() {
			defer sr.wg.Done()
			t := time.NewTimer(time.Until(pubStart.Add(st.At)))
			defer t.Stop()
			select {
			case <-t.C:
			case <-sr.stop:
				return
			}
			if st.Rate > 0 {
				if r.Progress != nil {
					fmt.Fprintf(r.Progress, "churn of group %s: %g clients a second drop and reconnect\n", r.Groups.Info[st.Group].Name, st.Rate)
				}
				sr.ended[k].Store(0)
				r.churn(&sr.ended[k], st, pubStart.Add(r.Duration), sr.stop)
				return
			}
			n := r.eng.Churn(st.Pick, st.Clean, st.Down)
			sr.ended[k].Store(n)
			if r.Progress != nil {
				fmt.Fprintf(r.Progress, "reconnect storm of group %s: %d connections ended, reconnecting\n", r.Groups.Info[st.Group].Name, n)
			}
		}()
	}
}

// churn is steady churn st from now to end (or stop): every tick, the positions the rate
// has reached since the last one drop (those connected) and come back, adding to ended. It
// takes none later than its down time and a tick before end, so that each is back by then.
func (r *run) churn(ended *atomic.Int64, st Storm, end time.Time, stop <-chan struct{}) {
	tick := max(100*time.Millisecond, time.Duration(float64(time.Second)/st.Rate))
	t := time.NewTicker(tick)
	defer t.Stop()
	start, done, size := time.Now(), int64(0), int64(st.Size)
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		}
		now := time.Now()
		if r.Duration > 0 && !now.Add(st.Down+tick).Before(end) {
			return // the clients it would take now could not be back a tick before the end
		}
		due := int64(st.Rate * now.Sub(start).Seconds())
		if due <= done || size <= 0 {
			continue
		}
		lo, hi := done%size, due%size
		all := due-done >= size
		done = due
		ended.Add(r.eng.Churn(func(client int) bool {
			p := int64(st.Pos(client))
			switch {
			case p < 0:
				return false
			case all:
				return true
			case lo < hi:
				return p >= lo && p < hi
			}
			return p >= lo || p < hi // the window wraps round
		}, st.Clean, st.Down))
	}
}

// stopStorms ends the storms that have not come, and waits for those under way.
func (r *run) stopStorms() {
	if r.storms.stop == nil {
		return
	}
	close(r.storms.stop)
	r.storms.wg.Wait()
}

// start makes the engine and starts it (and the Watch): the run's intervals begin.
func (cr *Runner) start(ctx context.Context) (*run, error) {
	if cr.Interval <= 0 {
		cr.Interval = time.Second
	}
	cfg := cr.Engine
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.NumCPU()
	}
	rec := NewRecorder(cfg.Loops)
	rec.Stream, rec.RunTag, rec.AnyRun, rec.Placement, rec.RetainedLate = cr.Stream, cfg.RunTag, cr.AnyRun, cr.Placement, cr.RetainedLate
	rec.Describe, rec.StreamCycle, rec.StreamAlso = cr.Describe, cr.StreamCycle, cr.StreamAlso
	if g := cr.Groups; g != nil {
		rec.SetGroups(len(g.Info), g.Client, g.Publisher, g.Share)
		for i, in := range g.Info {
			if slices.Contains(in.Behaviours, string(scenario.BehaviourRequest)) {
				if rec.gRequest == nil {
					rec.gRequest = make([]bool, len(g.Info))
				}
				rec.gRequest[i] = true
			}
		}
	}
	cfg.Observer = rec
	eng, err := reactor.New(cfg)
	if err != nil {
		return nil, err
	}
	r := &run{Runner: cr, ctx: ctx, eng: eng, rec: rec, measureWait: -1,
		log: &intervalLog{target: cfg.Clients, progress: cr.Progress, watch: cr.Watch, onInterval: cr.OnInterval, discard: cr.StreamOnly}}
	host, _ := os.Hostname()
	r.res = &result.Result{
		Schema: result.Schema, ToolVersion: cr.ToolVersion, StartedAt: time.Now().UTC(),
		Broker: cfg.Brokers, Scenario: cr.Scenario,
		Host: result.HostInfo{Hostname: host, Cores: runtime.NumCPU(), Kernel: tuning.KernelRelease(), Procs: 1,
			Clock: hostClock()},
		Connections: result.Connections{Target: cfg.Clients},
	}
	if g := cr.Groups; g != nil {
		r.res.SetGroups(g.Info)
	}
	runtime.GC()
	debug.FreeOSMemory()
	r.rssBefore = tuning.SelfAnonRSS()
	r.cpuBefore = tuning.SelfCPU()
	if err := eng.Start(); err != nil {
		return nil, err
	}
	if cr.Watch != nil {
		cr.Watch.Start()
	}
	r.src = newRecorderSource(eng, rec, cfg.Loops, cr.Interval)
	return r, nil
}

// phases runs the connect phase, then holds a Connections run's clients, or runs a
// messaging run's subscribe, measure and drain phases. It returns the error of the phase
// that ended the run early.
func (r *run) phases() error {
	if err := r.connect(); err != nil {
		return err
	}
	switch {
	case r.eng.Open() == 0: // nothing to hold or publish on: fail fast
		return nil
	case !r.Messaging:
		return r.hold()
	}
	if r.lacks() {
		return nil
	}
	if err := r.subscribe(); err != nil {
		return err
	}
	if r.noSubscription() {
		return nil
	}
	if err := r.measure(); err != nil {
		if errors.Is(err, ErrInterrupted) {
			r.cutShort()
		}
		return err
	}
	return r.drain()
}

// wait runs intervals until at, until ok (if not nil) returns true, or until the run's
// context ends (ErrInterrupted).
func (r *run) wait(at time.Time, ok func() bool) error {
	return runIntervals(r.src, r.log, until{ctx: r.ctx, at: at, ok: ok})
}

// connect connects every client (paced) and measures what that cost: its time, CPU and
// the resident set it leaves. It returns the engine's error when the context ended it.
func (r *run) connect() error {
	ctx, controlled := r.ctx, func() bool { return true }
	if r.ConnectController != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(r.ctx)
		defer cancel()
		var done atomic.Bool
		controlled = done.Load
		r.eng.PauseConnect()
		// The phase waits for it to return (it sees the run's context end too): what it
		// writes of its own is written before the phase's figures are read.
		ended := make(chan struct{})
		defer func() { <-ended }()
		go func() {
			defer close(ended)
			r.ConnectController(r.ctx, r.eng, r.src.start)
			done.Store(true)
			cancel() // the clients not dialed yet never are
		}()
	}
	done := make(chan error, 1)
	go func() {
		done <- r.eng.Connect(ctx, func(n int) { r.started.Store(int64(n)) })
	}()
	err := runIntervals(r.src, r.log, until{done: done})
	if r.ConnectController != nil && r.ctx.Err() == nil {
		// The controller ended the phase, or every client has its verdict and the
		// controller still judges its last step.
		err = nil
		if !controlled() {
			err = r.wait(time.Now().Add(24*time.Hour), controlled)
		}
	}
	r.connectPhase = time.Since(r.src.start)
	r.cpuConnect = tuning.SelfCPU() - r.cpuBefore
	// What an idle connection costs is what stays live: drop the connect phase's working
	// copies of its figures, collect its garbage and return it to the OS before reading the
	// resident set.
	r.src.settle()
	r.eng.ReleaseIdle() // what the loops' sweep does to idle TLS connections within 2 s
	runtime.GC()
	debug.FreeOSMemory()
	r.rssHeld = tuning.SelfAnonRSS()
	if r.onHeld != nil {
		r.onHeld(r)
	}
	return err
}

// gate calls g, a start or hold gate, while the intervals go on: a worker process waiting
// there for the others (seconds, when they dial in turns) would otherwise skip intervals,
// and the parent merges the workers' intervals by their numbers.
func (r *run) gate(g func() (time.Time, error)) (time.Time, error) {
	var at time.Time
	done := make(chan error, 1)
	go func() {
		var err error
		at, err = g()
		done <- err
	}()
	if err := runIntervals(r.src, r.log, until{ctx: r.ctx, done: done}); err != nil {
		// at is not read: on an interrupt g may still be running. An interrupt is the
		// run's, not the gate's error.
		if !errors.Is(err, ErrInterrupted) {
			r.res.Errors = append(r.res.Errors, result.ErrorCount{Kind: "start_gate", Count: 1, Example: err.Error()})
		}
		return time.Time{}, err
	}
	return at, nil
}

// hold keeps a Connections run's clients connected (with keepalive) for Duration.
func (r *run) hold() error {
	start := time.Now()
	// Held connections wake a loop a few times a second. With a P to spare (the engine's
	// for the connect phase) the runtime's sysmon waits 10 ms before it takes back the P
	// of a loop asleep in epoll_pwait2, polling every 20 µs meanwhile, after every wake;
	// with none to spare it takes it back at once and sleeps (measured: 200,000 held in 51
	// workers at keepalive 60 s, client CPU 63-72 against 52-55 ms/s).
	if n := r.eng.Loops(); n > 0 && runtime.GOMAXPROCS(0) > n {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	}
	if r.HoldGate != nil {
		at, err := r.gate(r.HoldGate)
		if err != nil {
			return err
		}
		// The workers hold from the same instant (the parent's, on a whole second): their
		// intervals end together from it, with the loops' keepalive ticks.
		if err = r.wait(at, nil); err != nil {
			return err
		}
		r.src.align(r.log, at)
		start = at
	}
	r.startStorms(start) // a run without publishers: its storms count from the hold's start
	if r.OnMeasure != nil {
		from := r.connectPhase.Seconds()
		r.OnMeasure(from, start.Add(r.Duration).Sub(r.res.StartedAt).Seconds())
	}
	return r.wait(start.Add(r.Duration), nil)
}

// subscribe waits, up to subscribeTimeout, for every subscriber's SUBACK, refused or
// not; a subscriber whose connection ended before it (or was never established) is not
// waited for. SUBACKs missing then are an error count of the result, not the end of the
// run.
func (r *run) subscribe() error {
	if r.Subscribers <= 0 {
		return nil
	}
	want := int64(r.Subscribers)
	if err := r.wait(time.Now().Add(subscribeTimeout), func() bool { return r.eng.SubscribeSettled() >= want }); err != nil {
		return err
	}
	if got := r.eng.SubscribeSettled(); got < want {
		r.res.Errors = append(r.res.Errors, result.ErrorCount{Kind: "subscribe_timeout", Count: want - got,
			Example: fmt.Sprintf("%d of %d SUBACKs after %v", got, want, subscribeTimeout)})
	}
	return nil
}

// noSubscription reports whether the run has subscribers and not one subscription was
// made (every SUBACK refused every filter, or no subscriber got one): the run ends there,
// with the error no_subscription and the broker's reasons, as publishing would reach
// nobody.
func (r *run) noSubscription() bool {
	if r.Subscribers <= 0 || r.eng.SubscribeGranted() > 0 {
		return false
	}
	r.src.collect()
	t := r.src.total
	why := "no subscriber received a SUBACK"
	withheld := map[string]int64{}
	for _, k := range []string{"shared_unavailable", "wildcard_unavailable"} {
		if n := t.Behaviour[k]; n > 0 {
			withheld[k] = n
		}
	}
	switch {
	case len(t.SubscribeRefused) > 0:
		why = "the broker refused every subscription" + countfmt.ByCause(t.SubscribeRefused)
		if len(withheld) > 0 {
			why += "; mqblast withheld the others, as the broker's CONNACK said it does not take them" + countfmt.ByCause(withheld)
		}
	case len(withheld) > 0:
		why = "mqblast withheld every subscription, as the broker's CONNACK said it does not take them" + countfmt.ByCause(withheld)
	case len(t.Dropped)+len(t.Failed)+len(t.Refused) > 0:
		why = "every subscriber's connection ended before its SUBACK"
	}
	ex := fmt.Sprintf("%s (%d subscribers)", why, r.Subscribers)
	r.res.Errors = append(r.res.Errors, result.ErrorCount{Kind: result.ErrorNoSubscription, Count: int64(r.Subscribers), Example: ex})
	if r.Progress != nil {
		fmt.Fprintln(r.Progress, "no subscription:", ex)
	}
	return true
}

// lacks reports whether the broker's CONNACKs said it lacks what the plan needs and the
// run may not run at what it grants (AcceptDowngrade): the run then ends after the connect
// phase with the error broker_lacks, in the broker's words.
func (r *run) lacks() bool {
	n := r.eng.Lacking()
	if n == 0 || r.AcceptDowngrade {
		return false
	}
	r.src.collect()
	t := r.src.total
	var words []string
	for _, k := range slices.Sorted(maps.Keys(t.Behaviour)) {
		if result.IsCapability(k) {
			words = append(words, result.BehaviourEvidence(k, t.Behaviour[k], ""))
		}
	}
	ex := strings.Join(words, "; ") + "; give --accept-downgrade to run at what the broker grants, or change the plan"
	r.res.Errors = append(r.res.Errors, result.ErrorCount{Kind: result.ErrorBrokerLacks, Count: n, Example: ex})
	if r.Progress != nil {
		fmt.Fprintln(r.Progress, "the broker lacks what the plan needs:", ex)
	}
	return true
}

// measure publishes on the open-loop schedule through Warmup and the measure window, from
// the start gate's instant (in 100 ms without a gate), then stops publishing. It returns the
// start gate's error, or ErrInterrupted: the window then ends at the interrupt, so that
// rates divide by what ran.
func (r *run) measure() error {
	if n := r.eng.PacketLimited(); n > 0 {
		ex := fmt.Sprintf("%d connections: the broker's Maximum Packet Size is below this plan's PUBLISH; "+
			"their messages are not sent and count as unsent (too_large): lower payload_size", n)
		r.res.Errors = append(r.res.Errors, result.ErrorCount{Kind: "packet_too_large_for_broker", Count: n, Example: ex})
		if r.Progress != nil {
			fmt.Fprintln(r.Progress, "warning:", ex)
		}
	}
	delay := 100 * time.Millisecond
	if r.StartGate != nil {
		at, err := r.gate(r.StartGate)
		if err != nil {
			return err
		}
		delay = max(time.Until(at), 0)
	}
	if len(r.Stages) > 0 {
		if err := setStageRates(r.eng, r.Stages, r.BaseRate, time.Now().Add(delay)); err != nil {
			return err
		}
	}
	// The recorder has the start before a message can arrive (a round trip's come back at
	// once): one received before it would be taken for a stale one. Then the engine's.
	r.rec.SetStart(time.Now().Add(delay).UnixNano())
	pubStart := r.eng.StartPublishing(delay)
	r.rec.SetStart(pubStart.UnixNano())
	from := pubStart.Add(r.Warmup)
	to := pubStart.Add(r.Duration) // the duration includes the warm-up
	// The schedules end at to, set now: the wait below wakes late on a loaded host, and
	// what fell due in between would be more than rate x duration (StopPublishing after
	// it ends them sooner only when the run is cut short).
	r.eng.StopPublishingAt(to)
	r.rec.SetWindow(from.UnixNano(), to.UnixNano())
	r.res.MeasureFrom, r.res.MeasureTo = from.UTC(), to.UTC()
	if r.OnMeasure != nil {
		r.OnMeasure(from.Sub(r.res.StartedAt).Seconds(), to.Sub(r.res.StartedAt).Seconds())
	}
	r.publishing = true
	r.startStorms(pubStart)
	var err error
	stages := r.Stages
	if len(stages) == 0 && r.Steerable && r.BaseRate > 0 && r.Duration > 0 {
		stages = implicitStages(r.Duration, r.BaseRate)
	}
	if len(stages) > 0 {
		r.stages = newStageClock(r.eng, stages, pubStart, r.Interval)
		r.src.clock = r.stages
		r.clock.Store(r.stages)
	}
	if r.Steerable && r.stages != nil {
		r.steer.Store(&steering{eng: r.eng, clock: r.stages, base: r.BaseRate})
	}
	// From the start of publishing on, intervals end at whole intervals from it: a stage's
	// and a controller's step's figures are those of whole intervals, and the workers of a
	// run, all given the same start, end theirs together.
	if r.stages != nil || r.Controller != nil || r.StartGate != nil {
		if err = r.wait(pubStart, nil); err == nil {
			r.src.align(r.log, pubStart)
		}
	}
	var controlled func() bool // the controller returned
	if r.Controller != nil && err == nil {
		// Its context ends with the measure phase, which waits for it to return: what it
		// writes of its own is written before the phase's figures are read.
		ctx, cancel := context.WithCancel(r.ctx)
		ended := make(chan struct{})
		defer func() {
			cancel()
			<-ended
		}()
		var done atomic.Bool
		controlled = done.Load
		go func() {
			defer close(ended)
			r.Controller(ctx, r.eng, pubStart, r.src.start)
			done.Store(true)
		}()
	}
	if err == nil {
		err = r.wait(from, controlled)
	}
	cpu0, t0 := tuning.SelfCPU(), time.Now()
	wait0, ok0 := tuning.SelfRunDelay()
	if err == nil && (controlled == nil || !controlled()) {
		err = r.wait(to, controlled)
	}
	r.measureCPU = tuning.SelfCPU() - cpu0
	wait1, ok1 := tuning.SelfRunDelay()
	if ok0 && ok1 {
		r.measureWait = max(wait1-wait0, 0)
	}
	// The readings bracket the window as closely as the interval loop allows: an interval
	// it was busy with (a slow --broker-metrics endpoint, up to its timeout) moves them
	// later, so the CPU and the wait are taken at their rate over the time they spanned.
	start := from
	if t0.After(from) {
		start = t0
	}
	if span, w := time.Since(t0), to.Sub(start); err == nil && span > w && w > 0 {
		r.measureCPU = time.Duration(float64(r.measureCPU) * float64(w) / float64(span))
		if r.measureWait > 0 {
			r.measureWait = time.Duration(float64(r.measureWait) * float64(w) / float64(span))
		}
	}
	r.steer.Store(nil)
	r.eng.StopPublishing()
	if now := time.Now(); (err != nil || controlled != nil) && now.Before(to) { // the window ends at the interrupt, or when the controller is done
		r.rec.SetWindow(from.UnixNano(), max(now.UnixNano(), from.UnixNano()))
		r.res.MeasureTo = now.UTC()
		if now.Before(from) {
			r.res.MeasureTo = from.UTC()
		}
	}
	return err
}

// drain waits until every publisher has written and had acknowledged what was due before
// the stop and every expected copy arrived; or, once Drain passed, until an interval passes
// in which no copy arrived and no message was written (arrivals stopped: what is missing is
// lost), at most MaxDrain more (copies still arriving then are owed at the end, not lost). A
// run whose plan expects no copies (publish only) ends as soon as its publishers are done.
// A part of a run (a worker, a shard) that receives copies of other parts' publishers waits
// at least the whole Drain: its own counts cannot say when those are in, and a part that
// ended early (its subscribers gone) lost the copies still on their way to it.
func (r *run) drain() error {
	start := time.Now()
	end := start.Add(r.Drain)
	seen := arrivals{every: r.Interval}
	complete, extended := false, false
	err := r.wait(end.Add(r.drainBound()), func() bool {
		behind, outside := r.eng.Behind(), r.rec.ReceivesOutside()
		r.src.collect()
		now := time.Now()
		seen.read(now, r.src.total)
		if t := r.src.total; !behind && !outside && t.Received+t.RefusedCopies+t.ResponsesUnsent >= t.Expected { // no refused message nor unsent response comes
			complete = true
			return true
		}
		if now.Before(end) {
			return false
		}
		if seen.quiet() {
			return true
		}
		if rates := seen.rates(); !extended && r.Progress != nil && len(rates) > 0 && rates[0] > 0 {
			extended = true
			fmt.Fprintf(r.Progress, "drain: copies still arriving at %d/s after %v: it goes on until an interval passes in which none arrives, at most %v more\n",
				rates[0], r.Drain, r.drainBound())
		}
		return false
	})
	r.res.Messages.DrainS = time.Since(start).Seconds()
	if !complete {
		r.drainEnded(&seen)
	}
	return err
}

// disconnect accounts for every scheduled message, disconnects every client and adds the
// last, partial interval: what arrived or was written since the last tick (the drain's
// tail, the disconnects), so that the intervals add up to the run.
func (r *run) disconnect(interrupted bool) {
	r.eng.FinishPublishing(interrupted)
	r.eng.Disconnect(5 * time.Second)
	r.src.interval(r.log)
}

// finish fills the result from the run's totals and what the phases measured.
func (r *run) finish(interrupted bool) {
	total := r.src.total
	fix, join := r.rec.Finish()
	r.addOwed(fix)
	total.Add(fix)
	res := r.res
	res.Join = join
	res.Intervals = r.log.list
	if r.stages != nil {
		res.Stages = r.stages.resultStages(r.src.start, res.MeasureFrom)
		res.SummarizeStages()
	}
	res.EndedAt = time.Now().UTC()
	res.Interrupted = interrupted
	// A plan that does not know its publishers (a Subscribe run) cannot say what should
	// have arrived: expected and lost are unknown, not 0.
	res.Messages.ExpectedUnknown = r.Messaging && r.Stream == nil
	if !res.Messages.ExpectedUnknown {
		var maybe []result.JoinSilent
		res.Messages.Silent, maybe = r.rec.Silent(r.Describe)
		if len(maybe) > 0 { // for the merge, which knows whether another part received them
			if res.Join == nil {
				res.Join = &result.Join{}
			}
			res.Join.Silent = maybe
			res.Join = res.Join.Seal()
		}
	}
	res.SetTotal(total)
	for k, st := range r.Storms {
		if k < len(r.storms.ended) && st.Group < len(res.Groups) {
			res.Groups[st.Group].Churn = &result.Churn{AtS: st.At.Seconds(), DownS: st.Down.Seconds(), Clean: st.Clean, Clients: st.Clients,
				Ended: max(r.storms.ended[k].Load(), 0), RatePerS: st.Rate}
		}
	}
	res.Connections.ConnectPhaseS = r.connectPhase.Seconds()
	if r.connectPhase > 0 {
		res.Connections.ConnectRatePerS = float64(total.Connected) / r.connectPhase.Seconds()
	}
	res.Client.CPUS = (tuning.SelfCPU() - r.cpuBefore).Seconds()
	res.Client.MaxRSSBytes = tuning.SelfPeakRSS()
	if n := r.started.Load(); n > 0 {
		res.Client.CPUPerConnectUS = float64(r.cpuConnect.Microseconds()) / float64(n)
	}
	if total.Connected > 0 && r.rssHeld > r.rssBefore {
		res.Client.RSSPerConnectionBytes = float64(r.rssHeld-r.rssBefore) / float64(total.Connected)
	}
	if r.publishing && res.MeasureTo.After(res.MeasureFrom) {
		measured(res, total, res.MeasureTo.Sub(res.MeasureFrom), r.measureCPU, r.measureWait)
	}
	if r.Watch != nil {
		r.Watch.Finish(res)
	}
	res.Judge()
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
	p.expected += iv.Expected - iv.RefusedCopies - iv.ResponsesUnsent // no refused message nor unsent response comes
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
