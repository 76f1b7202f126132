package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// MainOptions are the settings of `mqblast study` (Main).
type MainOptions struct {
	Out         string // the study directory (required unless DryRun)
	DryRun      bool   // print the cells and their Specs, run nothing
	NoCheck     bool   // skip the host check
	RetryFailed bool   // a resumed study runs its failed cells again
	// Base is the Spec every cell's starts from; Command the argv that runs a cell's Spec
	// file; Exe the mqblast binary (brokers the study starts); ToolVersion for the index.
	Base        spec.Spec
	Command     func(path string) []string
	Exe         string
	ToolVersion string
	// Preflight checks the host for the largest of plans and refuses a study bound to fail
	// (its error of kind fail.ErrNotReady), returning the findings.
	Preflight      func(w io.Writer, plans []*scenario.Plan) (json.RawMessage, error)
	Stdout, Stderr io.Writer
}

// Main is `mqblast study ARG`: it reads the campaign (a file or a built-in name) and runs
// it into o.Out, or lists its cells (DryRun). Its errors say their kind (internal/fail): an
// invalid campaign, a bad option, a host or a broker that is not ready, an interrupted
// study (the cells done are kept: the same command resumes); a study whose cells failed
// is an error of its own.
func Main(ctx context.Context, arg string, o MainOptions) error {
	c, err := Resolve(arg)
	if err != nil {
		return fail.Mark(fail.ErrInvalid, err)
	}
	if o.Out == "" && !o.DryRun {
		return fail.Mark(fail.ErrUsage, errors.New("--out DIR is required: the study's results, study.json and study.html go there"))
	}
	opt := Options{Dir: o.Out, Exe: o.Exe, ToolVersion: o.ToolVersion, Progress: o.Stderr, RetryFailed: o.RetryFailed,
		Base: o.Base, Command: o.Command, Report: WriteReport}
	if o.DryRun {
		if opt.Dir == "" {
			opt.Dir = "DIR"
		}
		return WriteDryRun(o.Stdout, c, opt)
	}
	if err := CheckInstalled(c); err != nil {
		return fail.Mark(fail.ErrNotReady, err) // before the host check: nothing has run
	}
	if !o.NoCheck {
		plans, err := c.Plans()
		if err != nil {
			return fail.Mark(fail.ErrInvalid, err)
		}
		if opt.HostCheck, err = o.Preflight(o.Stderr, plans); err != nil {
			return err
		}
	}
	if opt.Dir, err = filepath.Abs(o.Out); err != nil {
		return fail.Mark(fail.ErrUsage, err)
	}
	ix, err := Run(ctx, c, opt)
	if ix != nil {
		fmt.Fprintf(o.Stderr, "study: %s, %s and %s\n", filepath.Join(opt.Dir, "study.json"), filepath.Join(opt.Dir, "study.html"),
			filepath.Join(opt.Dir, "summary.md"))
	}
	switch {
	case errors.Is(err, ErrDirInUse):
		return fail.Mark(fail.ErrUsage, err)
	case errors.Is(err, ErrInterrupted):
		return fail.Mark(fail.ErrInterrupted, errors.New("study interrupted: the cells done are in study.json; run the same command to resume"))
	case err != nil:
		return err
	}
	if failed := ix.Failed(); failed > 0 {
		return fmt.Errorf("%d of %d cells failed (their errors are in study.json and the report)", failed, len(ix.Cells))
	}
	return nil
}
