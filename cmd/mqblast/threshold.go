package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/scenario"
)

// thresholdHelp is the help text of --threshold, shared by run, conn, pub and sub.
const thresholdHelp = "pass/fail criterion PATH OP NUMBER on the result document, e.g. messages.lost==0 or " +
	"'latency_us.p99<50000' (< <= > >= == !=; repeatable, added to the scenario's; exit 5 when one fails)"

// registerScenarioFlags registers the flags that run and the quick verbs (conn, pub, sub)
// share to change the scenario and judge its result: --set and --threshold.
func (rf *runFlags) registerScenarioFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&rf.sets, "set", nil, "override a scenario field: path=value, e.g. parameters.connection_rate=500 (repeatable)")
	fl.StringArrayVar(&rf.thresholds, "threshold", nil, thresholdHelp)
}

// checkThresholds collects the thresholds of the run, the scenario's then --threshold's,
// into rf.evaluate, and checks their syntax and paths before the run starts: a bad
// --threshold is a usage error (exit 2), a bad one in the scenario makes it invalid (exit 3).
func checkThresholds(s *scenario.Scenario, rf *runFlags) error {
	if err := scenarioThresholdsError(s); err != nil {
		return withCode(exitInvalid, err)
	}
	var lines []string
	for _, e := range rf.thresholds {
		if err := bench.CheckThresholdPaths([]string{e}); err != nil {
			lines = append(lines, "--"+err.Error()) // `--threshold "expr": ...`
		}
	}
	if len(lines) > 0 {
		return usageError(fmt.Errorf("%s", strings.Join(lines, "\n")))
	}
	rf.evaluate = append(append([]string(nil), s.Thresholds...), rf.thresholds...)
	return nil
}

// scenarioThresholdsError checks the scenario's thresholds; each problem is one line that
// names the file and the list index, as scenario's own errors do.
func scenarioThresholdsError(s *scenario.Scenario) error {
	var lines []string
	for i, e := range s.Thresholds {
		if err := bench.CheckThresholdPaths([]string{e}); err != nil {
			lines = append(lines, fmt.Sprintf("%s: thresholds[%d]: %v", s.File(), i, err))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(lines, "\n"))
}

// report evaluates the run's thresholds on res (a partial result too), writes res with
// them, and maps the outcome to an exit code: a failed or interrupted run keeps its own
// code; otherwise a failed threshold exits 5.
func report(cmd *cobra.Command, res *bench.Result, runErr error, rf *runFlags) error {
	var evalErr error
	if len(rf.evaluate) > 0 {
		evalErr = res.EvaluateThresholds(rf.evaluate)
	}
	ferr := rf.outputs.Finish(cmd.ErrOrStderr(), res)
	if werr := errors.Join(writeResult(cmd, res, rf.out, rf.format), ferr); werr != nil {
		return werr
	}
	if werr := runHTMLReport(cmd, res, rf); werr != nil { // report.go
		return werr
	}
	if err := outcome(res, runErr, cmd.Context()); err != nil {
		return err
	}
	if evalErr != nil {
		return withCode(exitFailed, fmt.Errorf("cannot evaluate the thresholds: %w", evalErr))
	}
	failed := res.FailedThresholds()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, t := range failed {
		parts[i] = fmt.Sprintf("%s (value %s)", t.Expr, bench.FormatThresholdValue(t.Value))
	}
	return withCode(exitThreshold, fmt.Errorf("%d of %d thresholds failed: %s",
		len(failed), len(res.Thresholds), strings.Join(parts, ", ")))
}
