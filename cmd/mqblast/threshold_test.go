package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run"
	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/scenario"
)

// quickScenario runs a quick verb's command line in this process up to the point where
// the run would start: the scenario its Spec runs (run.Plan: with --set applied and the
// thresholds checked) and the thresholds the run would judge; an error as main prints it.
func quickScenario(t *testing.T, args ...string) (*scenario.Scenario, []string, error) {
	t.Helper()
	var gotS *scenario.Scenario
	var gotEv []string
	old := start
	start = func(_ *cobra.Command, sp *spec.Spec, password string) error {
		p, ev, err := run.Plan(sp, run.IO{Password: password, Stderr: io.Discard})
		if err != nil {
			return err
		}
		gotS, gotEv = p.Scenario(), ev
		return nil
	}
	defer func() { start = old }()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	cmd, err := root.ExecuteContextC(context.Background())
	if err != nil {
		err = withCode(codeOf(err), errors.New(errorText(cmd, err)))
	}
	return gotS, gotEv, err
}

// TestQuickVerbFlags: pub's -I takes fractions of a millisecond and --msg-rate messages per
// second, both refused unless > 0 and refused together; pub, sub and conn take --set (bad
// paths exit 3 as in run) and --threshold (bad paths exit 2 before anything runs).
func TestQuickVerbFlags(t *testing.T) {
	good := []struct {
		args  []string
		check func(s *scenario.Scenario, evaluate []string) string // "" when right
	}{
		{[]string{"pub", "-t", "a/%i", "-I", "0.1"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.PublishRate, 10000.0)
		}},
		{[]string{"pub", "-t", "a/%i", "-I", "2.5"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.PublishRate, 400.0)
		}},
		{[]string{"pub", "-t", "a/%i", "--msg-rate", "250"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.PublishRate, 250.0)
		}},
		{[]string{"pub", "-t", "a/%i"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.PublishRate, 1.0) // -I 1000 by default
		}},
		{[]string{"pub", "-t", "a/%i", "-I", "0.5", "--set", "parameters.payload_size=64", "--set", "publishers.qos=2"},
			func(s *scenario.Scenario, _ []string) string {
				return want([]any{s.Parameters.PayloadSize, s.Publishers.QoS, s.Parameters.PublishRate}, []any{64, byte(2), 2000.0})
			}},
		{[]string{"pub", "-t", "a", "--set", "parameters.publish_rate=3"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.PublishRate, 3.0) // --set wins over -I
		}},
		{[]string{"sub", "-t", "a/#", "--set", "subscribers.qos=2", "--set", "parameters.duration_sec=5s"},
			func(s *scenario.Scenario, _ []string) string {
				return want([]any{s.Subscribers.QoS, s.Parameters.Duration}, []any{byte(2), 5 * time.Second})
			}},
		{[]string{"sub", "-t", "a/#", "-V", "5", "--set", "subscribers.no_local=true", "--threshold", "messages.received>0"},
			func(s *scenario.Scenario, evaluate []string) string {
				return want([]any{s.Subscribers.NoLocal, evaluate}, []any{true, []string{"messages.received>0"}})
			}},
		{[]string{"conn", "-c", "3", "--set", "parameters.keep_alive_sec=30", "--threshold", "connections.failed==0",
			"--threshold", "connections.refused.not_authorized<1"},
			func(s *scenario.Scenario, evaluate []string) string {
				return want([]any{s.Parameters.KeepAlive, evaluate},
					[]any{30 * time.Second, []string{"connections.failed==0", "connections.refused.not_authorized<1"}})
			}},
		{[]string{"conn", "-c", "2", "--set", "parameters.reconnect=backoff"}, func(s *scenario.Scenario, _ []string) string {
			return want(s.Parameters.Reconnect, scenario.ReconnectBackoff)
		}},
		{[]string{"pub", "-t", "a", "--set", "thresholds=messages.lost==0", "--threshold", "client.saturated==0"},
			func(_ *scenario.Scenario, evaluate []string) string {
				return want(evaluate, []string{"messages.lost==0", "client.saturated==0"}) // the scenario's first
			}},
	}
	for _, tc := range good {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s, evaluate, err := quickScenario(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if s == nil {
				t.Fatal("no scenario was run")
			}
			if msg := tc.check(s, evaluate); msg != "" {
				t.Error(msg)
			}
		})
	}
	bad := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"pub", "-t", "a", "-I", "0"}, exitUsage, []string{"--interval-of-msg 0: must be more than 0 ms"}},
		{[]string{"pub", "-t", "a", "-I", "-1"}, exitUsage, []string{"--interval-of-msg -1"}},
		{[]string{"pub", "-t", "a", "-I", "fast"}, exitUsage, []string{"fast"}},
		{[]string{"pub", "-t", "a", "--msg-rate", "0"}, exitUsage, []string{"--msg-rate 0: must be more than 0"}},
		{[]string{"pub", "-t", "a", "--msg-rate", "NaN"}, exitUsage, []string{"--msg-rate NaN"}},
		{[]string{"pub", "-t", "a", "--msg-rate", "5", "-I", "1"}, exitUsage, []string{"give one of them"}},
		{[]string{"pub", "-t", "a", "--set", "parameters.nope=1"}, exitInvalid, []string{"--set: parameters.nope: unknown field"}},
		{[]string{"sub", "-t", "a", "--set", "subscribers.qos=7"}, exitInvalid, []string{"subscribers.qos: 7 is not a QoS"}},
		{[]string{"conn", "--set", "parameters.keep_alive_sec"}, exitUsage, []string{"want path=value"}},
		{[]string{"conn", "--threshold", "connections.faild==0"}, exitUsage,
			[]string{`--threshold "connections.faild==0": connections has no field "faild" (nearest: failed`}},
		{[]string{"pub", "-t", "a", "--threshold", "messages.lost=0"}, exitUsage, []string{`--threshold "messages.lost=0"`, "=="}},
		{[]string{"sub", "-t", "a", "--set", "thresholds=latency.p99<1"}, exitInvalid, []string{`sub: thresholds[0]: threshold "latency.p99<1"`}},
	}
	for _, tc := range bad {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			s, _, err := quickScenario(t, tc.args...)
			if err == nil || s != nil {
				t.Fatalf("no error; want exit %d", tc.code)
			}
			if codeOf(err) != tc.code {
				t.Errorf("exit %d, want %d: %v", codeOf(err), tc.code, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// want returns "" when got equals w, else the difference.
func want(got, w any) string {
	if d := cmp.Diff(w, got); d != "" {
		return fmt.Sprintf("(-want +got)\n%s", d)
	}
	return ""
}

// thresholdsOf reads the thresholds of a result document.
func thresholdsOf(t *testing.T, doc []byte) []result.Threshold {
	t.Helper()
	var res result.Result
	if err := json.Unmarshal(doc, &res); err != nil {
		t.Fatalf("not a result document: %v\n%.500s", err, doc)
	}
	return res.Thresholds
}

// TestRunThresholds: against Mosquitto, a threshold that cannot hold makes the run exit 5
// with the result written (the summary says FAILED, the file holds thresholds[0].ok false
// and the value), and thresholds that hold exit 0.
func TestRunThresholds(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	short := []string{"--broker", m.Addr, "--duration", "1500ms", "--set", "parameters.warmup_sec=300ms",
		"--set", "parameters.drain_sec=500ms"}
	out := filepath.Join(t.TempDir(), "r.json")
	r := runBin(t, append([]string{"run", "quick-p2p-100", "--threshold", "throughput.receive_per_s>1e12",
		"--threshold", "messages.lost==0", "--out", out}, short...)...)
	if r.code != exitThreshold {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitThreshold, r.stderr)
	}
	if !strings.Contains(r.stderr, "1 of 2 thresholds failed: throughput.receive_per_s>1e12 (value ") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout, "throughput.receive_per_s>1e12  value ") || !strings.Contains(r.stdout, "  FAILED") ||
		!strings.Contains(r.stdout, "messages.lost==0  value 0  ok") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	th := thresholdsOf(t, doc)
	if len(th) != 2 || th[0].Expr != "throughput.receive_per_s>1e12" || th[0].OK || th[0].Value <= 0 ||
		th[1].Expr != "messages.lost==0" || !th[1].OK || th[1].Value != 0 {
		t.Fatalf("thresholds %+v", th)
	}

	r = runBin(t, append([]string{"run", "quick-p2p-100", "--threshold", "messages.lost==0",
		"--threshold", "connections.failed<=10", "--threshold", "client.saturated<=1", "--format", "json"}, short...)...)
	if r.code != exitOK {
		t.Fatalf("passing thresholds: exit %d\n%s", r.code, r.stderr)
	}
	th = thresholdsOf(t, []byte(r.stdout))
	if len(th) != 3 || !th[0].OK || !th[1].OK || !th[2].OK {
		t.Fatalf("thresholds %+v", th)
	}
}

// TestRunThresholdRefusedBeforeRun: a bad --threshold exits 2 and a bad one in a scenario
// file exits 3 (run and validate), naming the expression and the nearest keys, before
// any connection (nothing listens on the broker's port).
func TestRunThresholdRefusedBeforeRun(t *testing.T) {
	t.Parallel()
	broker := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"messages.lots==0", []string{`--threshold "messages.lots==0": messages has no field "lots" (nearest: lost`}},
		{"latency_us<5", []string{"latency_us is an object, not a number", "p99"}},
		{"messages.lost=0", []string{"compare with =="}},
	} {
		r := runBin(t, "run", "quick-p2p-100", "--broker", broker, "--threshold", "messages.lost==0", "--threshold", tc.expr)
		if r.code != exitUsage {
			t.Errorf("%s: exit %d, want %d\n%s", tc.expr, r.code, exitUsage, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.expr, w, r.stderr)
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
	for _, args := range [][]string{{"run", file, "--broker", broker}, {"validate", file}} {
		r := runBin(t, args...)
		if r.code != exitInvalid || !strings.Contains(r.stderr, wantLine) || strings.Contains(r.stderr, "connecting") {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", args[0], r.code, exitInvalid, wantLine, r.stderr)
		}
	}
}

// TestRunThresholdsWorkersAndInterrupt: thresholds are evaluated on the merged result of
// worker processes (exit 5), and on the partial result of an interrupted run, whose
// exit code (130) wins.
func TestRunThresholdsWorkersAndInterrupt(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	r := runBin(t, "conn", "-H", host, "-p", port, "-c", "200", "-R", "2000", "--hold", "300ms", "--procs", "2",
		"--threshold", "connections.established>=1e9", "--threshold", "connections.established==200", "--format", "json")
	if r.code != exitThreshold {
		t.Fatalf("workers: exit %d, want %d\n%s", r.code, exitThreshold, r.stderr)
	}
	if th := thresholdsOf(t, []byte(r.stdout)); len(th) != 2 || th[0].OK || th[0].Value != 200 || !th[1].OK {
		t.Fatalf("workers: thresholds %+v", th)
	}

	doc, _ := interruptedRun(t, 1200*time.Millisecond, "conn", "-H", host, "-p", port, "-c", "50", "-R", "1000", "--hold", "60s",
		"--threshold", "connections.established>1e9")
	if th := thresholdsOf(t, doc); len(th) != 1 || th[0].OK || th[0].Value != 50 {
		t.Fatalf("interrupted: thresholds %+v", th)
	}
}

// TestPubFractionalInterval: pub -I 0.5 publishes 2,000 messages per second per client,
// as the result's publish figures show.
func TestPubFractionalInterval(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	r := runBin(t, "pub", "-H", host, "-p", port, "-c", "2", "-t", "bench/%i", "-I", "0.5", "-s", "16",
		"--duration", "2s", "--warmup", "500ms", "--format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	const wantRate = 2 * 2000.0 // two clients at 2,000 msg/s each
	if got := res.Throughput.PublishPerS; got < 0.8*wantRate || got > 1.2*wantRate {
		t.Errorf("publish_per_s %.0f, want about %.0f (window %.2fs)", got, wantRate, res.Throughput.WindowS)
	}
	if got := float64(res.Messages.Published); got < 0.8*2*wantRate || got > 1.1*2*wantRate {
		t.Errorf("published %.0f over 2 s, want about %.0f", got, 2*wantRate)
	}
}
