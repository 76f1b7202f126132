package run

import (
	"errors"

	"github.com/mqblast/mqblast/bench"
)

// The kinds of failure of a run, for errors.Is; the command maps each to its exit code.
var (
	// ErrUsage marks an option that cannot be used as given.
	ErrUsage = errors.New("run: bad option")
	// ErrInvalid marks a scenario or plan that cannot run.
	ErrInvalid = errors.New("run: invalid scenario")
	// ErrNotReady marks a host that is not ready for the run.
	ErrNotReady = errors.New("run: host not ready")
	// ErrThreshold marks a run that ended with a failed threshold.
	ErrThreshold = errors.New("run: threshold failed")
	// ErrInterrupted marks a run that was interrupted (its partial result written).
	ErrInterrupted = bench.ErrInterrupted
)

// Error is an error of one of the kinds above. Its message is its cause's.
type Error struct {
	Kind error // one of the kinds above
	Err  error
}

func (e *Error) Error() string        { return e.Err.Error() }
func (e *Error) Unwrap() error        { return e.Err }
func (e *Error) Is(target error) bool { return target == e.Kind }

// kind marks err as of kind k (nil stays nil).
func kind(k, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

func usage(err error) error { return kind(ErrUsage, err) }

// ExitStatus is the exit code of a command the run started and waited for (the run in the
// emulator's client namespace), to be this process's too.
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string { return e.Err.Error() }
func (e *ExitStatus) Unwrap() error { return e.Err }
