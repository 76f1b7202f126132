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
		Use:     "scenarios",
		Short:   "List the built-in scenarios",
		Long:    helpText("scenarios"),
		Example: examples("scenarios"),
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
		Use:     "show NAME",
		Short:   "Print a built-in scenario's JSON",
		Long:    helpText("scenarios-show"),
		Example: examples("scenarios-show"),
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
