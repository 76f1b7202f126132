package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/tuning"
)

func newScenariosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios",
		Long: `scenarios lists the scenarios built into mqblast: the Open MQTT Benchmark Suite cases under
their suite names (singlenode-p2p-50K-50K-50K-50K: publishers, subscribers, topics and
messages per second delivered; singlenode-conn-tcp-1M-5K: clients and connections per
second), and small quick-* ones that run in seconds, for a first run.

Any command that takes a SCENARIO takes a built-in name as well as a file.
'mqblast scenarios show NAME' prints a built-in's JSON, ready to copy and edit; every field
of the file (type, default, meaning) is described in docs/scenario.md.`,
		Example: `  mqblast scenarios
  mqblast scenarios show singlenode-fanout-5-1000-5-250K > fanout.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError(fmt.Errorf("unknown scenarios command %q (want show NAME)", args[0]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return scenario.WriteBuiltins(cmd.OutOrStdout())
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a built-in scenario's JSON",
		Long: `show prints the JSON file of the built-in scenario NAME, the format 'mqblast run' and
'mqblast validate' read. Save it, edit it, and run the file. The reference of every field
(type, default, meaning) is docs/scenario.md.`,
		Example: `  mqblast scenarios show quick-p2p-100
  mqblast scenarios show singlenode-p2p-50K-50K-50K-50K > p2p.json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(fmt.Errorf("show takes one scenario name, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, ok := scenario.BuiltinJSON(args[0])
			if !ok {
				return usageError(fmt.Errorf("no built-in scenario %q (mqblast scenarios lists them)", args[0]))
			}
			_, err := cmd.OutOrStdout().Write(data)
			return err
		},
	})
	return cmd
}

// planNeeds turns `mqblast check SCENARIO` into what the scenario's plan needs from this host.
func planNeeds(_ context.Context, arg string) (tuning.Needs, error) {
	s, err := scenario.Resolve(arg)
	if err != nil {
		return tuning.Needs{}, withCode(exitInvalid, err)
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		return tuning.Needs{}, withCode(exitInvalid, err)
	}
	return run.Needs(p), nil
}
