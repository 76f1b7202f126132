package scenario

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGoldenPlans holds the plan of every scenario the tests know to a dump of it: the
// built-ins, the scenario files of the tests, the scripts and the built-in studies' cells,
// and the scenarios of goldenInline. Each dump (testdata/golden/plans/NAME.txt; go test
// -update rewrites them) has the effective scenario, the plan's figures, its clients (all
// of a small plan, a sample of a large one), streams, shards and parts, and the text of
// mqblast validate: a change of the model that keeps the dumps keeps every plan.
//
// Estimate's rates are written to 12 significant digits: the order in which a sum of rates
// is taken moves its last bits, which no figure of a run depends on.
func TestGoldenPlans(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "golden", "plans")
	cases := goldenCases(t)
	names := map[string]bool{}
	for _, c := range cases {
		names[c.name+".txt"] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkGolden(t, filepath.Join(dir, c.name+".txt"), dumpPlan(t, c.s))
		})
	}
	t.Run("stale", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
		for _, f := range files {
			if !names[filepath.Base(f)] && !*update {
				t.Errorf("%s is the dump of no scenario", f)
			}
		}
	})
}

// goldenCase is a scenario the golden dumps hold.
type goldenCase struct {
	name string
	s    *Scenario
}

// goldenInline are scenarios written for the dumps alone, beside those of the other tests,
// each for a case the files do not have: shared filters behind others, a share name in
// several groups, request and respond, groups that only subscribe or only hold.
var goldenInline = []struct{ name, js string }{
	{"fleet", fleetJSON},
	{"fanin-phases", `{"type": "Fan-In", "publishers": {"client_count": 8, "topics": "t/$clientindex"},
		"subscribers": {"client_count": 1, "topics": "t/+"}, "parameters": {"publish_rate": 4}}`},
	{"fanout-own-filters", `{"type": "Fan-Out", "publishers": {"client_count": 4, "topics": "t/$clientindex"},
		"subscribers": {"client_count": 6, "topics": "t/$clientindex"}}`},
	{"staged-p2p", string(stagedP2P(`"duration_sec": 600, "publish_rate": 3,
		"stages": [{"duration_sec": 10, "publish_rate": 100}, {"duration_sec": "30s", "publish_rate": 2000, "ramp": true},
		{"duration_sec": 5.5, "publish_rate": 0}]`))},
	{"shared-filters", `{"type": "Shared-Subscription",
		"publishers": {"client_count": 12, "qos": 2, "topics": "t/$clientindex/x"},
		"subscribers": {"client_count": 5, "qos": 1, "protocol_version": 5,
			"topics": ["t/$clientindex/x", "$share/g/t/#", "$share/h/t/+/x", "$share/g/t/+/x"]},
		"parameters": {"publish_rate": 3, "payload_size": 2000}}`},
	{"p2p-clientid", `{"type": "Point-To-Point",
		"publishers": {"id_prefix": "pub-", "client_count": 30, "topics": "in/$clientid",
			"protocol_version": 5, "publish_properties": [{"name": "content_type", "value": "text/plain"}]},
		"subscribers": {"id_prefix": "sub-", "client_count": 30, "qos": 2, "topics": "in/pub-$clientindex",
			"connect_properties": [{"name": "session_expiry_interval", "value": 60}], "protocol_version": 5},
		"parameters": {"publish_rate": 0.3, "payload_size": "4KiB", "message_count": 5, "reconnect": "backoff"}}`},
	{"fanin-single-topic", `{"type": "Fan-In", "publishers": {"client_count": 7, "qos": 1, "topics": "all"},
		"subscribers": {"client_count": 3, "topics": ["all", "#"]}, "parameters": {"publish_rate": 0.1}}`},
	{"rpc", `{"name": "rpc", "groups": [
		{"name": "requesters", "behaviours": "request", "client_count": 10, "protocol_version": 5, "qos": 1,
		 "topics": "rpc/req/$clientid", "response_topic": "rpc/resp/$clientid", "publish_rate": 20, "payload_size": 64},
		{"name": "responders", "behaviours": "respond", "client_count": 2, "protocol_version": 5, "qos": 1,
		 "filters": "$share/rpc/rpc/req/+"},
		{"name": "monitor", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "rpc/req/#"}],
		"parameters": {"duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 2}}`},
	{"rpc-outside", `{"name": "rpc-outside", "groups": [
		{"name": "requesters", "behaviours": "request", "client_count": 5, "protocol_version": 5, "qos": 1,
		 "topics": "ext/req/$clientindex", "response_topic": "ext/resp/$clientindex", "publish_rate": 20}],
		"parameters": {"duration_sec": 1.5, "warmup_sec": 0.5, "drain_sec": 2}}`},
	{"mixed-shares", `{"name": "shares", "groups": [
		{"name": "a", "behaviours": "subscribe", "client_count": 3, "qos": 1, "filters": ["x/$clientindex", "$share/s/x/+"]},
		{"name": "pub", "behaviours": "publish", "client_count": 40, "fraction": 0.3, "qos": 1, "topics": "x/$clientindex",
		 "publish_rate": 2, "start_sec": 3, "payload_size": 1500, "reconnect": "backoff"},
		{"name": "b", "behaviours": "subscribe", "client_count": 4, "qos": 2, "filters": "$share/s/x/#",
		 "churn": {"rate": 2, "at_sec": 5, "down_sec": 1}},
		{"name": "quiet", "behaviours": "publish", "client_count": 2, "topics": "nobody/$clientindex", "expect_delivery": false},
		{"name": "idle", "behaviours": "hold", "client_count": 5, "keep_alive_sec": 10, "server": {"brokers": ["o1:1883", "o2:1883"]},
		 "churn": {"fraction": 0.4, "at_sec": 2}}],
		"server": {"brokers": ["b1:1883", "b2:1883", "b3:1883"]},
		"parameters": {"duration_sec": 20, "publish_rate": 1, "bind": ["10.0.0.1-10.0.0.4"]}}`},
	{"mixed-subscribe-only", `{"name": "listeners", "groups": [
		{"name": "l", "behaviours": "subscribe", "client_count": 4, "filters": "ext/#"}],
		"parameters": {"duration_sec": 5}}`},
	{"mixed-hold-only", `{"name": "hold", "groups": [
		{"name": "h", "behaviours": "hold", "client_count": 6}], "parameters": {"duration_sec": 5}}`},
}

// goldenCases returns every scenario of the dumps, named after where it comes from.
func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	var out []goldenCase
	for _, name := range BuiltinNames() {
		s, _ := Builtin(name)
		out = append(out, goldenCase{"builtin-" + name, s})
	}
	for _, g := range []struct{ glob, prefix string }{{"testdata/good/*.json", "good-"}, {"../scripts/*.json", "scripts-"}} {
		files, _ := filepath.Glob(g.glob)
		for _, f := range files {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, goldenCase{g.prefix + strings.TrimSuffix(filepath.Base(f), ".json"), s})
		}
	}
	studies, _ := filepath.Glob("../study/builtin/*.json")
	for _, f := range studies {
		out = append(out, studyCells(t, f)...)
	}
	for _, in := range goldenInline {
		s, err := Parse(in.name+".json", []byte(in.js))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, goldenCase{"inline-" + in.name, s})
	}
	// The same scenarios on several brokers and source addresses.
	for _, name := range []string{"quick-p2p-100", "quick-sharedsub-100-5", "iot-fleet-10K"} {
		s, _ := Builtin(name)
		if err := s.SetBrokers([]string{"a:1883,b:1884,c:1885"}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBind([]string{"10.1.0.1-10.1.0.7"}); err != nil {
			t.Fatal(err)
		}
		out = append(out, goldenCase{"brokers-" + name, s})
	}
	return out
}

// studyCells returns the cells of the campaign file f as the study runs them (study's
// cellScenario): the scenario, its sets, each combination of its sweeps, the campaign's
// duration and warm-up, a broker.
func studyCells(t *testing.T, f string) []goldenCase {
	t.Helper()
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Scenarios []struct {
			Scenario string
			Label    string
			Set      map[string]any
			Sweep    map[string][]any
		}
		Duration float64 `json:"duration_sec"`
		Warmup   float64 `json:"warmup_sec"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	str := fmt.Sprint // the campaigns' numbers are small: no exponent
	var out []goldenCase
	for _, sp := range c.Scenarios {
		combos := [][][2]string{nil}
		for _, path := range slices.Sorted(maps.Keys(sp.Sweep)) {
			var next [][][2]string
			for _, prev := range combos {
				for _, v := range sp.Sweep[path] {
					next = append(next, append(slices.Clone(prev), [2]string{path, str(v)}))
				}
			}
			combos = next
		}
		for _, combo := range combos {
			s, ok := Builtin(sp.Scenario)
			if !ok {
				t.Fatalf("%s: no built-in %s", f, sp.Scenario)
			}
			var sets [][2]string
			for _, path := range slices.Sorted(maps.Keys(sp.Set)) {
				sets = append(sets, [2]string{path, str(sp.Set[path])})
			}
			sets = append(sets, combo...)
			if c.Duration > 0 {
				sets = append(sets, [2]string{"parameters.duration_sec", str(c.Duration)})
			}
			if c.Warmup > 0 {
				sets = append(sets, [2]string{"parameters.warmup_sec", str(c.Warmup)})
			}
			name := "study-" + strings.TrimSuffix(filepath.Base(f), ".json") + "-" + sp.Label
			for _, kv := range sets {
				if err := s.Set(kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			for _, kv := range combo {
				name += "-" + strings.TrimPrefix(kv[0][strings.LastIndex(kv[0], ".")+1:], "_") + "-" + kv[1]
			}
			if err := s.SetBrokers([]string{"127.0.0.1:1883"}); err != nil {
				t.Fatal(err)
			}
			out = append(out, goldenCase{name, s})
		}
	}
	return out
}

// TestGoldenBuiltins holds the table of mqblast scenarios to testdata/golden/builtins.txt.
func TestGoldenBuiltins(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := WriteBuiltins(&b); err != nil {
		t.Fatal(err)
	}
	for _, in := range Builtins() {
		fmt.Fprintf(&b, "%+v\n", in)
	}
	checkGolden(t, filepath.Join("testdata", "golden", "builtins.txt"), b.String())
}
