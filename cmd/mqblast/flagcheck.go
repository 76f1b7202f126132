package main

import (
	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
)

// checkInputs checks the flags of a run that can be checked before any socket opens
// (run.Inputs): --duration (given to run), --loops and --sink-flush-delay in range, the
// --out and --html files, and --bind (or --ifaddr).
func checkInputs(cmd *cobra.Command, rf *runFlags) error {
	f := cmd.Flags().Lookup("duration")
	return run.Inputs{Duration: rf.duration, DurationGiven: cmd.Name() == "run" && f != nil && f.Changed, Loops: rf.loops,
		Sink: rf.sink, SinkDelay: rf.sinkWait, BindFlag: bindFlag(cmd), Bind: rf.bind, HTML: rf.html, Out: rf.out}.Check()
}

// bindFlag is the name of the command's flag of source addresses: --ifaddr for the quick
// verbs, --bind for run.
func bindFlag(cmd *cobra.Command) string {
	if cmd.Flags().Lookup("ifaddr") != nil {
		return "--ifaddr"
	}
	return "--bind"
}
