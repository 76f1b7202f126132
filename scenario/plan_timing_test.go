package scenario

import (
	"runtime"
	"testing"
)

var (
	sinkPlan     *Plan
	sinkEstimate Estimate
	sinkClient   Client
)

// BenchmarkPlan measures building a built-in's plan as run does: load the scenario, validate,
// expand, take a shard and estimate. It reports the heap the plan keeps (plan-B).
func BenchmarkPlan(b *testing.B) {
	for _, name := range []string{"singlenode-conn-tcp-1M-5K", "singlenode-p2p-50K-50K-50K-50K"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var before, after runtime.MemStats
			for b.Loop() {
				s, _ := Builtin(name)
				p, err := NewPlan(s)
				if err != nil {
					b.Fatal(err)
				}
				sinkEstimate = p.Estimate()
				sinkPlan = p.Shard(0, 1)
			}
			b.StopTimer()
			sinkPlan = nil
			runtime.GC()
			runtime.ReadMemStats(&before)
			s, _ := Builtin(name)
			sinkPlan, _ = NewPlan(s)
			sinkEstimate = sinkPlan.Estimate()
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "plan-B")
		})
	}
}

// BenchmarkPlanClients measures deriving every client of a plan, as the engine does when it
// dials: per client, not per plan.
func BenchmarkPlanClients(b *testing.B) {
	for _, name := range []string{"singlenode-conn-tcp-1M-5K", "singlenode-p2p-50K-50K-50K-50K"} {
		b.Run(name, func(b *testing.B) {
			p := mustPlan(b, name)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sinkClient = p.Client(i)
				if i++; i == p.Len() {
					i = 0
				}
			}
		})
	}
}
