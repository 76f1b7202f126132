//go:build !unix

package fastbroker

import "time"

// processCPU is not measured here; callers skip what needs it.
func processCPU() time.Duration { return -1 }
