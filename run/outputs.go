package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mqblast/mqblast/internal/termtext"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/tuning/exporter"
)

// outputs are the machine-readable outputs of a run (docs/outputs.md): the CSV and hlog
// files written at its end, and Metrics, live Prometheus metrics during it.
type outputs struct {
	CSV, Hlog     string        // files to write ("": none)
	Metrics       string        // address to serve /metrics at ("": none)
	MetricsPublic bool          // allow a Metrics address that is not loopback
	MetricsHold   time.Duration // keep serving this long after the run
	// RemoteWrite is a remote-write URL to push the same series to ("": none);
	// RemoteWriteAuth its credentials' file ("": the environment, read through getenv).
	RemoteWrite, RemoteWriteAuth string
	getenv                       func(string) string

	live     *metrics.Live // set by Serve
	server   *metrics.Server
	remote   *metrics.Remote
	finished bool // live has the result's figures

	liveOutput // the live page and its API (live.go)
}

// Check checks the outputs before the run starts: files that can be written, an address
// that is loopback (or allowed). Its errors are usage errors.
func (of *outputs) Check() error {
	for _, f := range []struct{ field, path string }{{"outputs.csv", of.CSV}, {"outputs.hlog", of.Hlog}} {
		if f.path == "" {
			continue
		}
		if err := checkOut(f.field, f.path, "result.json"); err != nil {
			return err
		}
	}
	if of.Metrics != "" {
		if err := metrics.CheckAddr(of.Metrics, of.MetricsPublic); err != nil {
			return usage(spec.Errorf("outputs.metrics", "%v", err))
		}
	}
	if of.RemoteWrite != "" {
		if err := metrics.CheckRemoteURL(of.RemoteWrite); err != nil {
			return usage(spec.Errorf("outputs.remote_write", "%v", err))
		}
		if _, err := of.remoteAuth(); err != nil {
			return usage(spec.Errorf("outputs.remote_write_auth", "{outputs.remote_write_auth}: %v", err))
		}
	}
	return of.checkLive()
}

// The environment's credentials of --remote-write, as MQBLAST_METRICS_* are those of
// --broker-metrics.
const remoteWriteEnv = "MQBLAST_REMOTE_WRITE_"

// remoteAuth returns the Authorization header of the remote-write receiver ("": none),
// from RemoteWriteAuth's file (the format of --broker-metrics-auth) or the environment
// (MQBLAST_REMOTE_WRITE_USERNAME, _PASSWORD, _TOKEN).
func (of *outputs) remoteAuth() (string, error) {
	getenv := of.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	env := func(k string) string { return getenv(remoteWriteEnv + strings.TrimPrefix(k, "MQBLAST_METRICS_")) }
	a, err := exporter.LoadAuth(of.RemoteWriteAuth, env)
	if err != nil {
		if of.RemoteWriteAuth == "" {
			return "", fmt.Errorf("the environment (%sUSERNAME, %sPASSWORD, %sTOKEN): %w", remoteWriteEnv, remoteWriteEnv, remoteWriteEnv, err)
		}
		return "", err
	}
	switch {
	case a.BearerToken != "":
		return "Bearer " + a.BearerToken, nil
	case a.Username != "":
		req := http.Request{Header: http.Header{}}
		req.SetBasicAuth(a.Username, a.Password)
		return req.Header.Get("Authorization"), nil
	}
	return "", nil
}

// Serve starts the /metrics server for a run of target clients (nothing without Metrics)
// and says where on log.
func (of *outputs) Serve(log io.Writer, target int) error {
	if of.Metrics == "" && of.RemoteWrite == "" {
		return nil
	}
	of.live = metrics.NewLive(target, runtime.NumCPU())
	if of.RemoteWrite != "" {
		authz, err := of.remoteAuth()
		if err != nil {
			return usage(spec.Errorf("outputs.remote_write_auth", "{outputs.remote_write_auth}: %v", err))
		}
		host, _ := os.Hostname()
		r, err := metrics.NewRemote(of.live, metrics.RemoteOptions{URL: of.RemoteWrite, Authorization: authz,
			Labels: map[string]string{"job": "mqblast", "instance": host}, Timeout: remoteTimeout})
		if err != nil {
			return usage(err)
		}
		of.remote = r
		fmt.Fprintf(log, "pushing metrics to %s once per interval\n", termtext.Line(of.RemoteWrite))
	}
	if of.Metrics == "" {
		return nil
	}
	s, err := metrics.Serve(of.Metrics, of.live)
	if err != nil {
		return usage(err)
	}
	of.server = s
	fmt.Fprintf(log, "metrics at http://%s/metrics\n", s.Addr())
	return nil
}

// SetGroups names the client groups of a mixed run for the live metrics' group label
// (nothing without Metrics).
func (of *outputs) SetGroups(names []string) {
	if of.live != nil && len(names) > 0 {
		of.live.SetGroups(names)
	}
}

// OnInterval feeds the live metrics and queues their push (nil without Metrics or
// RemoteWrite): options.OnInterval.
func (of *outputs) OnInterval(log io.Writer) func(result.Interval, *result.Snapshot) {
	if of.live == nil {
		if of.page != nil {
			return func(iv result.Interval, _ *result.Snapshot) { of.page.Interval(iv) }
		}
		return nil
	}
	warned := false
	return func(iv result.Interval, s *result.Snapshot) {
		if of.page != nil {
			of.page.Interval(iv)
		}
		if err := of.live.Interval(iv, s); err != nil && !warned {
			warned = true
			fmt.Fprintf(log, "warning: --metrics: a latency histogram is missing: %v\n", err)
		}
		if of.remote != nil {
			of.remote.Push(time.Now())
		}
	}
}

// OnStep feeds the live metrics a limit search's steps (nil without Metrics or
// RemoteWrite): options.OnStep.
func (of *outputs) OnStep() func(index int, rate float64) {
	if of.live == nil {
		return nil
	}
	return of.live.Step
}

// Soak gives the live metrics a run's soak so far (nil without Metrics): liveSoak's live.
func (of *outputs) Soak() func(*result.Soak) {
	if of.live == nil {
		return nil
	}
	return of.live.Soak
}

// Finish writes CSV and Hlog from the final result and gives the live metrics their
// end-of-run figures. It returns the first error.
func (of *outputs) Finish(log io.Writer, res *result.Result) error {
	err := report.WriteOutputs(log, res, of.CSV, of.Hlog)
	if of.live != nil {
		of.live.Finish(res)
		of.finished = true
	}
	if of.remote != nil {
		res.RemoteWrite = of.remote.Finish(time.Now(), remoteFlush)
		of.remote = nil
		if rw := res.RemoteWrite; rw.Failed+rw.Dropped > 0 {
			fmt.Fprintf(log, "warning: --remote-write: %d of %d pushes not sent (%d failed, %d dropped); last error: %s\n",
				rw.Failed+rw.Dropped, rw.Pushes, rw.Failed, rw.Dropped, termtext.Line(rw.LastError))
		}
	}
	if of.page != nil {
		of.page.Finish(res)
	}
	return err
}

// Stop closes the metrics server once the run is over (its result written): a finished
// run's after MetricsHold, so that a scraper sees the final figures (or until ctx ends); a
// run that failed before its end at once.
func (of *outputs) Stop(ctx context.Context, log io.Writer) {
	if of.remote != nil { // a run that failed before its end: what waits is dropped
		of.remote.Finish(time.Now(), 0)
		of.remote = nil
	}
	held := make(chan struct{}) // the live page's hold runs beside the metrics'
	go func() {
		defer close(held)
		of.stopLive(ctx, log)
	}()
	defer func() { <-held }()
	if of.server == nil {
		return
	}
	if of.finished && of.MetricsHold > 0 {
		fmt.Fprintf(log, "serving the final metrics at http://%s/metrics for %v\n", of.server.Addr(), of.MetricsHold)
		select {
		case <-time.After(of.MetricsHold):
		case <-ctx.Done():
		}
	}
	_ = of.server.Close()
	of.server = nil
}

// remoteTimeout bounds one attempt of a push; remoteFlush the wait at the run's end for the
// final figures' push (the run's result waits for it).
const (
	remoteTimeout = 2 * time.Second
	remoteFlush   = 5 * time.Second
)

// checkOut is CheckOut for the Spec's field.
func checkOut(field, path, example string) error {
	if err := report.CheckPath(path, example); err != nil {
		return usage(spec.Errorf(field, "{"+field+"} %s: %v", path, err))
	}
	return nil
}
