package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/report/live"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// LiveTokenEnv names the environment variable that gives the live API's token when the
// Spec names no file of it.
const LiveTokenEnv = "MQBLAST_LIVE_TOKEN"

// withoutLiveToken returns env without the live API's token: a worker process has no use
// for it.
func withoutLiveToken(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, LiveTokenEnv+"=") })
}

// liveOutput is the live page of a run (--live) and its steering API.
type liveOutput struct {
	Live          string        // address to serve the page at ("": none)
	LivePublic    bool          // allow a Live address that is not loopback
	LiveHold      time.Duration // keep serving the final page this long after the run
	LiveTokenFile string        // the API's token's file ("": $MQBLAST_LIVE_TOKEN)

	getenv  func(string) string
	token   string // the API's token ("": the API refuses every request)
	page    *live.Live
	liveSrv *metrics.Server
}

// checkLive checks the live page's address and reads its token, and makes the page (so
// that the log's lines reach it from the start).
func (lo *liveOutput) checkLive() error {
	if lo.Live == "" {
		return nil
	}
	if err := metrics.CheckFlagAddr("live", "8080", lo.Live, lo.LivePublic); err != nil {
		return usage(spec.Errorf("outputs.live", "%v", err))
	}
	if lo.LiveTokenFile != "" {
		t, err := readSecretLine("outputs.live_token_file", lo.LiveTokenFile, "token")
		if err != nil {
			return err
		}
		lo.token = t
	} else if lo.getenv != nil {
		lo.token = lo.getenv(LiveTokenEnv)
	}
	lo.page = live.New(nil)
	return nil
}

// Tee returns log, which with a live page also gives the page its lines.
func (lo *liveOutput) Tee(log io.Writer) io.Writer {
	if lo.page == nil {
		return log
	}
	return &liveLog{w: log, page: lo.page}
}

// liveLog is a run's log that gives the live page every line written to it.
type liveLog struct {
	w    io.Writer
	page *live.Live
	mu   sync.Mutex
	buf  []byte
}

func (l *liveLog) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.page.Line(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 1<<16 { // a line without end: not one to show
		l.buf = l.buf[:0]
	}
	return n, err
}

// steerable reports whether the run may be steered: its live API is on (it has a token).
func (lo *liveOutput) steerable() bool { return lo.page != nil && lo.token != "" }

// serveLive starts the live page's server for plan's run (nothing without Live), with c
// steering the run through its API, and says where on log (never the token).
func (lo *liveOutput) serveLive(log io.Writer, plan *scenario.Plan, version string, c live.Control) error {
	if lo.page == nil {
		return nil
	}
	lo.page.SetBase(&result.Result{Broker: plan.Brokers(), Scenario: effectiveJSON(plan.Scenario()),
		StartedAt: time.Now().UTC(), ToolVersion: version})
	lo.page.SetControl(c, lo.token)
	s, err := metrics.ServeHandler("live", lo.Live, lo.page.Handler())
	if err != nil {
		return usage(err)
	}
	lo.liveSrv = s
	api := "its API under /api/ (with the token)"
	if lo.token == "" {
		api = "no API (no token given: --live-token-file or $" + LiveTokenEnv + ")"
	}
	fmt.Fprintf(log, "live page at http://%s/, %s\n", s.Addr(), api)
	return nil
}

// stopLive closes the live page's server once the run is over: after LiveHold when the
// page has the final report (or until ctx ends).
func (lo *liveOutput) stopLive(ctx context.Context, log io.Writer) {
	if lo.liveSrv == nil {
		return
	}
	if lo.page.Done() && lo.LiveHold > 0 {
		fmt.Fprintf(log, "serving the final live page at http://%s/ for %v\n", lo.liveSrv.Addr(), lo.LiveHold)
		select {
		case <-time.After(lo.LiveHold):
		case <-ctx.Done():
		}
	}
	lo.page.Close()
	_ = lo.liveSrv.Close()
	lo.liveSrv = nil
}

// runControl steers a run for the live API: Stop ends it as an interrupt does; SetRate,
// Pause and Resume change its publishers' rate through its target (the runner of a run in
// this process, or the parent's view of its workers) as a new stage from the next interval
// boundary.
type runControl struct {
	stop context.CancelFunc

	mu     sync.Mutex
	target steerTarget // nil until the run is under way, or when it cannot be steered
	why    string      // why the run cannot be steered ("": it can, once it publishes)
	paused bool
	resume float64 // the rate a resume goes back to
}

// steerTarget is where a change goes: Runner.Steer's, or every worker's.
type steerTarget interface {
	// boundary is the instant a change asked now takes effect.
	boundary() (time.Time, error)
	// steer makes the change at at.
	steer(at time.Time, rate float64) error
	// rateAt is each publisher's rate at t.
	rateAt(t time.Time) float64
	// stages are the run's stages as they stand (definitions only).
	stages() []result.Stage
}

// notSteerable says why a run's rate cannot change.
const notSteerable = "its publishers have no one rate to change (no publishers, a mixed run's groups, or no publish_rate)"

// steerSource is the source the result records for the API's stages.
const steerSource = "api"

// attach makes the control steer t (nil: the run cannot be steered, why says why).
func (c *runControl) attach(t steerTarget, why string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.target, c.why = t, why
	c.mu.Unlock()
}

func (c *runControl) Stages() []result.Stage {
	c.mu.Lock()
	t := c.target
	c.mu.Unlock()
	if t == nil {
		return nil
	}
	return t.stages()
}

func (c *runControl) Stop() error {
	c.stop()
	return nil
}

func (c *runControl) SetRate(rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%w: rate %v: want a number of messages per second above 0 (POST /api/pause stops publishing)", live.ErrRefused, rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return fmt.Errorf("%w: publishing is paused: resume it first (POST /api/resume), then set its rate", live.ErrRefused)
	}
	_, err := c.changeLocked(rate)
	return err
}

func (c *runControl) Pause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paused {
		return fmt.Errorf("%w: publishing is paused already", live.ErrRefused)
	}
	at, err := c.changeLocked(0)
	if err != nil {
		return err
	}
	c.paused, c.resume = true, c.target.rateAt(at.Add(-time.Nanosecond))
	return nil
}

func (c *runControl) Resume() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		return fmt.Errorf("%w: publishing is not paused", live.ErrRefused)
	}
	if _, err := c.changeLocked(c.resume); err != nil {
		return err
	}
	c.paused = false
	return nil
}

// changeLocked sets the rate from the next interval boundary and returns that instant.
func (c *runControl) changeLocked(rate float64) (time.Time, error) {
	if c.target == nil {
		if c.why == "" {
			return time.Time{}, fmt.Errorf("%w: %w", live.ErrRefused, bench.ErrNotPublishing)
		}
		return time.Time{}, fmt.Errorf("%w: this run's rate cannot change: %s", live.ErrRefused, c.why)
	}
	at, err := c.target.boundary()
	if err == nil {
		err = c.target.steer(at, rate)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %w", live.ErrRefused, err)
	}
	return at, nil
}

// runnerTarget steers a run in this process.
type runnerTarget struct{ r *bench.Runner }

func (t runnerTarget) boundary() (time.Time, error) { return t.r.SteerBoundary() }
func (t runnerTarget) steer(at time.Time, rate float64) error {
	return t.r.Steer(at, rate, steerSource)
}
func (t runnerTarget) rateAt(time.Time) float64 {
	r, _ := t.r.RateNow()
	return r
}

func (t runnerTarget) stages() []result.Stage { return t.r.StageDefs() }

// workersTarget steers a run's worker processes: the parent keeps their stages
// (bench.StagePlan) and tells each worker every change (bench.WriteSteer).
type workersTarget struct {
	mu     sync.Mutex
	stdins []io.Writer
	plan   *bench.StagePlan // nil until the workers start
	end    bool             // publishing is over (Gather returned)
}

func (t *workersTarget) start(p *bench.StagePlan) {
	t.mu.Lock()
	t.plan = p
	t.mu.Unlock()
}

func (t *workersTarget) close() {
	t.mu.Lock()
	t.end = true
	t.mu.Unlock()
}

func (t *workersTarget) boundary() (time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == nil || t.end {
		return time.Time{}, bench.ErrNotPublishing
	}
	return t.plan.Boundary(), nil
}

func (t *workersTarget) steer(at time.Time, rate float64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == nil || t.end {
		return bench.ErrNotPublishing
	}
	if err := t.plan.Steer(at, rate, steerSource); err != nil {
		return err
	}
	var errs []error
	for _, w := range t.stdins {
		errs = append(errs, bench.WriteSteer(w, at, rate, steerSource))
	}
	return errors.Join(errs...)
}

func (t *workersTarget) rateAt(at time.Time) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == nil {
		return 0
	}
	return t.plan.RateAt(at)
}

func (t *workersTarget) stages() []result.Stage {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.plan == nil {
		return nil
	}
	return t.plan.StageDefs()
}
