package main

import (
	"errors"
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
		Use:   "tune",
		Short: "Apply the host fixes that 'mqblast check' prints",
		Long: `tune changes this host's settings for a run, and only when asked: see 'mqblast tune apply'.
'mqblast check' shows what would change and why.`,
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
		Long: `apply runs the checks of 'mqblast check' for the run described by the flags and applies
the fixes it can: every sysctl that is too low (written under /proc/sys, so until the next boot
unless --persist also writes ` + tuning.SysctlFile + `), and, when the descriptor
hard limit is too low, ` + tuning.LimitsFile + ` (effective at the next
login: the hard limit is inherited). It prints every change with its old value and the command
that reverts it, then the findings it cannot fix (THP, swap, memory, cores, ...).

It refuses to run without root; --dry-run prints the changes without making them.
--only-if VALUE applies only when VALUE is true (1, t, true, ...) and otherwise says so and
exits 0: a Kubernetes init container gates itself with --only-if "$(MQBLAST_TUNE)" from a
ConfigMap (deploy/kubernetes).`,
		Example: `  mqblast tune apply --connections 100000 --dry-run
  sudo mqblast tune apply --connections 1000000 --addrs 20 --persist`,
		Args: cobra.NoArgs,
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
			needs, err := nf.needs()
			if err != nil {
				return err
			}
			if !dryRun && geteuid() != 0 {
				return errors.New("tune apply changes system settings and needs root; try --dry-run to see the changes")
			}
			r := tuning.Check(nf.root, needs)
			changes, err := tuning.PlanChanges(nf.root, r, persist)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if dryRun {
				return tuning.WriteChanges(w, changes, r, "would ")
			}
			done, err := tuning.Apply(nf.root, changes)
			if werr := tuning.WriteChanges(w, done, r, ""); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	nf.register(cmd, 100000)
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes without making them")
	fl.StringVar(&onlyIf, "only-if", "", "apply only when this is true (e.g. --only-if \"$MQBLAST_TUNE\"); false: do nothing, exit 0")
	fl.BoolVar(&persist, "persist", false, "also write the sysctls to "+tuning.SysctlFile+" so they survive a reboot")
	return cmd
}
