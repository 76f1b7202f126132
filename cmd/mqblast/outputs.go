package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	rpt "github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/report/metrics"
	"github.com/mqblast/mqblast/result"
)

// outputFlags are the machine-readable outputs of a run (docs/outputs.md): --csv and
// --hlog files written at its end, and --metrics, live Prometheus metrics during it.
type outputFlags struct {
	csv, hlog     string
	metrics       string
	metricsPublic bool
	metricsHold   time.Duration

	live     *metrics.Live // set by serve
	server   *metrics.Server
	finished bool // live has the result's figures
}

// register registers the flags of run and the quick verbs.
func (of *outputFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&of.csv, "csv", "", "write one CSV row per interval to this file (columns: docs/outputs.md)")
	fl.StringVar(&of.hlog, "hlog", "", "write the intervals' latency histograms as an HdrHistogram interval log (tags latency, latency_raw, connect; µs)")
	fl.StringVar(&of.metrics, "metrics", "", "serve live Prometheus metrics at http://ADDR/metrics during the run, e.g. 127.0.0.1:9464 (loopback only unless --metrics-public)")
	fl.BoolVar(&of.metricsPublic, "metrics-public", false, "allow a --metrics address that is not loopback (the metrics are then open to the network)")
	fl.DurationVar(&of.metricsHold, "metrics-hold", 0, "keep serving /metrics this long after the run ended, so that a scraper sees the final figures (e.g. 30s)")
}

// check checks the flags before the run starts: files that can be written, an address that
// is loopback (or allowed).
func (of *outputFlags) check() error {
	for _, f := range []struct{ flag, path string }{{"--csv", of.csv}, {"--hlog", of.hlog}} {
		if f.path == "" {
			continue
		}
		if err := checkOutFlag(f.flag, f.path); err != nil {
			return err
		}
	}
	if of.metricsHold < 0 {
		return usageError(fmt.Errorf("--metrics-hold %v: must be 0 or more", of.metricsHold))
	}
	if of.metrics != "" {
		if err := metrics.CheckAddr(of.metrics, of.metricsPublic); err != nil {
			return usageError(err)
		}
	} else if of.metricsPublic || of.metricsHold > 0 {
		return usageError(fmt.Errorf("--metrics-public and --metrics-hold need --metrics ADDR"))
	}
	return nil
}

// serve starts the /metrics server for a run of target clients (nothing without --metrics).
func (of *outputFlags) serve(cmd *cobra.Command, target int) error {
	if of.metrics == "" {
		return nil
	}
	of.live = metrics.NewLive(target, runtime.NumCPU())
	s, err := metrics.Serve(of.metrics, of.live)
	if err != nil {
		return usageError(err)
	}
	of.server = s
	fmt.Fprintf(cmd.ErrOrStderr(), "metrics at http://%s/metrics\n", s.Addr())
	return nil
}

// onInterval feeds the live metrics (nil without --metrics): Runner.OnInterval, or
// Gather's merged intervals.
func (of *outputFlags) onInterval(w io.Writer) func(result.Interval, *result.Snapshot) {
	if of.live == nil {
		return nil
	}
	warned := false
	return func(iv result.Interval, s *result.Snapshot) {
		if err := of.live.Interval(iv, s); err != nil && !warned {
			warned = true
			fmt.Fprintf(w, "warning: --metrics: a latency histogram is missing: %v\n", err)
		}
	}
}

// finish writes --csv and --hlog from the final result and gives the live metrics their
// end-of-run figures. It returns the first error.
func (of *outputFlags) finish(cmd *cobra.Command, res *result.Result) error {
	err := writeOutputs(cmd, res, of.csv, of.hlog)
	if of.live != nil {
		of.live.Finish(res)
		of.finished = true
	}
	return err
}

// stop closes the metrics server once the run is over (its result written): a finished
// run's after --metrics-hold, so that a scraper sees the final figures; a run that failed
// before its end at once.
func (of *outputFlags) stop(cmd *cobra.Command) {
	if of.server == nil {
		return
	}
	if of.finished && of.metricsHold > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "serving the final metrics at http://%s/metrics for %v\n", of.server.Addr(), of.metricsHold)
		select {
		case <-time.After(of.metricsHold):
		case <-cmd.Context().Done():
		}
	}
	_ = of.server.Close()
	of.server = nil
}

// checkOutFlag is checkOut for another flag than --out: a usage error naming flag.
func checkOutFlag(flag, path string) error {
	if err := checkOut(path); err != nil {
		return usageError(errors.New(strings.Replace(err.Error(), "--out", flag, 1)))
	}
	return nil
}

// writeOutputs writes the CSV and the interval log of res to the files given (either may
// be empty).
func writeOutputs(cmd *cobra.Command, res *result.Result, csvPath, hlogPath string) error {
	var first error
	for _, o := range []struct {
		path, what string
		write      func(io.Writer, *result.Result) error
	}{{csvPath, "CSV", rpt.WriteCSV}, {hlogPath, "HdrHistogram interval log", rpt.WriteHlog}} {
		if o.path == "" {
			continue
		}
		err := writeFile(o.path, func(w io.Writer) error { return o.write(w, res) })
		if err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s written to %s\n", o.what, o.path)
		} else if first == nil {
			first = err
		}
	}
	return first
}

// addOutputFlags registers --csv and --hlog on `mqblast report` and returns what writes
// them for a result read from its file: call it from report's RunE once the result is read.
func addOutputFlags(cmd *cobra.Command) func(r *result.Result) error {
	var csvPath, hlogPath string
	fl := cmd.Flags()
	fl.StringVar(&csvPath, "csv", "", "write one CSV row per interval to this file (columns: docs/outputs.md)")
	fl.StringVar(&hlogPath, "hlog", "", "write the intervals' latency histograms as an HdrHistogram interval log (tags latency, latency_raw, connect; µs)")
	return func(r *result.Result) error {
		for _, p := range []struct{ flag, path string }{{"--csv", csvPath}, {"--hlog", hlogPath}} {
			if p.path == "" {
				continue
			}
			if err := checkOutFlag(p.flag, p.path); err != nil {
				return err
			}
		}
		return writeOutputs(cmd, r, csvPath, hlogPath)
	}
}
