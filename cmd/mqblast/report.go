package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	rpt "github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

func newReportCmd() *cobra.Command {
	var html string
	var writeOutputs func(r *result.Result) error
	cmd := &cobra.Command{
		Use:   "report RESULT.json [--html FILE] [--csv FILE] [--hlog FILE]",
		Short: "Render a result document: the text summary, or an HTML report with charts",
		Long: `Render a result document (mqblast run --out FILE). Without --html, print the text summary
that the run printed. With --html FILE, write one self-contained HTML page: the summary
(verdicts, thresholds, saturation and stall evidence, host checks), messages per second,
latency per interval (corrected and raw, log axis), the percentile spectrum of the measure
window, connections and connect latency, delivery, client CPU and memory, the broker's CPU
and memory and the kernel counters when the result has them, and the effective scenario.
The page needs no network (the charting library, uPlot, is inline, and so is the result
document), follows the light or dark theme and prints. --csv and --hlog write the
intervals as CSV and as an HdrHistogram interval log (docs/outputs.md).`,
		Example: `  mqblast report run.json
  mqblast report run.json --html run.html
  mqblast report run.json --csv run.csv --hlog run.hlog
  mqblast run quick-p2p-100 --html run.html   # the same, at the end of a run`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("report takes one result document, got %d arguments (to put several side by side: mqblast compare)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if html != "" {
				if err := checkOut("--html", html, "report.html"); err != nil {
					return err
				}
			}
			r, err := result.ReadFile(args[0])
			if err != nil {
				return usageError(err)
			}
			if err := writeOutputs(r); err != nil {
				return err
			}
			if html == "" {
				return rpt.WriteSummary(cmd.OutOrStdout(), r)
			}
			return rpt.WriteHTMLFile(cmd.ErrOrStderr(), r, filepath.Base(args[0]), html)
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "write the HTML report to this file")
	writeOutputs = addOutputFlags(cmd)
	return cmd
}

func newCompareCmd() *cobra.Command {
	var html string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json... [--html FILE]",
		Short: "Put result documents side by side: brokers, versions, settings",
		Long: `Put two or more result documents side by side: a table on stdout (throughput, latency
percentiles, connect rate and latency, losses, client and broker CPU and memory; one column
per result, labelled with its broker and scenario or its file name; the best value of each
row marked *). With --html FILE, also a self-contained HTML page with the table, boxplots of
the latency distributions (box p25-p75, median, whiskers p1 and p99, exact from the
histograms), overlaid percentile spectra and time series.

Results of different scenarios are compared, but with a warning that names what differs
(name, type, client groups, parameters; the server is expected to differ).`,
		Example: `  mqblast compare mosquitto.json emqx.json
  mqblast compare runs/*.json --html compare.html`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError(fmt.Errorf("compare needs at least two result documents, got %d (for one: mqblast report)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if html != "" {
				if err := checkOut("--html", html, "report.html"); err != nil {
					return err
				}
			}
			rs, err := result.ReadFiles(args)
			if err != nil {
				return usageError(err)
			}
			in := make([]rpt.Input, len(rs))
			for i, r := range rs {
				in[i] = rpt.Input{Name: args[i], Result: r}
			}
			if err := rpt.WriteCompare(cmd.OutOrStdout(), in); err != nil {
				return err
			}
			if html == "" {
				return nil
			}
			if err := rpt.WriteFile(html, func(w io.Writer) error { return rpt.WriteCompareHTML(w, in, version) }); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "comparison written to %s\n", html)
			return nil
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "also write the comparison as an HTML page to this file")
	return cmd
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
			if err := checkOut(p.flag, p.path, "result.json"); err != nil {
				return err
			}
		}
		return rpt.WriteOutputs(cmd.ErrOrStderr(), r, csvPath, hlogPath)
	}
}

// checkOut refuses, as a usage error naming flag, a path the file of flag cannot be
// written to.
func checkOut(flag, path, example string) error {
	if err := rpt.CheckPath(path, example); err != nil {
		return usageError(fmt.Errorf("%s %s: %w", flag, path, err))
	}
	return nil
}
