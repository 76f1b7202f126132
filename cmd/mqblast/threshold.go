package main

import (
	"github.com/spf13/cobra"

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

// runReport says what the end of a run writes: the result with the run's thresholds
// evaluated (run.Report.Finish).
func runReport(cmd *cobra.Command, rf *runFlags) run.Report {
	return run.Report{Evaluate: rf.evaluate, Outputs: &rf.outputs, Out: rf.out, HTML: rf.html, Format: rf.format,
		Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()}
}
