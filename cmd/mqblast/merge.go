package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/report"
)

func newMergeCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:     "merge A.json B.json... [-o OUT.json]",
		Short:   "Combine the result documents of the shards of one run (--shard I/N on several hosts)",
		Long:    helpText("merge"),
		Example: examples("merge"),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usageError(fmt.Errorf("merge needs at least one result document"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return report.MergeFiles(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, out, format)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the merged document to this file")
	cmd.Flags().StringVar(&format, "format", "text", "stdout format: text (summary) or json (the document)")
	return cmd
}
