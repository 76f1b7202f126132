package bench

import (
	"time"

	"github.com/mqblast/mqblast/result"
)

// measured sets r's measure window throughput and the client's evidence over it: cpu is
// the client's CPU time during the window, wait the time its threads waited for a CPU in
// it (negative: not known). The verdicts are judged from them with the rest of the run's
// evidence, once the watch's is in (result.Judge).
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
}

// RunDelayShare is the share of the measure window (of one core's time) that the client's
// threads may wait for a CPU before its lateness is said to be the host's.
const RunDelayShare = result.RunDelayShare
