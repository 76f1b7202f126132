package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

func newMergeCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "merge A.json B.json... [-o OUT.json]",
		Short: "Combine the result documents of the shards of one run (--shard I/N on several hosts)",
		Long: `Combine result documents of the shards of one run into one, exactly: counters are added and
percentiles come from the added HdrHistograms, never from averaging the shards' percentiles.
Intervals are added index by index (their percentiles are those of the first shard).

The inputs must be the distinct shards of one run (each written by 'mqblast run --shard I/N',
which records the shard in the document): merge refuses, with the reason and exit 2, the same
file or shard twice, a missing shard, results of different runs (their run identities differ:
run every shard with the same --run-id, or the same --start-at), of different scenarios or
parameters (only parameters.bind may differ), whole runs without --shard, a result whose
histograms are missing although its counts say it has values, and a file that is not a result
document or whose figures do not add up (a negative count, percentiles out of order, an
accounting identity broken), naming the file and the field.`,
		Example: `  mqblast merge host1.json host2.json host3.json -o run.json
  mqblast merge shard-*.json --format json | jq .latency_us`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(fmt.Errorf("merge needs at least one result document"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageError(fmt.Errorf("--format %q: must be text or json", format))
			}
			rs, err := result.ReadFiles(args)
			if err != nil {
				return usageError(err)
			}
			if err := result.CheckFiles(args, rs); err != nil {
				return usageError(err)
			}
			return report.WriteResult(cmd.OutOrStdout(), cmd.ErrOrStderr(), result.Merge(rs), out, format)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the merged document to this file")
	cmd.Flags().StringVar(&format, "format", "text", "stdout format: text (summary) or json (the document)")
	return cmd
}
