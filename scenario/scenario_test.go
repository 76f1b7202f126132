package scenario

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err and testdata/golden from the current code")

// loadAndValidate reads a testdata file as Load would, naming it by its base name, and
// validates it; it returns every problem, one line each.
func loadAndValidate(t *testing.T, path string) (*Scenario, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(filepath.Base(path), data)
	if err != nil {
		return nil, err
	}
	return s, s.Validate()
}

// checkGolden compares got with the golden file, or writes it there under -update.
func checkGolden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", file, diff)
	}
}

// TestBadFiles checks every message for every bad file against testdata/bad/*.err.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/bad/*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/bad files")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			_, err := loadAndValidate(t, f)
			if err == nil {
				t.Fatal("no error for a bad file")
			}
			got := err.Error() + "\n"
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				if !strings.HasPrefix(line, name+".json: ") {
					t.Errorf("line %q does not start with the file name", line)
				}
			}
			if n := len(Errors(err)); n != strings.Count(got, "\n") {
				t.Errorf("Errors returned %d problems for %d lines", n, strings.Count(got, "\n"))
			}
			checkGolden(t, strings.TrimSuffix(f, ".json")+".err", got)
		})
	}
}

func TestGoodFiles(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/good/*.json")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := loadAndValidate(t, f)
			if err != nil {
				t.Fatalf("unexpected problems:\n%v", err)
			}
			if _, err := NewPlan(s); err != nil {
				t.Fatal(err)
			}
			// The effective file reads back to the same scenario.
			data, err := s.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			s2, err := Parse(s.File(), data)
			if err != nil {
				t.Fatalf("re-parse: %v\n%s", err, data)
			}
			if err := s2.Validate(); err != nil {
				t.Fatalf("re-validate: %v\n%s", err, data)
			}
			if diff := cmp.Diff(s, s2, cmp.AllowUnexported(Scenario{}, Parameters{}),
				cmp.FilterPath(func(p cmp.Path) bool {
					n := p.Last().String()
					return n == ".given" || n == ".defaulted" || n == ".creds"
				}, cmp.Ignore())); diff != "" {
				t.Errorf("round trip differs (-file +marshalled):\n%s", diff)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()
	s, err := loadAndValidate(t, "testdata/good/roundtrip-v5.json")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Parameters
	check := func(what string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("duration", p.Duration, 2*time.Minute)
	check("drain", p.Drain, 1500*time.Millisecond)
	check("warmup", p.Warmup, 5*time.Second)
	check("payload size", p.PayloadSize, PayloadTextAt+len("hello"))
	check("reconnect", p.Reconnect, ReconnectBackoff)
	check("version", s.Publishers.ProtocolVersion, V5)
	check("keepalive default", p.KeepAlive, 60*time.Second)
	check("port default", s.Server.Port, 1883)
	want := []Property{
		{Name: "session_expiry_interval", ID: 0x11},
		{Name: "user_property", ID: 0x26, Key: "bench", Str: "mqblast"},
	}
	if diff := cmp.Diff(want, s.Publishers.ConnectProperties); diff != "" {
		t.Errorf("connect properties (-want +got):\n%s", diff)
	}

	s, err = loadAndValidate(t, "testdata/good/subscription-options.json")
	if err != nil {
		t.Fatal(err)
	}
	check("subscribers no_local", s.Subscribers.NoLocal, true)
	check("subscribers retain_as_published", s.Subscribers.RetainAsPublished, true)
	check("subscribers retain_handling", s.Subscribers.RetainHandling, byte(2))
	check("publishers no_local default", s.Publishers.NoLocal, false)
	check("publishers retain_as_published default", s.Publishers.RetainAsPublished, false)
	check("publishers retain_handling default", s.Publishers.RetainHandling, byte(0))
	s, err = loadAndValidate(t, "testdata/good/roundtrip-subscription-options.json")
	if err != nil {
		t.Fatal(err)
	}
	check("round-trip retain_as_published", s.Publishers.RetainAsPublished, true)
	check("round-trip retain_handling", s.Publishers.RetainHandling, byte(1))

	s, _ = loadAndValidate(t, "testdata/good/mqtt31-qos2.json")
	check("3.1", s.Publishers.ProtocolVersion, V31)
	check("KiB", s.Parameters.PayloadSize, 1024)

	s, _ = loadAndValidate(t, "testdata/good/connections-minimal.json")
	check("connections rate", s.Parameters.PublishRate, 0.0)
	check("connections warmup", s.Parameters.Warmup, time.Duration(0))
	check("default id prefix", s.Publishers.IDPrefix, "mqblast-pub-")
	check("clean session default", s.Publishers.CleanSession, true)
	check("version default", s.Publishers.ProtocolVersion, V311)
	if s.HasServer() {
		t.Error("a file without a server has one")
	}
}

func TestDefaultsFollowChanges(t *testing.T) {
	t.Parallel()
	s, err := Parse("x.json", []byte(`{"type": "Connections", "publishers": {"client_count": 10, "topics": "t"},
		"subscribers": {"client_count": 0}, "parameters": {"duration_sec": 100}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Parameters.PublishRate != 0 || s.Parameters.Warmup != 0 {
		t.Fatalf("Connections defaults: rate %v warmup %v", s.Parameters.PublishRate, s.Parameters.Warmup)
	}
	for _, kv := range [][2]string{{"type", "Fan-Out"}, {"subscribers.client_count", "20"},
		{"subscribers.topics", "t"}, {"parameters.duration_sec", "10m"}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Parameters.PublishRate != 1 || s.Parameters.Warmup != 30*time.Second || s.Parameters.Drain != 5*time.Second {
		t.Fatalf("Fan-Out defaults: rate %v warmup %v drain %v", s.Parameters.PublishRate, s.Parameters.Warmup, s.Parameters.Drain)
	}
	if err := s.Set("parameters.duration_sec", "60"); err != nil {
		t.Fatal(err)
	}
	_ = s.Validate()
	if s.Parameters.Warmup != 6*time.Second {
		t.Errorf("warmup after duration 60 s = %v, want 6s", s.Parameters.Warmup)
	}
	if err := s.Set("parameters.warmup_sec", "0"); err != nil {
		t.Fatal(err)
	}
	_ = s.Validate()
	if s.Parameters.Warmup != 0 {
		t.Errorf("explicit warmup 0 became %v", s.Parameters.Warmup)
	}
}

func TestSet(t *testing.T) {
	t.Parallel()
	base := func() *Scenario {
		s, _ := Builtin("quick-fanout-1-100")
		return s
	}
	good := []struct {
		path, value string
		check       func(s *Scenario) bool
	}{
		{"parameters.publish_rate", "10", func(s *Scenario) bool { return s.Parameters.PublishRate == 10 }},
		{"parameters.publish_rate", "0.25", func(s *Scenario) bool { return s.Parameters.PublishRate == 0.25 }},
		{"parameters.duration_sec", "90", func(s *Scenario) bool { return s.Parameters.Duration == 90*time.Second }},
		{"parameters.duration_sec", "1m30s", func(s *Scenario) bool { return s.Parameters.Duration == 90*time.Second }},
		{"parameters.payload_size", "64KiB", func(s *Scenario) bool { return s.Parameters.PayloadSize == 65536 }},
		{"parameters.bind", "127.0.0.2, 127.0.0.3", func(s *Scenario) bool { return len(s.Parameters.Bind) == 2 }},
		{"parameters.reconnect", "backoff", func(s *Scenario) bool { return s.Parameters.Reconnect == ReconnectBackoff }},
		{"publishers.qos", "2", func(s *Scenario) bool { return s.Publishers.QoS == 2 }},
		{"publishers.protocol_version", "3.1", func(s *Scenario) bool { return s.Publishers.ProtocolVersion == V31 }},
		{"publishers.protocol_version", "5", func(s *Scenario) bool { return s.Publishers.ProtocolVersion == V5 }},
		{"publishers.clean_session", "false", func(s *Scenario) bool { return !s.Publishers.CleanSession }},
		{"subscribers.no_local", "true", func(s *Scenario) bool { return s.Subscribers.NoLocal }},
		{"subscribers.retain_as_published", "true", func(s *Scenario) bool { return s.Subscribers.RetainAsPublished }},
		{"subscribers.retain_handling", "2", func(s *Scenario) bool { return s.Subscribers.RetainHandling == 2 }},
		{"subscribers.topics", `["a/#", "b"]`, func(s *Scenario) bool { return len(s.Subscribers.Topics) == 2 }},
		{"subscribers.topics", "a, b/#", func(s *Scenario) bool { return len(s.Subscribers.Topics) == 2 && s.Subscribers.Topics[1] == "b/#" }},
		{"server.hostname", "10.0.0.1", func(s *Scenario) bool { return s.Server.Hostname == "10.0.0.1" && s.HasServer() }},
		{"server.username", "12345", func(s *Scenario) bool { return s.Server.Username == "12345" }},
		{"name", `"quoted"`, func(s *Scenario) bool { return s.Name == "quoted" }},
		// A string field takes a bare word, and text that looks like JSON, as it is.
		{"parameters.payload", "hello", func(s *Scenario) bool { return s.Parameters.Payload == "hello" }},
		{"parameters.payload", `"hello"`, func(s *Scenario) bool { return s.Parameters.Payload == "hello" }},
		{"parameters.payload", "hello world", func(s *Scenario) bool { return s.Parameters.Payload == "hello world" }},
		{"parameters.payload", "21.5", func(s *Scenario) bool { return s.Parameters.Payload == "21.5" }},
		{"parameters.payload", "true", func(s *Scenario) bool { return s.Parameters.Payload == "true" }},
		{"parameters.payload", `{"temp": 21.5}`, func(s *Scenario) bool { return s.Parameters.Payload == `{"temp": 21.5}` }},
		{"parameters.payload", `[1, 2]`, func(s *Scenario) bool { return s.Parameters.Payload == `[1, 2]` }},
		{"parameters.payload", `"half`, func(s *Scenario) bool { return s.Parameters.Payload == `"half` }},
		{"server.username", "null", func(s *Scenario) bool { return s.Server.Username == "null" }},
		{"subscribers", "null", func(s *Scenario) bool { return s.Subscribers == nil }},
		{"parameters", `{"publish_rate": 3}`, func(s *Scenario) bool {
			return s.Parameters.PublishRate == 3 && s.Parameters.Duration == 10*time.Second
		}},
	}
	for _, c := range good {
		t.Run(c.path+"="+c.value, func(t *testing.T) {
			s := base()
			if err := s.Set(c.path, c.value); err != nil {
				t.Fatal(err)
			}
			if !c.check(s) {
				t.Errorf("not applied: %+v", s)
			}
		})
	}
	bad := []struct{ path, value, want string }{
		{"parameters.publish_rate", "ten", `--set: parameters.publish_rate: "ten" is not a number`},
		{"parameters.publish_rat", "1", `--set: parameters.publish_rat: unknown field (did you mean "publish_rate"?)`},
		{"parameter.publish_rate", "1", `--set: parameter.publish_rate: unknown field (did you mean "parameters"?)`},
		{"name.first", "1", `--set: name.first: "name" has no fields`},
		{"publishers.qos", "3", `--set: publishers.qos: 3 is not a QoS (want 0, 1 or 2)`},
		{"publishers.clean_session", "yes", `--set: publishers.clean_session: "yes" is not a boolean (want true or false)`},
		{"parameters.duration_sec", "soon", `--set: parameters.duration_sec: "soon" is not a time span (want seconds, or a Go duration such as "90s")`},
		{"subscribers.topics", `["a", 1]`, `--set: subscribers.topics[1]: 1 is not a string`},
		{"subscribers.no_local", "1", `--set: subscribers.no_local: 1 is not a boolean (want true or false)`},
		{"subscribers.retain_handling", "3", `--set: subscribers.retain_handling: 3 ` + notRetainHandling},
		{"subscribers.retain_handling", "true", `--set: subscribers.retain_handling: true ` + notRetainHandling},
		{"parameters", `{"publish_rate": 1`, `--set: parameters: "{\"publish_rate\": 1" is not valid JSON: line 1, column 19: unexpected end of file`},
	}
	for _, c := range bad {
		t.Run(c.path+"="+c.value, func(t *testing.T) {
			err := base().Set(c.path, c.value)
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v\nwant  %s", err, c.want)
			}
		})
	}
	// Set creates an absent group with its defaults.
	s, _ := Builtin("quick-conn-100")
	if err := s.Set("subscribers.client_count", "0"); err != nil || s.Subscribers == nil || s.Subscribers.IDPrefix != defaultSubPrefix {
		t.Errorf("absent group: %v %+v", err, s.Subscribers)
	}
	// A value that passes Set but not Validate.
	s = base()
	if err := s.Set("parameters.publish_rate", "-5"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err == nil || err.Error() != "quick-fanout-1-100: parameters.publish_rate: -5 is not a rate (must be > 0)" {
		t.Errorf("Validate after Set: %v", err)
	}
}

func TestSetBrokers(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-p2p-100")
	if s.HasServer() {
		t.Fatal("built-in has a server")
	}
	if err := s.SetBrokers([]string{"10.0.0.1:1884"}); err != nil {
		t.Fatal(err)
	}
	if s.Server.Hostname != "10.0.0.1" || s.Server.Port != 1884 || s.Server.Brokers != nil || !s.HasServer() {
		t.Errorf("one broker: %+v", s.Server)
	}
	if err := s.SetBrokers([]string{"a.example,b.example:2000", "[::1]:1883"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a.example:1883", "b.example:2000", "[::1]:1883"}
	if diff := cmp.Diff(want, s.Server.Brokers); diff != "" || s.Server.Hostname != "a.example" || s.Server.Port != 1883 {
		t.Errorf("brokers %+v (-want +got):\n%s", s.Server, diff)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, p.Brokers()); diff != "" {
		t.Errorf("plan brokers (-want +got):\n%s", diff)
	}
	count := make([]int, 3)
	for i := range p.Len() {
		count[p.Client(i).Broker]++
	}
	if count[0] < 66 || count[1] < 66 || count[2] < 66 {
		t.Errorf("clients per broker %v, want an even spread of 200", count)
	}
	err = s.SetBrokers([]string{"h:0", ":1883", "x:y:z", ""})
	wantErr := "--broker: \"h:0\" has port \"0\" (want 1..65535)\n" +
		"--broker: \":1883\" has no host (want host:port)\n" +
		"--broker: \"x:y:z\" is not host:port"
	if err == nil || err.Error() != wantErr {
		t.Errorf("error:\n%v\nwant:\n%s", err, wantErr)
	}
	if err := s.SetBrokers(nil); err == nil || err.Error() != "--broker: no broker given (want host:port)" {
		t.Errorf("no broker: %v", err)
	}
}

func TestSetBind(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-conn-100")
	err := s.SetBind([]string{"127.0.0.2-127.0.0.4,10.0.0.0/30", "eth0", "1.2.3"})
	want := "--bind: \"eth0\" is an interface name\n--bind: \"1.2.3\" is not an address, range, prefix or interface name"
	if err == nil || err.Error() != want {
		t.Fatalf("error:\n%v\nwant:\n%s", err, want)
	}
	if err := s.SetBind([]string{"127.0.0.2-127.0.0.4,10.0.0.0/30", "::1"}); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sources() != 8 {
		t.Fatalf("Sources = %d, want 8", p.Sources())
	}
	var got []string
	for k := range p.Sources() {
		got = append(got, p.Source(k).String())
	}
	wantAddrs := []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3", "::1"}
	if diff := cmp.Diff(wantAddrs, got); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	for i := range p.Len() {
		if c := p.Client(i); c.Source != i%8 {
			t.Fatalf("client %d source %d", i, c.Source)
		}
	}
	// An interface name in a file passes Validate but NewPlan wants it resolved.
	s.Parameters.Bind = []string{"eth0"}
	if _, err := NewPlan(s); err == nil || !strings.Contains(err.Error(), `parameters.bind: "eth0" is an interface name; resolve`) {
		t.Errorf("interface in plan: %v", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	s, err := Resolve("quick-p2p-100")
	if err != nil || s.Name != "quick-p2p-100" {
		t.Fatalf("built-in: %v %v", s, err)
	}
	s, err = Resolve("testdata/good/xmq-p2p.json")
	if err != nil || s.Publishers.ClientCount != 50000 || s.File() != "testdata/good/xmq-p2p.json" {
		t.Fatalf("file: %v", err)
	}
	_, err = Resolve("quick-p2p-10")
	if !errors.Is(err, ErrNotFound) || err.Error() != `scenario "quick-p2p-10": no such file or built-in scenario (did you mean "quick-p2p-100"?) (mqblast scenarios lists the built-ins)` {
		t.Errorf("unknown: %v", err)
	}
	_, err = Resolve("testdata/nosuch.json")
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestErrorsFlatten(t *testing.T) {
	t.Parallel()
	e1 := &Error{File: "f", Path: "p", Msg: "m"}
	e2 := &Error{Msg: "whole"}
	err := errors.Join(e1, errors.Join(e2, errors.New("other")))
	got := Errors(err)
	if len(got) != 2 || got[0] != e1 || got[1] != e2 {
		t.Errorf("Errors = %v", got)
	}
	if e2.Error() != "whole" || e1.Error() != "f: p: m" {
		t.Errorf("formatting: %q %q", e1, e2)
	}
}

// TestSubscriptionOptions follows the MQTT 5.0 subscription options from Set through
// Validate to the effective file, which writes them only when they are not the defaults.
func TestSubscriptionOptions(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-fanout-1-100")
	for _, kv := range [][2]string{{"subscribers.no_local", "true"}, {"subscribers.retain_as_published", "true"},
		{"subscribers.retain_handling", "1"}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := "quick-fanout-1-100: subscribers.no_local: true needs protocol_version 5 (subscription options are MQTT 5.0; this group is MQTT 3.1.1)\n" +
		"quick-fanout-1-100: subscribers.retain_as_published: true needs protocol_version 5 (subscription options are MQTT 5.0; this group is MQTT 3.1.1)\n" +
		"quick-fanout-1-100: subscribers.retain_handling: 1 needs protocol_version 5 (subscription options are MQTT 5.0; this group is MQTT 3.1.1)"
	if err := s.Validate(); err == nil || err.Error() != want {
		t.Fatalf("3.1.1 group:\n%v\nwant:\n%s", err, want)
	}
	if err := s.Set("subscribers.protocol_version", "5"); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	data, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`"no_local":true`, `"retain_as_published":true`, `"retain_handling":1`} {
		if !strings.Contains(string(data), f) {
			t.Errorf("effective file lacks %s:\n%s", f, data)
		}
	}
	s2, err := Parse("effective", data)
	if err != nil {
		t.Fatal(err)
	}
	if g := s2.Subscribers; !g.NoLocal || !g.RetainAsPublished || g.RetainHandling != 1 {
		t.Errorf("re-parsed %+v", g)
	}

	// A value set from Go is checked too.
	s.Subscribers.RetainHandling = 7
	want = "quick-fanout-1-100: subscribers.retain_handling: 7 " + notRetainHandling
	if err := s.Validate(); err == nil || err.Error() != want {
		t.Errorf("retain_handling 7:\n%v\nwant:\n%s", err, want)
	}

	// Defaults are not written: effective files of existing scenarios keep their bytes.
	s, _ = Builtin("quick-fanout-1-100")
	data, err = s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"no_local", "retain_as_published", "retain_handling"} {
		if strings.Contains(string(data), f) {
			t.Errorf("effective file of defaults holds %s:\n%s", f, data)
		}
	}
}

// TestThresholds: "thresholds" decodes from a list or one string, Set replaces it (a list
// in JSON or comma-separated, an expression's own "==" kept), Clone copies it and
// MarshalJSON writes it back.
func TestThresholds(t *testing.T) {
	t.Parallel()
	s, err := loadAndValidate(t, "testdata/good/thresholds.json")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"messages.lost==0", "latency_us.p99 < 50000", "connections.refused.not_authorized==0"}
	if d := cmp.Diff(want, s.Thresholds); d != "" {
		t.Fatalf("decoded (-want +got)\n%s", d)
	}
	c := s.Clone()
	c.Thresholds[0] = "changed"
	if s.Thresholds[0] != "messages.lost==0" {
		t.Error("Clone shares the thresholds")
	}
	one, err := Parse("one", []byte(`{"type": "Connections", "publishers": {}, "thresholds": "connections.failed<=10"}`))
	if err != nil || len(one.Thresholds) != 1 || one.Thresholds[0] != "connections.failed<=10" {
		t.Fatalf("one string: %v %q", err, one.Thresholds)
	}
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{"messages.lost==0", []string{"messages.lost==0"}},
		{"messages.lost==0, latency_us.p99<50000", []string{"messages.lost==0", "latency_us.p99<50000"}},
		{`["throughput.receive_per_s>=45000"]`, []string{"throughput.receive_per_s>=45000"}},
		{`[]`, []string{}},
	} {
		c := s.Clone()
		if err := c.Set("thresholds", tc.value); err != nil {
			t.Fatalf("Set %q: %v", tc.value, err)
		}
		if d := cmp.Diff(tc.want, c.Thresholds); d != "" {
			t.Errorf("Set %q (-want +got)\n%s", tc.value, d)
		}
	}
	if err := s.Clone().Set("thresholds", `[1]`); err == nil || err.Error() != "--set: thresholds[0]: 1 is not a string" {
		t.Errorf("Set a number: %v", err)
	}
	data, err := s.MarshalJSON()
	if err != nil || !strings.Contains(string(data), `"thresholds":["messages.lost==0","latency_us.p99 \u003c 50000",`) {
		t.Errorf("MarshalJSON: %v\n%s", err, data)
	}
	one.Thresholds = nil
	if data, _ := one.MarshalJSON(); strings.Contains(string(data), "thresholds") {
		t.Errorf("no thresholds, yet MarshalJSON writes the key:\n%s", data)
	}
}
