package tuning

import (
	"os"
	"testing"
)

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

// BenchmarkParseKernelTables is the parsing part of ReadKernel alone: this host's netstat
// and snmp, read once, parsed per iteration (the reading is the kernel's work, and noisy).
func BenchmarkParseKernelTables(b *testing.B) {
	var files [][]byte
	for _, name := range []string{"/proc/self/net/netstat", "/proc/self/net/snmp"} {
		f, err := os.ReadFile(name)
		if err != nil {
			b.Skip(err)
		}
		files = append(files, f)
	}
	b.ReportAllocs()
	for b.Loop() {
		k := make(KernelCounters, 32)
		for _, f := range files {
			if err := parseTables(f, k); err != nil {
				b.Fatal(err)
			}
		}
		sinkCounters = k
	}
}
