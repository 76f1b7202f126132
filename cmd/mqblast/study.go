package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
		Use:   "study CAMPAIGN --out DIR",
		Short: "Run a broker study: brokers x scenarios x sweeps x network profiles x repetitions",
		Long: `study runs a campaign (a JSON file or a built-in name: study --list) cell by cell and
writes into DIR each cell's result document (cells/cNNNN.json, the one 'mqblast run'
writes), study.json (the campaign, every cell with its parameters, status, error, result
and the exact command that reproduces it) and study.html (boxplots of latency per sweep
value with one group per network profile and one box per broker, a median/IQR table,
throughput bars, the broker's CPU and RSS per cell; self-contained), and summary.md (a
Markdown table per sweep value: one row per profile and broker, medians and IQR).

A campaign lists brokers (external at an address; or started by the study: embedded,
mosquitto, sink, or any start command, with {port} a free port the study picks),
scenarios (built-in names or files) with "set" overrides and "sweep" lists of --set
values, network profiles, repetitions, duration_sec/warmup_sec overrides and pause_sec
between cells. Every field is validated before anything runs, each error with its JSON
path.

Each cell is its own 'mqblast run' process (the command study.json records), so a cell
that crashes or hangs cannot take the study down. Repetitions are interleaved (round 1 of
every cell, then round 2 ...; "order": "shuffled" shuffles each round from a recorded
seed) so that drift spreads over every broker. A broker the study starts is started
afresh before each cell and stopped after it; one with a restart command is restarted.
The host is checked once, for the largest cell. A failed cell (its run fails, its broker
dies) is recorded and the study goes on. Run the same command again to resume: the cells
done are kept and skipped (--retry-failed runs the failed ones again). Progress (cell k
of n, ETA) goes to stderr; Ctrl-C interrupts the running cell (its partial result kept),
writes study.json and study.html, and exits 130. The exit code is 1 when a cell failed.`,
		Example: `  mqblast study --list
  mqblast study show edge-profiles-payloads > edge.json
  mqblast study retain-throughput --out study-retain
  mqblast study edge.json --out results/edge --dry-run`,
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
	c, err := study.Resolve(arg)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	if sf.out == "" && !sf.dryRun {
		return usageError(errors.New("--out DIR is required: the study's results, study.json and study.html go there"))
	}
	base, err := cellBase(sf.runArgs)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the mqblast binary to run the cells: %w", err)
	}
	if sf.dryRun {
		return dryRun(cmd, c, exe, sf)
	}
	if err := study.CheckInstalled(c); err != nil {
		return withCode(exitNotReady, err) // before the host check: nothing has run
	}
	var check json.RawMessage
	if !sf.noCheck {
		if check, err = studyPreflight(cmd, c); err != nil {
			return err
		}
	}
	dir, err := filepath.Abs(sf.out)
	if err != nil {
		return usageError(err)
	}
	ix, err := study.Run(cmd.Context(), c, study.Options{Dir: dir, Exe: exe, ToolVersion: version,
		Progress: cmd.ErrOrStderr(), RetryFailed: sf.retryFailed, HostCheck: check, Base: *base, Command: cellCommand(exe),
		Report: study.WriteReport})
	if ix != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "study: %s, %s and %s\n", filepath.Join(dir, "study.json"), filepath.Join(dir, "study.html"),
			filepath.Join(dir, "summary.md"))
	}
	switch {
	case errors.Is(err, study.ErrDirInUse):
		return usageError(err)
	case errors.Is(err, study.ErrInterrupted):
		return withCode(exitInterrupted, errors.New("study interrupted: the cells done are in study.json; run the same command to resume"))
	case err != nil:
		return err
	}
	if failed := ix.Failed(); failed > 0 {
		return withCode(exitFailed, fmt.Errorf("%d of %d cells failed (their errors are in study.json and the report)", failed, len(ix.Cells)))
	}
	return nil
}

// studyPreflight checks the host once, for the cell with the most connections, and
// refuses a study bound to fail; the cells then run with --no-check.
func studyPreflight(cmd *cobra.Command, c *study.Campaign) (json.RawMessage, error) {
	plans, err := c.Plans()
	if err != nil {
		return nil, withCode(exitInvalid, err)
	}
	return run.PreflightLargest(cmd.ErrOrStderr(), plans)
}

func dryRun(cmd *cobra.Command, c *study.Campaign, exe string, sf *studyFlags) error {
	dir := sf.out
	if dir == "" {
		dir = "DIR"
	}
	base, err := cellBase(sf.runArgs)
	if err != nil {
		return err
	}
	return study.WriteDryRun(cmd.OutOrStdout(), c, study.Options{Dir: dir, Exe: exe, Base: *base, Command: cellCommand(exe)})
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
