package run

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
)

// TestBrokerBusyAtQuota: a Mosquitto capped at 5 % of a core (a cgroup CPU quota, as a
// container's CPU limit) offered 10,000 msg/s spends its quota, never 95 % of a core: the
// run says BROKER BUSY at its quota, from the process's cgroup, and the intervals carry
// the quota.
func TestBrokerBusyAtQuota(t *testing.T) {
	tier.Timing(t) // a broker's CPU figure over the run
	m := testbroker.StartMosquitto(t, testbroker.Options{CPUQuota: 0.05})
	sp := quickP2P(m.Addr, "4", sets("parameters.publish_rate", 100, "parameters.duration_sec", 3)...)
	sp.Watch.BrokerPID = m.Cmd.Process.Pid
	r := doSpec(t, sp)
	if r.res == nil {
		t.Fatalf("%v\n%s", r.err, r.stderr)
	}
	b := r.res.BrokerBusy
	if b == nil || !b.Busy || !strings.Contains(strings.Join(b.Evidence, "; "), "of the 0.05 of a core its cgroup's CPU quota allows") {
		var cpu []float64
		for _, iv := range r.res.Intervals {
			cpu = append(cpu, iv.BrokerCPUPercent)
		}
		t.Fatalf("broker busy %+v (its CPU by interval: %.1f %%): want busy at its cgroup's quota of 0.05 of a core\n%s", b, cpu, r.stderr)
	}
	quota := 0.0
	for _, iv := range r.res.Intervals {
		quota = max(quota, iv.BrokerCPUQuota)
	}
	if quota != 0.05 {
		t.Errorf("intervals' broker_cpu_quota %v, want 0.05", quota)
	}
	t.Logf("%s; limited by %s", strings.Join(b.Evidence, "; "), r.res.LimitedBy)
}
