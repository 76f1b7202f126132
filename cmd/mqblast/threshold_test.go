package main

import (
	"context"
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
	start = func(_ *cobra.Command, sp *spec.Spec, password passwords) error {
		p, ev, err := run.Plan(sp, run.IO{Password: password.run, GroupPasswords: password.groups, Stderr: io.Discard})
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

// TestValidateThresholdRefused: validate refuses a scenario file with a bad threshold,
// exit 3, naming the expression and the nearest keys (a run of such a file: run's
// TestRunThresholdRefusedBeforeRun).
func TestValidateThresholdRefused(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.json")
	doc := `{"type": "Connections", "publishers": {"client_count": 2}, "thresholds": "connections.establised>1"}`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, "validate", file)
	if want := file + `: thresholds[0]: threshold "connections.establised>1": connections has no field "establised" (nearest: established`; r.code != exitInvalid || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, want %d and %q:\n%s", r.code, exitInvalid, want, r.stderr)
	}
}
