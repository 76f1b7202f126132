package main

import (
	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/run"
)

// checkInputs checks the flags of a run that can be checked before any socket opens
// (run.Inputs): --duration (given to run) and --loops in range, the --out and --html files,
// and --bind (or --ifaddr).
func checkInputs(cmd *cobra.Command, rf *runFlags) error {
	flag := "--bind"
	if cmd.Flags().Lookup("ifaddr") != nil {
		flag = "--ifaddr"
	}
	f := cmd.Flags().Lookup("duration")
	return run.Inputs{Duration: rf.duration, DurationGiven: cmd.Name() == "run" && f != nil && f.Changed, Loops: rf.loops,
		BindFlag: flag, Bind: rf.bind, HTML: rf.html, Out: rf.out}.Check()
}
