package main

import (
	"fmt"

	"github.com/spf13/cobra"

	rpt "github.com/mqblast/mqblast/report"
)

func newReportCmd() *cobra.Command {
	var f rpt.Files
	cmd := &cobra.Command{
		Use:     "report RESULT.json [--html FILE] [--csv FILE] [--hlog FILE]",
		Short:   "Render a result document: the text summary, or an HTML report with charts",
		Long:    helpText("report"),
		Example: examples("report"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("report takes one result document, got %d arguments (to put several side by side: mqblast compare)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return rpt.Render(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.HTML, "html", "", "write the HTML report to this file")
	fl.StringVar(&f.CSV, "csv", "", "write one CSV row per interval to this file (columns: docs/outputs.md)")
	fl.StringVar(&f.Hlog, "hlog", "", "write the intervals' latency histograms as an HdrHistogram interval log (tags latency, latency_raw, connect; µs)")
	return cmd
}

func newCompareCmd() *cobra.Command {
	var html string
	cmd := &cobra.Command{
		Use:     "compare A.json B.json... [--html FILE]",
		Short:   "Put result documents side by side: brokers, versions, settings",
		Long:    helpText("compare"),
		Example: examples("compare"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError(fmt.Errorf("compare needs at least two result documents, got %d (for one: mqblast report)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return rpt.CompareFiles(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, rpt.Files{HTML: html}, version)
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "also write the comparison as an HTML page to this file")
	return cmd
}
