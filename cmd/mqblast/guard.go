package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/internal/child"
)

// guardTimeout is how long the guard waits for its program to end after SIGTERM: a study
// waits as long before it kills a broker's group.
const guardTimeout = 10 * time.Second

// newGuardCmd is the hidden command that supervises a program mqblast starts that is not
// mqblast (a study's broker, the packet emulator's broker): child.Guard.
func newGuardCmd() *cobra.Command {
	return &cobra.Command{
		Use:    child.GuardCommand + " -- PROGRAM [ARGS...]",
		Short:  "internal: run a program in this process group and end the group when mqblast is gone",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			code, err := child.Guard(cmd.Context(), args, guardTimeout)
			if err != nil {
				return usageError(err)
			}
			if code != 0 {
				return withCode(code, fmt.Errorf("guard: %s ended with exit code %d", args[0], code))
			}
			return nil
		},
	}
}
