package run

import "github.com/mqblast/mqblast/internal/fail"

// The kinds of failure of a run (internal/fail), which the command line maps to exit
// codes.
var (
	errUsage       = fail.Usage
	errInvalid     = fail.Invalid
	errNotReady    = fail.NotReady
	errThreshold   = fail.Threshold
	errInterrupted = fail.Interrupted
)

// kind marks err as of kind k (nil stays nil).
func kind(k, err error) error { return fail.Mark(k, err) }

func usage(err error) error { return kind(errUsage, err) }
