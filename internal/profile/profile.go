// Package profile writes Go profiles of this process for the hidden --cpuprofile and
// --memprofile flags: how mqblast's own costs are found.
//
// It imports nothing of mqblast's.
package profile

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// Start starts a CPU profile into cpu and samples the heap for mem ("": neither); the
// returned stop ends the CPU profile and writes the heap profile. An error names the file.
func Start(cpu, mem string) (stop func(), err error) {
	if mem != "" {
		runtime.MemProfileRate = 4096
	}
	stopCPU := func() {}
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		stopCPU = func() { pprof.StopCPUProfile(); _ = f.Close() }
	}
	return func() {
		stopCPU()
		if mem == "" {
			return
		}
		if f, err := os.Create(mem); err == nil {
			runtime.GC()
			_ = pprof.WriteHeapProfile(f)
			_ = f.Close()
		}
	}, nil
}
