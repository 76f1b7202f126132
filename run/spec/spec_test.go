package spec

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRoundTrip: a Spec written as JSON reads back equal, its durations as Go writes them,
// its processes as "auto" or a number.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	no := false
	s := &Spec{Scenario: Scenario{Name: "quick-p2p-100", Set: []string{"parameters.publish_rate=5"}},
		Brokers: []string{"127.0.0.1:1883"}, Duration: Duration(90 * time.Second), Procs: 3, Shard: "1/4",
		TLS: TLS{CAFile: "ca.pem", ALPN: []string{"mqtt"}}, Watch: Watch{BrokerPID: 7, Series: []string{`a{b="c"}`}},
		Outputs: Outputs{Format: "json", Out: "r.json", MetricsHold: Duration(time.Second)},
		Limit:   &Limit{SLO: []string{"latency_us.p99<50000"}, Step: Duration(5 * time.Second), Confirm: &no}}
	b := s.JSON()
	for _, want := range []string{`"schema":"mqblast.spec/v1"`, `"duration":"1m30s"`, `"procs":3`, `"step":"5s"`,
		`"broker_metric":["a{b=\"c\"}"]`, `"metrics_hold":"1s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	got, err := Read(b)
	if err != nil {
		t.Fatal(err)
	}
	s.Schema = Schema
	if d := cmp.Diff(s, got); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	if b := (&Spec{Scenario: Scenario{Name: "x"}}).JSON(); strings.Contains(string(b), "procs") || strings.Contains(string(b), "outputs") {
		t.Errorf("the defaults are written: %s", b)
	}
	auto, err := Read([]byte(`{"scenario":{"name":"x"},"procs":"auto","duration":30,"limit":{"slo":["a<1"],"pause":"2s"}}`))
	if err != nil || auto.Procs != 0 || auto.Duration.D() != 30*time.Second || auto.Limit.Pause.D() != 2*time.Second {
		t.Errorf("procs auto, duration 30 (seconds): %+v, %v", auto, err)
	}
}

// TestReadRefuses: unknown fields, wrong types and bad values are refused naming them.
func TestReadRefuses(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"scenario":{"name":"x"},"brokr":["a"]}`:       `unknown field "brokr"`,
		`{"scenario":{"name":"x"},"procs":"many"}`:      `"many": want auto or a number from 1 to 256`,
		`{"scenario":{"name":"x"},"duration":"soon"}`:   `"soon" is not a duration`,
		`{"scenario":{"name":"x"},"loops":"two"}`:       `loops: a JSON string where int is wanted`,
		`{"scenario":{"name":"x"}} {"scenario":{}}`:     "more than one JSON value",
		`{"scenario":{"name":"x"},"watch":{"pid":1}}`:   `unknown field "pid"`,
		`{"scenario":{"name":"x"},"outputs":{"out":1}}`: `outputs.out: a JSON number where string is wanted`,
	} {
		_, err := Read([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// TestValidate: every problem at once, each an *Error naming its field by JSON path, or by
// the names a command line gives them.
func TestValidate(t *testing.T) {
	t.Parallel()
	if err := (&Spec{Scenario: Scenario{Name: "x"}}).Validate(); err != nil {
		t.Errorf("a scenario alone: %v", err)
	}
	s := &Spec{Schema: "mqblast.spec/v9", Scenario: Scenario{Set: []string{"a=1", "nope"}}, Brokers: []string{"b"},
		Sink: &Sink{}, Duration: Duration(time.Second), Stages: "10s:5", Shard: "4/4", Loops: -1,
		Outputs: Outputs{Format: "yaml", MetricsPublic: true}, Watch: Watch{Series: []string{"x"}},
		Limit: &Limit{Factor: 1, Step: Duration(1500 * time.Millisecond)}}
	err := s.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *Error
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a field's error", e)
		}
		fields = append(fields, fe.Field)
	}
	want := []string{"schema", "scenario.name", "scenario.set[1]", "sink", "duration", "shard", "loops",
		"watch.broker_metric", "outputs.format", "outputs.metrics", "stages", "limit.slo"}
	if d := cmp.Diff(want, fields); d != "" {
		t.Errorf("fields (-want +got):\n%s\n%v", d, err)
	}
	flags := map[string]string{"sink": "--sink", "brokers": "--broker", "duration": "--duration", "stages": "--stages"}
	text := Text(err, func(p string) string { return flags[p] })
	for _, w := range []string{"--sink and --broker: pick one (--sink starts", "--duration and --stages: the stages' total",
		`scenario.set "nope": want path=value`, "outputs.format \"yaml\": must be text or json"} {
		if !strings.Contains(text, w) {
			t.Errorf("%s\nlacks %q", text, w)
		}
	}
	if !strings.Contains(err.Error(), "sink and brokers: pick one (sink starts its own server") {
		t.Errorf("JSON paths: %v", err)
	}
}

// TestErrorText: a field's name replaces {path} only in the message's format, never in
// the values put in it; "%" in a name is a "%".
func TestErrorText(t *testing.T) {
	t.Parallel()
	e := Errorf("bind", "{bind} %s: {bind} twice, {not_a_field}", "{bind}")
	if got := e.Text(func(p string) string { return map[string]string{"bind": "--ifaddr%d"}[p] }); got !=
		"--ifaddr%d {bind}: --ifaddr%d twice, not_a_field" {
		t.Errorf("got %q", got)
	}
	if got := Textf("bind", "{bind} 100% x").Text(func(string) string { return "--bind" }); got != "--bind 100% x" {
		t.Errorf("Textf: %q", got)
	}
	wrapped := &kindError{Errorf("procs", "{procs} 0")}
	if got := Text(wrapped, func(string) string { return "--procs" }); got != "--procs 0" {
		t.Errorf("through a kind: %q", got)
	}
}

type kindError struct{ err error }

func (k *kindError) Error() string { return k.err.Error() }
func (k *kindError) Unwrap() error { return k.err }

// TestWith: a written Spec with fields taken from another, by JSON path; a field the other
// leaves out is left out.
func TestWith(t *testing.T) {
	t.Parallel()
	file := &Spec{Scenario: Scenario{Name: "a.json"}, Outputs: Outputs{Out: "r1.json", HTML: "r1.html"}, Loops: 2,
		Sink: &Sink{FlushDelay: Duration(time.Millisecond)}}
	flags := &Spec{Outputs: Outputs{Out: "r2.json"}, Net: &Net{Profile: "worst"}}
	got, err := file.With(flags, []string{"outputs.out", "outputs.html", "net.profile", "sink"})
	if err != nil {
		t.Fatal(err)
	}
	want := &Spec{Schema: Schema, Scenario: Scenario{Name: "a.json"}, Outputs: Outputs{Out: "r2.json"}, Loops: 2, Net: &Net{Profile: "worst"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestSustainWindows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ sustain, window, want time.Duration }{
		{time.Hour, 0, time.Minute},
		{10 * time.Minute, 0, time.Minute},
		{30 * time.Second, 0, 3 * time.Second},
		{5 * time.Second, 0, time.Second},
		{2 * time.Second, 0, time.Second},
		{48 * time.Hour, 0, 2 * time.Minute},
		{time.Hour, 5 * time.Second, 5 * time.Second},
	} {
		s := &Spec{Sustain: Duration(c.sustain), SustainWindow: Duration(c.window)}
		if got := s.SustainWindows(); got != c.want {
			t.Errorf("sustain %v window %v: %v, want %v", c.sustain, c.window, got, c.want)
		}
	}
}

func TestSustainRefused(t *testing.T) {
	t.Parallel()
	base := func() *Spec { return &Spec{Scenario: Scenario{Name: "quick-p2p-100"}} }
	for _, c := range []struct {
		name  string
		edit  func(s *Spec)
		field string
	}{
		{"shorter than two intervals", func(s *Spec) { s.Sustain = Duration(1500 * time.Millisecond) }, "sustain"},
		{"shorter than two windows", func(s *Spec) { s.Sustain, s.SustainWindow = Duration(time.Minute), Duration(45*time.Second) }, "sustain"},
		{"window alone", func(s *Spec) { s.SustainWindow = Duration(time.Second) }, "sustain_window"},
		{"window not whole seconds", func(s *Spec) { s.Sustain, s.SustainWindow = Duration(time.Minute), Duration(1500*time.Millisecond) }, "sustain_window"},
		{"too many windows", func(s *Spec) { s.Sustain, s.SustainWindow = Duration(2*time.Hour), Duration(time.Second) }, "sustain_window"},
		{"with duration", func(s *Spec) { s.Sustain, s.Duration = Duration(time.Minute), Duration(time.Minute) }, "duration"},
		{"with a connect-rate search", func(s *Spec) {
			s.Sustain = Duration(time.Minute)
			s.Limit = &Limit{SLO: []string{"connections.failed==0"}, Vary: VaryConnectionRate}
		}, "sustain"},
	} {
		s := base()
		c.edit(s)
		err := s.Validate()
		var fe *Error
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want an error naming %s", c.name, err, c.field)
		}
	}
	ok := base()
	ok.Sustain = Duration(2 * time.Second)
	if err := ok.Validate(); err != nil {
		t.Errorf("sustain 2s: %v", err)
	}
}
