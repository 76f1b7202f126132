package main

import (
	"fmt"
	"os"
	"path/filepath"

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
		if err := checkHTMLOut(rf.html); err != nil { // report.go
			return usageError(err)
		}
	}
	if rf.out != "" {
		if err := checkOut(rf.out); err != nil {
			return usageError(err)
		}
	}
	return nil
}

// checkOut makes sure that the result can be written to path when the run ends: path is not
// a directory and its directory takes a new file (writeFile writes one and renames it).
func checkOut(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--out %s: is a directory (give a file name, e.g. %s)", path, filepath.Join(path, "result.json"))
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".mqblast-check-*")
	if err != nil {
		return fmt.Errorf("--out %s: cannot write there: %w (give a path in an existing, writable directory)", path, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}
