package tuning

import "testing"

var sinkCounters KernelCounters

// BenchmarkReadKernel is the per-interval cost of reading the client's counters (once a second).
func BenchmarkReadKernel(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		k, err := ReadKernel("/proc/self", "/proc/sys")
		if err != nil {
			b.Fatal(err)
		}
		sinkCounters = k
	}
}
