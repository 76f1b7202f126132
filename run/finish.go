package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
)

// finisher says what the end of a run writes, and where.
type finisher struct {
	// Evaluate are the thresholds to evaluate on the result (checkThresholds).
	Evaluate []string
	// Outputs are the run's CSV, hlog and live metrics, finished with the result.
	Outputs *outputs
	// Out is the file of the result document, HTML that of the HTML report ("": none).
	Out, HTML string
	// Format is that of stdout: text (the summary) or json (the result document).
	Format string
	// Stdout takes the result, Stderr what was written where.
	Stdout, Stderr io.Writer
	// spec is the Spec of the run as its result records it.
	spec json.RawMessage
}

// Finish evaluates the run's thresholds on res (a partial result too), writes res with
// them, and returns the outcome: a failed or interrupted run keeps its own error (of kind
// errInterrupted for an interrupted one, an ExitStatus for a worker's exit code);
// otherwise a failed threshold is of kind errThreshold.
func (rp finisher) Finish(ctx context.Context, res *result.Result, runErr error) error {
	if rp.spec != nil {
		res.Spec = rp.spec
	}
	var evalErr error
	if len(rp.Evaluate) > 0 {
		evalErr = res.EvaluateThresholds(rp.Evaluate)
	}
	ferr := rp.Outputs.Finish(rp.Stderr, res)
	if werr := errors.Join(report.WriteResult(rp.Stdout, rp.Stderr, res, rp.Out, rp.Format), ferr); werr != nil {
		return werr
	}
	if werr := rp.writeHTML(res); werr != nil {
		return werr
	}
	if err := outcome(res, runErr, ctx); err != nil {
		return err
	}
	if evalErr != nil {
		return fmt.Errorf("cannot evaluate the thresholds: %w", evalErr)
	}
	failed := res.FailedThresholds()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, t := range failed {
		parts[i] = fmt.Sprintf("%s (value %s)", t.Expr, t.ValueText())
	}
	return kind(errThreshold, fmt.Errorf("%d of %d thresholds failed: %s",
		len(failed), len(res.Thresholds), strings.Join(parts, ", ")))
}

// writeHTML writes a finished (or interrupted) run's HTML report when one was asked for;
// a failure to write it is the run's error only when the run itself succeeded.
func (rp finisher) writeHTML(res *result.Result) error {
	if rp.HTML == "" || res == nil {
		return nil
	}
	name := ""
	if rp.Out != "" {
		name = filepath.Base(rp.Out)
	}
	return report.WriteHTMLFile(rp.Stderr, res, name, rp.HTML)
}

// outcome is the error a finished run ends with.
func outcome(res *result.Result, err error, ctx context.Context) error {
	var we *bench.WorkerError
	switch {
	case res.Interrupted || errors.Is(err, bench.ErrInterrupted) || ctx.Err() != nil:
		return kind(errInterrupted, errors.New("interrupted: partial result written"))
	case errors.As(err, &we) && we.Code != 0:
		return &fail.ExitStatus{Code: we.Code, Err: err}
	case err != nil:
		return err
	case res.Connections.Established == 0:
		return fmt.Errorf("no connection was established: %s", firstError(res))
	case res.Failure() != nil:
		return errors.New(termtext.Line(res.Failure().Error()))
	}
	return nil
}

func firstError(res *result.Result) string {
	if len(res.Errors) == 0 {
		return "no error recorded"
	}
	e := res.Errors[0]
	return termtext.Line(fmt.Sprintf("%s x%d (%s)", e.Kind, e.Count, e.Example))
}
