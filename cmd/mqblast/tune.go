package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/tuning"
)

func init() { register(newTuneCmd) }

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
				return writeChanges(w, changes, r, "would ")
			}
			done, err := tuning.Apply(nf.root, changes)
			if werr := writeChanges(w, done, r, ""); werr != nil && err == nil {
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

// writeChanges prints each change with its old value and revert command, then what is left.
func writeChanges(w io.Writer, changes []tuning.Change, r tuning.Report, verb string) error {
	var b strings.Builder
	if len(changes) == 0 {
		b.WriteString("no sysctl or rlimit change needed\n")
	}
	for _, ch := range changes {
		if strings.HasPrefix(ch.Path, "/proc/sys/") {
			fmt.Fprintf(&b, "%sset %s: %s -> %s\n", verb, ch.Name, ch.Old, ch.New)
		} else {
			old := "new file"
			if ch.Old != "" {
				old = "replacing " + fmt.Sprintf("%q", ch.Old)
			}
			fmt.Fprintf(&b, "%swrite %s (%s): %q\n", verb, ch.Path, old, ch.New)
		}
		fmt.Fprintf(&b, "  revert: %s\n", ch.Revert)
		if ch.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", ch.Note)
		}
	}
	applied := map[string]bool{}
	for _, ch := range changes {
		applied[ch.Name] = true
	}
	for _, f := range r.Findings {
		if f.Verdict == tuning.OK || applied[f.Name] {
			continue
		}
		fmt.Fprintf(&b, "left to do by hand: %s %s: %s\n", f.Verdict, f.Name, f.Why)
		for _, fix := range f.Fix {
			fmt.Fprintf(&b, "  fix: %s\n", fix)
		}
	}
	b.WriteString("run 'mqblast check' with the same flags to see where the host stands\n")
	_, err := io.WriteString(w, b.String())
	return err
}
