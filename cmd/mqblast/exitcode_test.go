package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mqblast/mqblast/bench"
	"github.com/mqblast/mqblast/internal/fail"
)

// TestCodeOfRunErrors: the kinds of run's errors map to the exit codes of the table, a
// child's exit status is passed on, and main's own codes win over what they wrap.
func TestCodeOfRunErrors(t *testing.T) {
	cause := errors.New("x")
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{cause, exitFailed},
		{&fail.Error{Kind: fail.ErrUsage, Err: cause}, exitUsage},
		{fmt.Errorf("--net: %w", &fail.Error{Kind: fail.ErrUsage, Err: cause}), exitUsage},
		{&fail.Error{Kind: fail.ErrInvalid, Err: &fail.Error{Kind: fail.ErrUsage, Err: cause}}, exitInvalid},
		{&fail.Error{Kind: fail.ErrNotReady, Err: cause}, exitNotReady},
		{&fail.ExitStatus{Code: 7, Err: cause}, 7},
		{fmt.Errorf("run: %w", bench.ErrInterrupted), exitInterrupted},
		{withCode(exitThreshold, &fail.Error{Kind: fail.ErrUsage, Err: cause}), exitThreshold},
	} {
		if got := codeOf(c.err); got != c.want {
			t.Errorf("codeOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
