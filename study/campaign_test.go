package study

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/run/spec"
)

// TestCampaignErrors: every problem is reported, each with its JSON path.
func TestCampaignErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		json string
		want []string // "path: substring", one per expected error
	}{
		{"unknown fields", `{"brokers":[{"name":"a","type":"embedded","addrss":"x"}],"scenarios":[{"scenario":"quick-p2p-100"}],"repetition":2}`,
			[]string{`brokers[0].addrss: unknown field (did you mean "address"?)`, `repetition: unknown field (did you mean "repetitions"?)`}},
		{"missing groups", `{}`, []string{"brokers: missing", "scenarios: missing"}},
		{"bad broker", `{"brokers":[{"name":"a b","type":"mosqito"},{"type":"external"},{"name":"x","type":"external","address":"h:{port}"}],"scenarios":[{"scenario":"quick-p2p-100"}]}`,
			[]string{`brokers[0].name: "a b": want letters`, `brokers[0].type: "mosqito" is not a broker type`, `(did you mean "mosquitto"?)`,
				"brokers[1].name: missing", "brokers[1].address: missing", `brokers[2].address: "h:{port}": {port} is for brokers the study starts`}},
		{"commands that would not run", `{"brokers":[{"name":"a","address":"h:1","stop":"x"},{"name":"b","type":"embedded","restart":"y"}],"scenarios":[{"scenario":"quick-p2p-100"}]}`,
			[]string{"brokers[0].stop: an external broker is not stopped by the study", "brokers[1].restart: the study starts this broker afresh"}},
		{"duplicate broker", `{"brokers":[{"name":"a","type":"embedded"},{"name":"a","type":"sink"}],"scenarios":[{"scenario":"quick-p2p-100"}]}`,
			[]string{`brokers[1].name: "a": another broker has this name`}},
		{"command without port", `{"brokers":[{"name":"m","start":"mosquitto -p 1883"}],"scenarios":[{"scenario":"quick-p2p-100"}]}`,
			[]string{`brokers[0].start: "mosquitto -p 1883" does not use {port} or {addr}`}},
		{"bad sweep values", `{"brokers":[{"name":"a","type":"embedded"}],"scenarios":[{"scenario":"quick-p2p-100","sweep":{"parameters.payload_size":["1KB","1XB",{}],"publishers.qos":[0,7],"parameters.nope":[1]}}]}`,
			[]string{`scenarios[0].sweep.parameters.payload_size[1]: --set: parameters.payload_size:`,
				`scenarios[0].sweep.parameters.payload_size[2]: an object: want a string`,
				`scenarios[0].sweep.publishers.qos[1]: --set: publishers.qos:`,
				`scenarios[0].sweep.parameters.nope[0]: --set: parameters.nope: unknown field`}},
		{"bad scenario", `{"brokers":[{"name":"a","type":"embedded"}],"scenarios":[{"scenario":"no-such-scenario"},{"scenario":"quick-p2p-100","set":{"parameters.publish_rate":-1}}]}`,
			[]string{`scenarios[0].scenario: "no-such-scenario" is neither a built-in scenario`, `scenarios[1]: the cell (no sweep) is not a valid scenario`}},
		{"bad profiles and numbers", `{"brokers":[{"name":"a","type":"embedded"}],"scenarios":[{"scenario":"quick-p2p-100"}],"profiles":["local","wrost","delay=2ms,loss=300%","local"],"repetitions":0,"duration_sec":-1,"order":"random","restart":"sometimes"}`,
			[]string{`profiles[1]: "wrost": network profile "wrost": unknown profile`, `profiles[2]: "delay=2ms,loss=300%"`, `profiles[3]: "local" is listed twice`,
				"repetitions: 0: want a whole number from 1 to 1000", "duration_sec: -1: want seconds > 0", `order: "random": want one of interleaved, shuffled`,
				`restart: "sometimes": want one of each-cell, never`}},
		{"warmup past duration", `{"brokers":[{"name":"a","type":"embedded"}],"scenarios":[{"scenario":"quick-p2p-100"}],"duration_sec":2,"warmup_sec":3}`,
			[]string{"warmup_sec: 3 is not shorter than duration_sec 2"}},
		{"syntax", `{"brokers": [}`, []string{"c.json: line 1, column"}},
		{"metric without metrics", `{"brokers":[{"name":"a","address":"10.0.0.5:1883","metric":["x_total"],"metrics":"http://h:9100/metrics"}],"scenarios":[{"scenario":"quick-p2p-100"}]}`,
			[]string{`brokers[0].metric: needs "metrics"`, `brokers[0].metrics: "http://h:9100/metrics": want an array of strings`}},
		{"secrets", `{"brokers":[{"name":"a","type":"embedded"}],"scenarios":[{"scenario":"quick-p2p-100","set":{"server.username":"u","server.password":["hunter2"]},"sweep":{"server.password":["hunter2","hunter3"]}}]}`,
			[]string{"scenarios[0].set.server.password: want a string (the value is not shown: it is a secret)",
				`scenarios[0].sweep.server.password: a secret is not swept (its values would name the cells in study.json and the report): give the password in "set" or $MQBLAST_PASSWORD`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.json", ".", []byte(tc.json))
			if err == nil {
				t.Fatal("no error")
			}
			errs := Errors(err)
			lines := make([]string, len(errs))
			for i, e := range errs {
				lines[i] = e.Error()
				if e.File != "c.json" {
					t.Errorf("error %q names file %q", e, e.File)
				}
			}
			all := strings.Join(lines, "\n")
			if strings.Contains(all, "hunter") {
				t.Errorf("an error shows a secret:\n%s", all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no error contains %q; got:\n%s", w, all)
				}
			}
			if len(errs) < len(tc.want)-1 { // the suggestion case shares a line
				t.Errorf("%d errors for %d expected:\n%s", len(errs), len(tc.want), all)
			}
		})
	}
}

// TestBuiltinCampaigns: every built-in campaign is valid and expands into its cells.
func TestBuiltinCampaigns(t *testing.T) {
	t.Parallel()
	names := BuiltinNames()
	for _, want := range []string{"brokers-edge", "edge-profiles-payloads", "retain-throughput"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no built-in campaign %s in %v", want, names)
		}
	}
	for _, n := range names {
		c, err := Resolve(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		cells := c.Cells()
		want := len(c.Brokers) * len(c.Profiles) * c.Repetitions
		for _, sp := range c.Scenarios {
			want *= len(sp.combos())
		}
		if len(cells) != want || want == 0 {
			t.Errorf("%s: %d cells, want %d", n, len(cells), want)
		}
	}
	if _, err := Resolve("edge-profile-payloads"); err == nil || !strings.Contains(err.Error(), `did you mean "edge-profiles-payloads"`) {
		t.Errorf("misspelt built-in: %v", err)
	}
}

// TestRunOrder: repetitions are interleaved, the brokers alternate, and a shuffle is
// the same for the same seed and covers every cell once per round.
func TestRunOrder(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.json", ".", []byte(`{"brokers":[{"name":"a","type":"embedded"},{"name":"b","type":"sink"}],
		"scenarios":[{"scenario":"quick-p2p-100","sweep":{"parameters.payload_size":["64","1KB"]}}],"profiles":["local","worst"],"repetitions":3}`))
	if err != nil {
		t.Fatal(err)
	}
	order := runOrder(c.plans(), 3, false, 0)
	if len(order) != 24 {
		t.Fatalf("%d cells", len(order))
	}
	for i, p := range order {
		if rep := i/8 + 1; p.rec.Repetition != rep {
			t.Fatalf("cell %d of the order is repetition %d, want %d", i, p.rec.Repetition, rep)
		}
		if want := []string{"a", "b"}[i%2]; p.rec.Broker != want {
			t.Errorf("cell %d: broker %s, want %s (alternating)", i, p.rec.Broker, want)
		}
		if p.rec.Seq != i+1 {
			t.Errorf("cell %d: seq %d", i, p.rec.Seq)
		}
	}
	ids := func(seed int64) string {
		var s []string
		for _, p := range runOrder(c.plans(), 3, true, seed) {
			s = append(s, p.rec.ID)
		}
		return strings.Join(s, " ")
	}
	if a, b := ids(7), ids(7); a != b || a == ids(8) {
		t.Errorf("shuffle not reproducible from its seed, or not depending on it")
	}
	seen := map[string]bool{}
	for _, p := range runOrder(c.plans(), 3, true, 7) {
		if seen[p.rec.ID] {
			t.Errorf("cell %s twice", p.rec.ID)
		}
		seen[p.rec.ID] = true
	}
}

// TestBrokerMetricsReachCells: a broker's metrics endpoints and series are in every cell's
// Spec (watch.broker_metrics, watch.broker_metric), the file the cell's command runs.
func TestBrokerMetricsReachCells(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.json", ".", []byte(`{"brokers":[{"name":"prod","address":"10.0.0.5:1883",
		"metrics":["http://10.0.0.5:9100/metrics","http://10.0.0.5:9256/metrics"],"metric":["emqx_messages_received"]}],
		"scenarios":[{"scenario":"quick-p2p-100"}],"repetitions":2}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cells, err := DryRun(c, Options{Exe: "mqblast", Dir: dir, Command: testCommand("mqblast")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 2 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, cell := range cells {
		sp, err := spec.Read(cell.specJSON)
		if err != nil {
			t.Fatal(err)
		}
		w := sp.Watch
		if !slices.Equal(w.BrokerMetrics, []string{"http://10.0.0.5:9100/metrics", "http://10.0.0.5:9256/metrics"}) ||
			!slices.Equal(w.Series, []string{"emqx_messages_received"}) {
			t.Errorf("cell %d: watch %+v", cell.Seq, w)
		}
		want := testCommand("mqblast")(filepath.Join(dir, cell.Spec))
		if !slices.Equal(cell.Command, want) || !strings.Contains(cell.Reproduce, cell.Spec) {
			t.Errorf("cell %d: command %q, reproduce %q: not the run of %s", cell.Seq, cell.Command, cell.Reproduce, cell.Spec)
		}
	}
}

// TestCellPassword: a cell's sets give the run's password and groups' own apart, each by
// its path; a marker leaves it to the environment.
func TestCellPassword(t *testing.T) {
	t.Parallel()
	c := &Campaign{}
	sp := &ScenarioSpec{Set: []KV{{"server.password", "run-pw"}, {"groups.devices.server.password", "dev-pw"},
		{"groups.backend.server.password", "be-pw"}, {"groups.backend.server.password", "<redacted>"}, {"server.username", "u"}}}
	pw, groups := c.cellPassword(sp, []KV{{"groups.fleet.server.password", "fl-pw"}})
	if pw != "run-pw" || len(groups) != 2 || groups["devices"] != "dev-pw" || groups["fleet"] != "fl-pw" {
		t.Errorf("run %q, groups %v; want run-pw, devices and fleet", pw, groups)
	}
	if pw, groups = c.cellPassword(&ScenarioSpec{Set: []KV{{"server.password", "<redacted>"}}}, nil); pw != "" || groups != nil {
		t.Errorf("the marker: run %q, groups %v; want none", pw, groups)
	}
}
