package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
)

// newChildCmd is the hidden command of the processes a run starts of this binary (workers,
// the run in the packet emulator's namespace): no flags, its spec on descriptor 3.
func newChildCmd() *cobra.Command {
	return &cobra.Command{
		Use:                run.ChildVerb,
		Short:              "internal: a process a run starts (a worker, the run behind the packet emulator); its spec comes on descriptor 3",
		Hidden:             true,
		Args:               cobra.NoArgs,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run.Child(cmd.Context(), os.NewFile(3, "spec"), run.IO{Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(),
				Stderr: cmd.ErrOrStderr(), Version: version}, codeOf)
		},
	}
}
