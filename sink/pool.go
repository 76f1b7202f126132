package sink

import "github.com/panjf2000/gnet/v2/pkg/pool/goroutine"

// gnet starts a package-level goroutine pool (ants) in every process that links it, which is
// every mqblast process: its clock goroutine ticks every 500 ms and its purge every 10 s, so
// an idle worker or sink process woke three times a second for nothing, and each wake of an
// idle Go process sets the runtime's sysmon polling every 20 µs for a millisecond or more.
// The pool serves only gnet's Register (and Windows); the sink never calls it.
func init() { goroutine.DefaultWorkerPool.Release() }
