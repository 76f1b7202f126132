package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mqblast/mqblast/report/live"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// LiveTokenEnv names the environment variable that gives the live API's token when the
// Spec names no file of it.
const LiveTokenEnv = "MQBLAST_LIVE_TOKEN"

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

// runControl steers a run for the live API: Stop ends it as an interrupt does.
type runControl struct {
	stop context.CancelFunc
}

func (c *runControl) Stop() error {
	c.stop()
	return nil
}

func (c *runControl) SetRate(float64) error {
	return fmt.Errorf("%w: this run cannot change its rate", live.ErrRefused)
}

func (c *runControl) Pause() error {
	return fmt.Errorf("%w: this run cannot pause", live.ErrRefused)
}

func (c *runControl) Resume() error {
	return fmt.Errorf("%w: this run cannot resume", live.ErrRefused)
}
