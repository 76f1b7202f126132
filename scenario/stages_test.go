package scenario

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stagedP2P is a Point-To-Point file whose parameters are params (a JSON object's body).
func stagedP2P(params string) []byte {
	return []byte(`{"type": "Point-To-Point",
		"publishers": {"client_count": 2, "topics": "t/$clientindex"},
		"subscribers": {"client_count": 2, "topics": "t/$clientindex"},
		"parameters": {` + params + `}}`)
}

// problems returns "path: msg" of every problem of the file after validation.
func problems(t *testing.T, data []byte) []string {
	t.Helper()
	s, err := ParseAll("f.json", data)
	if s == nil {
		t.Fatalf("ParseAll: %v", err)
	}
	var got []string
	for _, e := range Errors(s.ValidateAfter(err)) {
		got = append(got, e.Path+": "+e.Msg)
	}
	return got
}

func TestStagesValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, params string
		want         []string
	}{
		{"empty list", `"stages": []`,
			[]string{"parameters.stages: an empty list (want at least one stage, e.g. [{\"duration_sec\": 30, \"publish_rate\": 100}])"}},
		{"zero duration and negative rate", `"stages": [{"duration_sec": 10, "publish_rate": 5},
			{"duration_sec": 0, "publish_rate": -1}]`,
			[]string{"parameters.stages[1].duration_sec: 0 is not a stage duration (must be > 0)",
				"parameters.stages[1].publish_rate: -1 is not a rate (must be ≥ 0)"}},
		{"rate over the max", `"stages": [{"duration_sec": 10, "publish_rate": 2000000}]`,
			[]string{"parameters.stages[0].publish_rate: 2000000 is more than one publisher can send (max 1000000 msgs/s)"}},
		{"every rate 0", `"stages": [{"duration_sec": 10, "publish_rate": 0}]`,
			[]string{"parameters.stages: every stage's publish_rate is 0: nothing would be published (give one stage a rate > 0)"}},
		{"missing fields and an unknown one", `"stages": [{"rate": 5}]`,
			[]string{"parameters.stages[0].rate: unknown field",
				"parameters.stages[0].duration_sec: missing (want the stage's length in seconds, or a Go duration such as \"30s\")",
				"parameters.stages[0].publish_rate: missing (want messages per second of each publisher)"}},
		{"wrong types", `"stages": [{"duration_sec": "soon", "publish_rate": "fast", "ramp": 1}]`,
			[]string{`parameters.stages[0].duration_sec: "soon" is not a time span (want seconds, or a Go duration such as "90s")`,
				`parameters.stages[0].publish_rate: "fast" is not a number`,
				"parameters.stages[0].ramp: 1 is not a boolean (want true or false)"}},
		{"not a list", `"stages": 5`,
			[]string{`parameters.stages: 5 is not a stage list (want [{"duration_sec": 10, "publish_rate": 1000}, ...] or "10s:1000,30s:ramp:20000")`}},
		{"bad compact form", `"stages": "10s:5,x:7"`,
			[]string{`parameters.stages: stage 2 "x:7": "x" is not a duration (want a Go duration such as 30s, or seconds) (want ` + StagesSyntax + `)`}},
		{"warm-up past the first stage", `"warmup_sec": 10, "stages": [{"duration_sec": 10, "publish_rate": 5}, {"duration_sec": 10, "publish_rate": 6}]`,
			[]string{"parameters.warmup_sec: 10 reaches past the first stage (10 s): with stages the warm-up is the start of the first stage"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := problems(t, stagedP2P(c.params))
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
		})
	}
	got := problems(t, []byte(`{"type": "Connections", "publishers": {"client_count": 2},
		"parameters": {"stages": "10s:5"}}`))
	want := []string{"parameters.stages: given, but a Connections scenario publishes no messages (leave stages out)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Connections (-want +got):\n%s", d)
	}
}

// TestStagesDerive: with stages, duration_sec is their total, publish_rate their peak and
// the warm-up 0 by default, whatever the file said of the first two; the effective scenario
// writes the stages back, and reading it gives the same scenario.
func TestStagesDerive(t *testing.T) {
	t.Parallel()
	s, err := Parse("f.json", stagedP2P(`"duration_sec": 600, "publish_rate": 3,
		"stages": [{"duration_sec": 10, "publish_rate": 100}, {"duration_sec": "30s", "publish_rate": 2000, "ramp": true},
		{"duration_sec": 5.5, "publish_rate": 0}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p := &s.Parameters
	if p.Duration != 45500*time.Millisecond || p.PublishRate != 2000 || p.Warmup != 0 {
		t.Errorf("duration %v, publish_rate %v, warm-up %v; want 45.5s, 2000, 0", p.Duration, p.PublishRate, p.Warmup)
	}
	want := []Stage{{10 * time.Second, 100, false}, {30 * time.Second, 2000, true}, {5500 * time.Millisecond, 0, false}}
	if d := cmp.Diff(want, p.Stages); d != "" {
		t.Errorf("stages (-want +got):\n%s", d)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"stages":[{"duration_sec":10,"publish_rate":100},{"duration_sec":30,"publish_rate":2000,"ramp":true},{"duration_sec":5.5,"publish_rate":0}]`) {
		t.Errorf("effective scenario: %s", b)
	}
	back, err := Parse("again", b)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p.Stages, back.Parameters.Stages); d != "" || back.Parameters.Duration != p.Duration {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	plan, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if e := plan.Estimate(); e.PublishPerSec != 2*2000 {
		t.Errorf("estimate at %v msgs/s, want the peak's 4000", e.PublishPerSec)
	}
	// A file without stages keeps its own duration, rate and default warm-up.
	plain, err := Parse("f.json", stagedP2P(`"duration_sec": 60, "publish_rate": 3`))
	if err != nil || plain.Validate() != nil {
		t.Fatal(err)
	}
	if pp := plain.Parameters; pp.Duration != time.Minute || pp.PublishRate != 3 || pp.Warmup != 6*time.Second || pp.Stages != nil {
		t.Errorf("without stages: %+v", pp)
	}
}

func TestParseStages(t *testing.T) {
	t.Parallel()
	good := map[string][]Stage{
		"10s:1000":                       {{10 * time.Second, 1000, false}},
		"10s:1000,30s:ramp:20000,10s:50": {{10 * time.Second, 1000, false}, {30 * time.Second, 20000, true}, {10 * time.Second, 50, false}},
		"1m30s : 2.5/s ,  0.5:RAMP:0":    {{90 * time.Second, 2.5, false}, {500 * time.Millisecond, 0, true}},
		"20:7":                           {{20 * time.Second, 7, false}},
	}
	for in, want := range good {
		got, err := ParseStages(in)
		if err != nil {
			t.Errorf("ParseStages(%q): %v", in, err)
			continue
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("ParseStages(%q) (-want +got):\n%s", in, d)
		}
		if again, err := ParseStages(FormatStages(got)); err != nil || !cmp.Equal(again, got) {
			t.Errorf("FormatStages(%q) = %q reads back as %v, %v", in, FormatStages(got), again, err)
		}
	}
	bad := map[string]string{
		"":                 "no stage given",
		"10s":              `stage 1 "10s": is not DURATION:RATE`,
		"10s:1000,":        `stage 2 "": empty`,
		"10s:fast":         `stage 1 "10s:fast": "fast" is not a rate`,
		"10s:slow:5":       `stage 1 "10s:slow:5": "slow" is not "ramp"`,
		"soon:5":           `stage 1 "soon:5": "soon" is not a duration`,
		"10s:ramp:5:6":     `stage 1 "10s:ramp:5:6": is not DURATION:RATE`,
		"10s:5,20s:NaN":    `stage 2 "20s:NaN": "NaN" is not a rate`,
		"10s:5/m":          `stage 1 "10s:5/m": "5/m" is not a rate`,
		"10s:1000 20s:500": `stage 1 "10s:1000 20s:500": "1000 20s" is not "ramp"`,
	}
	for in, want := range bad {
		_, err := ParseStages(in)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseStages(%q) = %v, want one line with %q", in, err, want)
		}
	}
}

// TestSetStages: --set parameters.stages takes the compact form and JSON, and null removes
// the stages.
func TestSetStages(t *testing.T) {
	t.Parallel()
	s, err := Parse("f.json", stagedP2P(`"publish_rate": 3`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("parameters.stages", "5s:10,5s:ramp:20"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil || s.Parameters.Duration != 10*time.Second || len(s.Parameters.Stages) != 2 {
		t.Fatalf("after the compact form: %v, %+v", err, s.Parameters)
	}
	if err := s.Set("parameters.stages", `[{"duration_sec": 3, "publish_rate": 4}]`); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil || s.Parameters.Duration != 3*time.Second || s.Parameters.PublishRate != 4 {
		t.Fatalf("after JSON: %v, %+v", err, s.Parameters)
	}
	err = s.Set("parameters.stages", "5s:ten")
	if err == nil || !strings.HasPrefix(err.Error(), `--set: parameters.stages: stage 1 "5s:ten": "ten" is not a rate`) {
		t.Errorf("bad compact form: %v", err)
	}
	if err := s.Set("parameters.stages", "null"); err != nil || s.Parameters.Stages != nil {
		t.Errorf("null: %v, %v", err, s.Parameters.Stages)
	}
}
