package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/study"
)

type studyFlags struct {
	out         string
	list        bool
	dryRun      bool
	noCheck     bool
	retryFailed bool
	runArgs     []string
}

func newStudyCmd() *cobra.Command {
	var sf studyFlags
	cmd := &cobra.Command{
		Use:     "study CAMPAIGN --out DIR",
		Short:   "Run a broker study: brokers x scenarios x sweeps x network profiles x repetitions",
		Long:    helpText("study"),
		Example: examples("study"),
		Args: func(_ *cobra.Command, args []string) error {
			if sf.list {
				if len(args) > 0 {
					return usageError(errors.New("--list takes no campaign"))
				}
				return nil
			}
			if len(args) != 1 {
				return usageError(fmt.Errorf("study takes one campaign (a file or a built-in name), got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.list {
				return study.WriteList(cmd.OutOrStdout())
			}
			return runStudy(cmd, args[0], &sf)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sf.out, "out", "", "the study directory: results, study.json, study.html (required; the same DIR resumes)")
	fl.BoolVar(&sf.list, "list", false, "list the built-in campaigns")
	fl.BoolVar(&sf.dryRun, "dry-run", false, "print the cells in run order and the command of each, run nothing")
	fl.BoolVar(&sf.noCheck, "no-check", false, "skip the host check (mqblast check) before the study")
	fl.BoolVar(&sf.retryFailed, "retry-failed", false, "when resuming, run the failed cells again")
	fl.StringArrayVar(&sf.runArgs, "run-arg", nil, "an argument added to every cell's mqblast run (repeatable), e.g. --run-arg=--loops=1")
	cmd.AddCommand(&cobra.Command{
		Use:     "show NAME",
		Short:   "Print a built-in campaign's JSON",
		Example: "  mqblast study show retain-throughput > retain.json",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError(errors.New("show takes one built-in campaign name (mqblast study --list)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			data, ok := study.BuiltinJSON(args[0])
			if !ok {
				_, err := study.Resolve(args[0])
				return usageError(err)
			}
			_, err := cmd.OutOrStdout().Write(data)
			return err
		},
	})
	return cmd
}

func runStudy(cmd *cobra.Command, arg string, sf *studyFlags) error {
	base, err := cellBase(sf.runArgs)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the mqblast binary to run the cells: %w", err)
	}
	return study.Main(cmd.Context(), arg, study.MainOptions{Out: sf.out, DryRun: sf.dryRun, NoCheck: sf.noCheck,
		RetryFailed: sf.retryFailed, Base: *base, Command: cellCommand(exe), Exe: exe, ToolVersion: version,
		Preflight: run.PreflightLargest, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
}

// cellCommand is the argv of a study's cell: the run of its spec file.
func cellCommand(exe string) func(path string) []string {
	return func(path string) []string { return []string{exe, "run", "--spec", path} }
}

// cellBase is the Spec every cell of a study starts from: what --run-arg gives, read as
// mqblast run's flags. A password there is refused: it would be in every cell's spec.
func cellBase(args []string) (*spec.Spec, error) {
	var rf runFlags
	c := runCmd(&rf)
	if err := c.ParseFlags(args); err != nil {
		return nil, usageError(fmt.Errorf("--run-arg: %w", err))
	}
	bad := ""
	c.Flags().Visit(func(f *pflag.Flag) {
		if pathOf(c, f.Name) == "" || f.Name == "set" || f.Name == "password-file" || f.Name == "broker" || f.Name == "out" {
			bad = "--" + f.Name
		}
	})
	if bad != "" {
		return nil, usageError(fmt.Errorf("--run-arg %s: the study sets every cell's scenario, broker and result, and a password "+
			"there would be in every cell's spec (give it in the campaign, \"set\": {\"server.password\": ...}, or in $%s)", bad, run.PasswordEnv))
	}
	return rf.spec(c, "")
}
