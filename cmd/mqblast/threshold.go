package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run"
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
// into rf.evaluate, and checks them before the run starts (run.Thresholds).
func checkThresholds(s *scenario.Scenario, rf *runFlags) error {
	ev, err := run.Thresholds(s, rf.thresholds)
	if err != nil {
		return err
	}
	rf.evaluate = ev
	return nil
}

// report evaluates the run's thresholds on res (a partial result too), writes res with
// them, and maps the outcome to an exit code: a failed or interrupted run keeps its own
// code; otherwise a failed threshold exits 5.
func report(cmd *cobra.Command, res *result.Result, runErr error, rf *runFlags) error {
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
		parts[i] = fmt.Sprintf("%s (value %s)", t.Expr, result.FormatThresholdValue(t.Value))
	}
	return withCode(exitThreshold, fmt.Errorf("%d of %d thresholds failed: %s",
		len(failed), len(res.Thresholds), strings.Join(parts, ", ")))
}
