// Package fail names the kinds of failure of mqblast's commands, which the command line
// turns into exit codes: a bad option (ErrUsage), a scenario or plan that cannot run
// (ErrInvalid), a host not ready (ErrNotReady), a failed threshold (ErrThreshold), an interrupted
// run (ErrInterrupted), and a child's exit status (ExitStatus). The packages that run things
// (run, network, bench) mark their errors with it; only the command line reads the marks.
//
// It must not print or exit, and imports nothing.
package fail

import "errors"

// The kinds of failure, for errors.Is.
var (
	// ErrUsage marks an option that cannot be used as given.
	ErrUsage = errors.New("bad option")
	// ErrInvalid marks a scenario or plan that cannot run.
	ErrInvalid = errors.New("invalid scenario")
	// ErrNotReady marks a host that is not ready for the run.
	ErrNotReady = errors.New("host not ready")
	// ErrThreshold marks a run that ended with a failed threshold.
	ErrThreshold = errors.New("threshold failed")
	// ErrInterrupted marks a run that was interrupted (its partial result written).
	ErrInterrupted = errors.New("interrupted")
)

// Error is an error of one of the kinds above. Its message is its cause's.
type Error struct {
	Kind error // one of the kinds above
	Err  error
}

func (e *Error) Error() string        { return e.Err.Error() }
func (e *Error) Unwrap() error        { return e.Err }
func (e *Error) Is(target error) bool { return target == e.Kind }

// Mark marks err as of kind k (nil stays nil).
func Mark(k, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

// KindOf returns the outermost kind err is marked with, nil for none.
func KindOf(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return nil
}

// ExitStatus is the exit code of a command a run started and waited for (the run in the
// packet emulator's client namespace, a worker), to be this process's too.
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string { return e.Err.Error() }
func (e *ExitStatus) Unwrap() error { return e.Err }
