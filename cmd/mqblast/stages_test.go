package main

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/tier"
)

// TestStagesFlagErrors: a bad --stages is one line naming the flag and the stage, exit 2;
// a stage out of range makes the scenario invalid, exit 3, naming its path; --stages with
// --duration (run) or with -I, --msg-rate or --duration (pub) is refused, exit 2. Nothing
// connects.
func TestStagesFlagErrors(t *testing.T) {
	tier.Integration(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "quick-p2p-100", "--stages", "10s:fast"}, exitUsage, `--stages "10s:fast": stage 1 "10s:fast": "fast" is not a rate`},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:5,,"}, exitUsage, `stage 2 "": empty`},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:5,5m:slow:6"}, exitUsage, `stage 2 "5m:slow:6": "slow" is not "ramp"`},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:5", "--duration", "20s"}, exitUsage, "--duration and --stages"},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:5,0s:6"}, exitInvalid, "parameters.stages[1].duration_sec: 0 is not a stage duration (must be > 0)"},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:5,5s:2e6"}, exitInvalid, "parameters.stages[1].publish_rate: 2000000 is more than one publisher can send"},
		{[]string{"run", "quick-p2p-100", "--stages", "10s:0"}, exitInvalid, "parameters.stages: every stage's publish_rate is 0"},
		{[]string{"run", "quick-p2p-100", "--set", "parameters.stages=10s:x"}, exitInvalid, `--set: parameters.stages: stage 1 "10s:x": "x" is not a rate`},
		{[]string{"run", "quick-conn-100", "--stages", "10s:5"}, exitInvalid, "parameters.stages: given, but a Connections scenario publishes no messages"},
		{[]string{"pub", "-c", "1", "-t", "x", "--stages", "10s:5", "-I", "10"}, exitUsage, "--stages and --interval-of-msg"},
		{[]string{"pub", "-c", "1", "-t", "x", "--stages", "10s:5", "--msg-rate", "10"}, exitUsage, "--stages and --msg-rate"},
		{[]string{"pub", "-c", "1", "-t", "x", "--stages", "10s:5", "--duration", "5s"}, exitUsage, "--stages and --duration"},
		{[]string{"pub", "-c", "1", "-t", "x", "--stages", "5:ramp"}, exitUsage, `stage 1 "5:ramp": "ramp" is not a rate`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			t.Parallel()
			r := runBin(t, append(c.args, "--no-check")...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != c.code || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "established") {
				t.Errorf("exit %d, want %d with %q; stderr:\n%s", r.code, c.code, c.want, r.stderr)
			}
			for _, l := range lines {
				if strings.Contains(l, "stage") && !strings.Contains(l, c.want) && !strings.Contains(l, "invalid") {
					t.Errorf("a second line about the stages: %q", l)
				}
			}
		})
	}
}
