package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/tuning"
)

// geteuid is os.Geteuid; tests replace it.
var geteuid = os.Geteuid

func newTuneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tune",
		Short:   "Apply the host fixes that 'mqblast check' prints",
		Long:    helpText("tune"),
		Example: "  mqblast tune apply --connections 100000 --dry-run",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newTuneApplyCmd())
	return cmd
}

func newTuneApplyCmd() *cobra.Command {
	var (
		nf              needsFlags
		dryRun, persist bool
		onlyIf          string
	)
	cmd := &cobra.Command{
		Use:   "apply [--connections N] [--dry-run]",
		Short: "Apply the sysctl and RLIMIT_NOFILE fixes for a run (root)",
		Long: helpText("tune-apply") + tuning.SysctlFile + `), and, when the descriptor
hard limit is too low, ` + tuning.LimitsFile + ` (effective at the next
login: the hard limit is inherited). It prints every change with its old value and the command
that reverts it, then the findings it cannot fix (THP, swap, memory, cores, ...).

It refuses to run without root; --dry-run prints the changes without making them.
--only-if VALUE applies only when VALUE is true (1, t, true, ...) and otherwise says so and
exits 0: a Kubernetes init container gates itself with --only-if "$(MQBLAST_TUNE)" from a
ConfigMap (deploy/kubernetes).`,
		Example: examples("tune-apply"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onlyIf != "" {
				on, err := strconv.ParseBool(strings.TrimSpace(onlyIf))
				if err != nil {
					return usageError(fmt.Errorf("--only-if %q: want true or false", onlyIf))
				}
				if !on {
					fmt.Fprintln(cmd.OutOrStdout(), "tune apply: --only-if is false: nothing changed")
					return nil
				}
			}
			needs, err := nf.d.Needs()
			if err != nil {
				return err
			}
			return tuning.Tune(cmd.OutOrStdout(), nf.root, needs, dryRun, persist, geteuid() == 0)
		},
	}
	nf.register(cmd, 100000)
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes without making them")
	fl.StringVar(&onlyIf, "only-if", "", "apply only when this is true (e.g. --only-if \"$MQBLAST_TUNE\"); false: do nothing, exit 0")
	fl.BoolVar(&persist, "persist", false, "also write the sysctls to "+tuning.SysctlFile+" so they survive a reboot")
	return cmd
}
