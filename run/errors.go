package run

import "github.com/mqblast/mqblast/internal/fail"

// The kinds of failure of a run (internal/fail), which the command line maps to exit
// codes.
var (
	errUsage       = fail.ErrUsage
	errInvalid     = fail.ErrInvalid
	errNotReady    = fail.ErrNotReady
	errThreshold   = fail.ErrThreshold
	errInterrupted = fail.ErrInterrupted
)

// kind marks err as of kind k (nil stays nil).
func kind(k, err error) error { return fail.Mark(k, err) }

func usage(err error) error { return kind(errUsage, err) }
