package run

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// TestThresholdOnALosingRun: against a server that acknowledges every PUBLISH and
// delivers none (sending strays of an unknown publisher instead), the threshold
// messages.lost==0 fails the run, with the loss in the result and the strays apart.
func TestThresholdOnALosingRun(t *testing.T) {
	t.Parallel()
	l := testbroker.StartLiar(t, 5, time.Second)
	sp := quick("quick-p2p-100", l.Addr, "parameters.warmup_sec=500ms", "parameters.drain_sec=300ms")
	sp.NoCheck, sp.Duration, sp.Thresholds = true, spec.Duration(2*time.Second), []string{"messages.lost==0"}
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrThreshold) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrThreshold, r.stderr)
	}
	res := r.res
	m := res.Messages
	if m.Lost == 0 || m.Lost != m.Expected || m.Received != 0 || m.Unexpected["unknown_publisher"] != 500 {
		t.Errorf("lost %d of %d, received %d, unexpected %v", m.Lost, m.Expected, m.Received, m.Unexpected)
	}
	if len(res.Thresholds) != 1 || res.Thresholds[0].OK || res.Thresholds[0].Value != float64(m.Lost) {
		t.Errorf("thresholds %+v", res.Thresholds)
	}
}

// TestInterruptedRunRates: an interrupt (Ctrl-C) 3 s into a 20 s P2P run at 1,000 msg/s: the measure
// window ends at the interrupt, so the rates are those of the time that ran (not 20 s's),
// scheduled messages are all accounted for, and the partial result is written.
func TestInterruptedRunRates(t *testing.T) {
	tm := tier.Timing(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-p2p-100", m.Addr, "parameters.warmup_sec=500ms")
	sp.NoCheck, sp.Duration, sp.Outputs.Out = true, spec.Duration(20*time.Second), filepath.Join(t.TempDir(), "r.json")
	if r := doSpecCtx(interruptAfter(t, 3*time.Second), t, sp); !errors.Is(r.err, fail.ErrInterrupted) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrInterrupted, r.stderr)
	}
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.MeasureTo.After(res.EndedAt) || res.Throughput.WindowS > 4 {
		t.Errorf("interrupted %v, measure_to %v after ended_at %v, window %.1fs", res.Interrupted, res.MeasureTo, res.EndedAt, res.Throughput.WindowS)
	}
	if p := res.Throughput.PublishPerS; p < 850 || p > 1150 {
		tm.Errorf("publish_per_s %.0f, want about 1000 (the rate of the time that ran)", p)
	}
	msg := res.Messages
	if msg.Scheduled != msg.Published+msg.UnsentTotal || msg.Scheduled > 4000 {
		t.Errorf("scheduled %d, published %d, unsent %v", msg.Scheduled, msg.Published, msg.Unsent)
	}
}
