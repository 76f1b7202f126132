package main

import (
	"fmt"

	"github.com/mqblast/mqblast/run"
	"github.com/spf13/cobra"
)

// checkInputs checks the flags of a run that can be checked before any socket opens:
// --duration and --loops in range, an --out file that can be written, and --bind (or
// --ifaddr) words that are addresses of this host, ranges or CIDRs of them, or interfaces.
// Every error is a usage error naming the flag, its value and the fix.
func checkInputs(cmd *cobra.Command, rf *runFlags) error {
	if f := cmd.Flags().Lookup("duration"); cmd.Name() == "run" && f != nil && f.Changed && rf.duration <= 0 {
		return usageError(fmt.Errorf("--duration %v: must be more than 0 (e.g. --duration 30s)", rf.duration))
	}
	if rf.loops < 0 {
		return usageError(fmt.Errorf("--loops %d: must be 0 (one event loop per core) or more", rf.loops))
	}
	flag := "--bind"
	if cmd.Flags().Lookup("ifaddr") != nil {
		flag = "--ifaddr"
	}
	if err := run.CheckBind(flag, rf.bind); err != nil {
		return usageError(err)
	}
	if rf.html != "" {
		if err := run.CheckOut("--html", rf.html, "report.html"); err != nil {
			return err
		}
	}
	if rf.out != "" {
		if err := run.CheckOut("--out", rf.out, "result.json"); err != nil {
			return err
		}
	}
	return nil
}
