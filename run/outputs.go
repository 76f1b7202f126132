package run

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// outputs are the machine-readable outputs of a run (docs/outputs.md): the CSV and hlog
// files written at its end, and Metrics, live Prometheus metrics during it.
type outputs struct {
	CSV, Hlog     string        // files to write ("": none)
	Metrics       string        // address to serve /metrics at ("": none)
	MetricsPublic bool          // allow a Metrics address that is not loopback
	MetricsHold   time.Duration // keep serving this long after the run

	live     *metrics.Live // set by Serve
	server   *metrics.Server
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
	return of.checkLive()
}

// Serve starts the /metrics server for a run of target clients (nothing without Metrics)
// and says where on log.
func (of *outputs) Serve(log io.Writer, target int) error {
	if of.Metrics == "" {
		return nil
	}
	of.live = metrics.NewLive(target, runtime.NumCPU())
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

// OnInterval feeds the live metrics (nil without Metrics): options.OnInterval.
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
	}
}

// Finish writes CSV and Hlog from the final result and gives the live metrics their
// end-of-run figures. It returns the first error.
func (of *outputs) Finish(log io.Writer, res *result.Result) error {
	err := report.WriteOutputs(log, res, of.CSV, of.Hlog)
	if of.live != nil {
		of.live.Finish(res)
		of.finished = true
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

// checkOut is CheckOut for the Spec's field.
func checkOut(field, path, example string) error {
	if err := report.CheckPath(path, example); err != nil {
		return usage(spec.Errorf(field, "{"+field+"} %s: %v", path, err))
	}
	return nil
}
