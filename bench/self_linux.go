package bench

import "github.com/mqblast/mqblast/tuning"

// The process's own figures, read by tuning.
var (
	cpuTime       = tuning.SelfCPU       // CPU time, user and system
	maxRSS        = tuning.SelfPeakRSS   // peak resident set (VmHWM), bytes
	rss           = tuning.SelfRSS       // current resident set, bytes
	runDelay      = tuning.SelfRunDelay  // time the threads waited for a CPU
	kernelRelease = tuning.KernelRelease // uname -r
)
