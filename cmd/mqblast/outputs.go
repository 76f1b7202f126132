package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run"
)

// registerOutputFlags registers the flags of a run's outputs (docs/outputs.md) on run and
// the quick verbs: --csv and --hlog files written at its end, and --metrics, live
// Prometheus metrics during it.
func registerOutputFlags(fl *pflag.FlagSet, of *run.Outputs) {
	fl.StringVar(&of.CSV, "csv", "", "write one CSV row per interval to this file (columns: docs/outputs.md)")
	fl.StringVar(&of.Hlog, "hlog", "", "write the intervals' latency histograms as an HdrHistogram interval log (tags latency, latency_raw, connect; µs)")
	fl.StringVar(&of.Metrics, "metrics", "", "serve live Prometheus metrics at http://ADDR/metrics during the run, e.g. 127.0.0.1:9464 (loopback only unless --metrics-public)")
	fl.BoolVar(&of.MetricsPublic, "metrics-public", false, "allow a --metrics address that is not loopback (the metrics are then open to the network)")
	fl.DurationVar(&of.MetricsHold, "metrics-hold", 0, "keep serving /metrics this long after the run ended, so that a scraper sees the final figures (e.g. 30s)")
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
			if err := run.CheckOut(p.flag, p.path, "result.json"); err != nil {
				return err
			}
		}
		return run.WriteOutputs(cmd.ErrOrStderr(), r, csvPath, hlogPath)
	}
}
