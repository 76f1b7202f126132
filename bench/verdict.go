package bench

import (
	"fmt"
	"time"

	"github.com/mqblast/mqblast/result"
)

// saturationLag is the schedule lag (p99) past which the client itself is the limit.
const saturationLag = 10 * time.Millisecond

// measured sets r's measure window throughput and the client's saturation verdict.
// cpu is the client's CPU time during the window, wait the time its threads waited for a
// CPU in it (negative: not known). Only the client's own evidence makes it saturated: its
// CPU, and lateness it caused itself (schedule lag excludes the time the broker held a
// publisher: see reactor.Observer.Published); lateness that comes with a large wait for a
// CPU says so, as the host's doing as much as the client's, and marks the run host.limited.
func measured(r *result.Result, total *result.Snapshot, window, cpu, wait time.Duration) {
	w := window.Seconds()
	if w <= 0 {
		return
	}
	r.Throughput = result.Throughput{WindowS: w,
		PublishPerS: float64(total.PublishedMeasured) / w, ReceivePerS: float64(total.ReceivedMeasured) / w}
	c := &r.Client
	c.CPUMeasureS = cpu.Seconds()
	if wait >= 0 {
		c.RunDelayS = wait.Seconds()
	}
	if lag := time.Duration(c.ScheduleLagUS.P99) * time.Microsecond; lag > saturationLag {
		c.Saturated = true
		ev := fmt.Sprintf("schedule lag p99 %v > %v: the client built messages late while the broker was taking them", lag, saturationLag)
		if share := c.RunDelayS / w; share >= RunDelayShare {
			wait := fmt.Sprintf("its threads waited %.2f s for a CPU in the %.1f s window (%.0f%% of one core's time): "+
				"the host's cores are short (the broker or other work shares them)", c.RunDelayS, w, 100*share)
			ev += "; " + wait
			r.Host.Limited = true
			r.Host.LimitedEvidence = append(r.Host.LimitedEvidence, "the client built messages late and "+wait)
		}
		c.SaturationEvidence = append(c.SaturationEvidence, ev)
	}
	if util := cpu.Seconds() / w / float64(max(r.Host.Cores, 1)); util > 0.9 {
		c.Saturated = true
		c.SaturationEvidence = append(c.SaturationEvidence,
			fmt.Sprintf("client CPU %.0f%% of %d cores during the measure window", 100*util, r.Host.Cores))
	}
}

// RunDelayShare is the share of the measure window (of one core's time) that the client's
// threads may wait for a CPU before its lateness is said to be the host's as much as its own.
const RunDelayShare = 0.05
