package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the loader. Invariants:
//  1. Parse, Validate, NewPlan, Client, Shard, Estimate and MarshalJSON never panic.
//  2. A scenario that Parse accepts is either refused by Validate with at least one Error,
//     or plans; a plan's first and last client have ids.
//  3. The effective file of a valid scenario parses and validates again.
func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, _ := BuiltinJSON(name)
		f.Add(data)
	}
	files, _ := filepath.Glob("testdata/*/*.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		s, err := Parse("fuzz.json", data)
		if err != nil {
			if len(Errors(err)) == 0 {
				t.Fatalf("Parse error without an Error: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			if len(Errors(err)) == 0 {
				t.Fatalf("Validate error without an Error: %v", err)
			}
			return
		}
		out, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		s2, err := Parse("fuzz.json", out)
		if err != nil {
			t.Fatalf("effective file does not parse: %v\n%s", err, out)
		}
		if s.Server.Password == "" { // a redacted password is still a valid one
			if err := s2.Validate(); err != nil {
				t.Fatalf("effective file does not validate: %v\n%s", err, out)
			}
		}
		p, err := NewPlan(s)
		if err != nil {
			return // interface names in bind
		}
		for _, sh := range []*Plan{p, p.Shard(0, 3), p.Shard(2, 3)} {
			if sh.Len() == 0 {
				continue
			}
			for _, i := range []int{0, sh.Len() - 1} {
				if c := sh.Client(i); c.ID == "" && c.Group.IDPrefix != "" {
					t.Fatalf("client %d has no id", i)
				}
			}
		}
		// Counting deliveries walks every publisher: keep the fuzzer fast.
		if p.Publishers() <= 10_000 {
			_ = p.Estimate()
		}
	})
}

// FuzzSet feeds arbitrary paths and values to Set: it never panics, and a scenario it
// changes still marshals.
func FuzzSet(f *testing.F) {
	f.Add("parameters.publish_rate", "10")
	f.Add("publishers.topics", `["a", "b"]`)
	f.Add("subscribers", "null")
	f.Add("parameters.duration_sec", "1m")
	f.Add("publishers.protocol_version", "3.1")
	f.Add("subscribers.no_local", "true")
	f.Add("subscribers.retain_handling", "2")
	f.Add("publishers.connect_properties", `[{"name": "user_property", "key": "k", "value": "v"}]`)
	f.Add("groups.devices.churn.at_sec", "5")
	f.Add("groups.backend.server", `{"hostname": "h", "port": 1884}`)
	f.Add("groups", `[{"name": "a", "behaviours": "hold", "client_count": 3}]`)
	f.Add("groups.commands.behaviours", "publish,subscribe")
	f.Fuzz(func(t *testing.T, path, value string) {
		base := "quick-fanout-1-100"
		if strings.HasPrefix(path, "groups") { // a mixed scenario's fields
			base = "iot-fleet-10K"
		}
		s, _ := Builtin(base)
		if err := s.Set(path, value); err != nil && len(Errors(err)) == 0 {
			t.Fatalf("Set error without an Error: %v", err)
		}
		_ = s.Validate()
		if _, err := s.MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	})
}
