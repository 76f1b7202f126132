package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// TestRunThresholds: against Mosquitto, a threshold that cannot hold fails the run (exit 5)
// with the result written (the summary says FAILED, the file holds thresholds[0].ok false
// and the value), and thresholds that hold pass it.
func TestRunThresholds(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	p2p := func(thresholds ...string) *Spec {
		sp := quick("quick-p2p-100", m.Addr, "parameters.warmup_sec=300ms", "parameters.drain_sec=500ms")
		sp.Duration, sp.Thresholds = spec.Duration(1500*time.Millisecond), thresholds
		return sp
	}
	sp := p2p("throughput.receive_per_s>1e12", "messages.lost==0")
	sp.Outputs.Out = filepath.Join(t.TempDir(), "r.json")
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrThreshold) {
		t.Fatalf("%v, want %v\n%s", r.err, fail.ErrThreshold, r.stderr)
	}
	if !strings.Contains(r.said(), "1 of 2 thresholds failed: throughput.receive_per_s>1e12 (value ") {
		t.Errorf("%v\n%s", r.err, r.stderr)
	}
	if !strings.Contains(r.stdout, "throughput.receive_per_s>1e12  value ") || !strings.Contains(r.stdout, "  FAILED") ||
		!strings.Contains(r.stdout, "messages.lost==0  value 0  ok") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	doc, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	th := doc.Thresholds
	if len(th) != 2 || th[0].Expr != "throughput.receive_per_s>1e12" || th[0].OK || th[0].Value <= 0 ||
		th[1].Expr != "messages.lost==0" || !th[1].OK || th[1].Value != 0 {
		t.Fatalf("thresholds %+v", th)
	}

	r = doOK(t, p2p("messages.lost==0", "connections.failed<=10", "client.saturated<=1"))
	if th := r.res.Thresholds; len(th) != 3 || !th[0].OK || !th[1].OK || !th[2].OK {
		t.Fatalf("thresholds %+v", th)
	}
}

// TestRunThresholdRefusedBeforeRun: a bad threshold of the Spec is a usage error and a bad
// one in a scenario file makes the scenario invalid, naming the expression and the nearest
// keys, before any connection (nothing listens on the broker's port).
func TestRunThresholdRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	broker := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"messages.lots==0", []string{`thresholds "messages.lots==0": messages has no field "lots" (nearest: lost`}},
		{"latency_us<5", []string{"latency_us is an object, not a number", "p99"}},
		{"messages.lost=0", []string{"compare with =="}},
	} {
		sp := quick("quick-p2p-100", broker)
		sp.Thresholds = []string{"messages.lost==0", tc.expr}
		r := doSpec(t, sp)
		if !errors.Is(r.err, fail.ErrUsage) {
			t.Errorf("%s: %v, want %v\n%s", tc.expr, r.err, fail.ErrUsage, r.stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("%s: %v lacks %q", tc.expr, r.err, w)
			}
		}
		if strings.Contains(r.stderr, "connecting") || strings.Contains(r.stderr, "embedded broker") {
			t.Errorf("%s: it started the run:\n%s", tc.expr, r.stderr)
		}
	}

	file := filepath.Join(t.TempDir(), "bad.json")
	scen := `{"type": "Connections", "publishers": {"client_count": 2},
	          "thresholds": ["connections.failed==0", "connections.establised>1"]}`
	if err := os.WriteFile(file, []byte(scen), 0o644); err != nil {
		t.Fatal(err)
	}
	wantLine := file + `: thresholds[1]: threshold "connections.establised>1": connections has no field "establised" (nearest: established`
	r := doSpec(t, quick(file, broker))
	if !errors.Is(r.err, fail.ErrInvalid) || !strings.Contains(r.err.Error(), wantLine) || strings.Contains(r.stderr, "connecting") {
		t.Errorf("%v, want %v and %q:\n%s", r.err, fail.ErrInvalid, wantLine, r.stderr)
	}
}

// TestRunThresholdsWorkersAndInterrupt: thresholds are evaluated on the merged result of
// worker processes (failing the run), and on the partial result of an interrupted run,
// which stays interrupted.
func TestRunThresholdsWorkersAndInterrupt(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", 200, "parameters.connection_rate", 2000,
		"parameters.duration_sec", 0.3)...)
	sp.Procs, sp.Thresholds = 2, []string{"connections.established>=1e9", "connections.established==200"}
	r := doSpec(t, sp)
	if !errors.Is(r.err, fail.ErrThreshold) {
		t.Fatalf("workers: %v, want %v\n%s", r.err, fail.ErrThreshold, r.stderr)
	}
	if th := r.res.Thresholds; len(th) != 2 || th[0].OK || th[0].Value != 200 || !th[1].OK {
		t.Fatalf("workers: thresholds %+v", th)
	}

	sp = quick("quick-conn-100", m.Addr, sets("publishers.client_count", 50, "parameters.connection_rate", 1000,
		"parameters.duration_sec", 60)...)
	sp.Thresholds, sp.Outputs.Out = []string{"connections.established>1e9"}, filepath.Join(t.TempDir(), "r.json")
	r = doSpecCtx(interruptAfter(t, 1200*time.Millisecond), t, sp)
	if !errors.Is(r.err, fail.ErrInterrupted) {
		t.Fatalf("interrupted: %v, want %v\n%s", r.err, fail.ErrInterrupted, r.stderr)
	}
	doc, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	if th := doc.Thresholds; len(th) != 1 || th[0].OK || th[0].Value != 50 {
		t.Fatalf("interrupted: thresholds %+v", th)
	}
}

// TestPubFractionalInterval: pub at 2,000 messages per second per client (pub -I 0.5)
// publishes that, as the result's publish figures show.
func TestPubFractionalInterval(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	r := doOK(t, pubSpec(m.Addr, "bench/$clientindex", sets("publishers.client_count", 2, "parameters.publish_rate", 2000,
		"parameters.payload_size", 16, "parameters.duration_sec", 2, "parameters.warmup_sec", 0.5)...))
	res := r.res
	const wantRate = 2 * 2000.0 // two clients at 2,000 msg/s each
	if got := res.Throughput.PublishPerS; got < 0.8*wantRate || got > 1.2*wantRate {
		t.Errorf("publish_per_s %.0f, want about %.0f (window %.2fs)", got, wantRate, res.Throughput.WindowS)
	}
	if got := float64(res.Messages.Published); got < 0.8*2*wantRate || got > 1.1*2*wantRate {
		t.Errorf("published %.0f over 2 s, want about %.0f", got, 2*wantRate)
	}
}
