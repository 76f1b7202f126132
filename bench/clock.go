package bench

import "github.com/mqblast/mqblast/result"

// HostClock returns this host's clock error estimate; nil when the kernel does not say.
func HostClock() *result.Clock { return hostClock() }
