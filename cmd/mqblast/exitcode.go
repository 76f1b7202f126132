package main

import (
	"errors"

	"github.com/mqblast/mqblast/internal/fail"
)

// Exit codes of mqblast. main alone turns an error into one of these.
const (
	exitOK          = 0   // the run or command succeeded
	exitFailed      = 1   // the run failed (broker unreachable, I/O error, ...)
	exitUsage       = 2   // bad flags or arguments
	exitInvalid     = 3   // a scenario file is invalid
	exitNotReady    = 4   // the host is not ready for the run
	exitThreshold   = 5   // a declared threshold was breached
	exitInterrupted = 130 // interrupted by SIGINT/SIGTERM; partial results were written
)

// exitError carries an exit code up to main through wrapping.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageError marks err as a usage error (exit 2).
func usageError(err error) error { return withCode(exitUsage, err) }

// codeOf returns the exit code carried by err: its exitError's, a child's exit status, the
// code of the kind of a run's error; exitFailed for an error without one.
func codeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var st *fail.ExitStatus
	if errors.As(err, &st) {
		return st.Code
	}
	switch k := fail.KindOf(err); { // the outermost kind decides
	case errors.Is(k, fail.ErrUsage):
		return exitUsage
	case errors.Is(k, fail.ErrInvalid):
		return exitInvalid
	case errors.Is(k, fail.ErrNotReady):
		return exitNotReady
	case errors.Is(k, fail.ErrThreshold):
		return exitThreshold
	}
	if errors.Is(err, fail.ErrInterrupted) {
		return exitInterrupted
	}
	return exitFailed
}
