package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mqblast/mqblast/run/spec"
)

// specOf runs the command line args in this process up to the run and returns the Spec
// it would run and the password kept out of it. It replaces start while it runs: its
// tests do not call t.Parallel (they run before the parallel ones).
func specOf(t *testing.T, args ...string) (*spec.Spec, string, error) {
	t.Helper()
	sp, pw, err := specPasswords(t, args...)
	return sp, pw.run, err
}

// specPasswords is specOf with every password the command line gave beside the Spec.
func specPasswords(t *testing.T, args ...string) (*spec.Spec, passwords, error) {
	t.Helper()
	var got *spec.Spec
	var pw passwords
	old := start
	start = func(_ *cobra.Command, sp *spec.Spec, password passwords) error {
		got, pw = sp, password
		return nil
	}
	defer func() { start = old }()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	_, err := root.ExecuteContextC(context.Background())
	return got, pw, err
}

// sampleValue is a value for flag f that differs from its default.
func sampleValue(f *pflag.Flag) string {
	switch f.Name {
	case "procs":
		return "3"
	case "format":
		return "json"
	case "max-packet-size":
		return "2MiB"
	case "shard":
		return "1/2"
	case "vary":
		return "parameters.connection_rate"
	case "find":
		return "connect-rate"
	case "confirm":
		return "false"
	case "metrics-public", "metrics-hold":
		return map[string]string{"metrics-public": "true", "metrics-hold": "5s"}[f.Name]
	}
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "duration":
		return "7s"
	case "int", "float64":
		return "3"
	}
	return "x"
}

// lookup is the value at the dotted JSON path of doc, nil when there is none.
func lookup(doc map[string]any, path string) any {
	var v any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestFlagsSetSpecFields: every flag of run, limit and the quick verbs that names a Spec
// field (pathOf) sets that field and no other, and the field's errors name the flag back
// (flagOf); the flags that name none are the quick verbs' own, which build the scenario.
func TestFlagsSetSpecFields(t *testing.T) {
	verbs := map[string][]string{
		"run":   {"run", "quick-conn-100"},
		"limit": {"limit", "quick-p2p-100", "--slo", "messages.lost==0"},
		"conn":  {"conn"},
		"pub":   {"pub", "-t", "a"},
	}
	for name, base := range verbs {
		var cmd *cobra.Command
		for _, c := range newRootCmd().Commands() {
			if c.Name() == name {
				cmd = c
			}
		}
		plain, _, err := specOf(t, base...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var before map[string]any
		_ = json.Unmarshal(plain.JSON(), &before)
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			path := pathOf(cmd, f.Name)
			if path == "" || f.Name == "spec" || (name == "limit" && strings.HasPrefix(path, "limit.")) && f.Name == "slo" {
				return
			}
			v := sampleValue(f)
			sp, _, err := specOf(t, append(append([]string(nil), base...), "--"+f.Name+"="+v)...)
			if err != nil {
				// Flags that need another beside them (--net-broker-cmd, --sink-flush-delay)
				// say which.
				t.Logf("%s --%s=%s: %v", name, f.Name, v, err)
				return
			}
			var after map[string]any
			_ = json.Unmarshal(sp.JSON(), &after)
			b, _ := json.Marshal(lookup(before, path))
			a, _ := json.Marshal(lookup(after, path))
			if string(a) == string(b) {
				t.Errorf("%s --%s=%s: %s stayed %s", name, f.Name, v, path, a)
			}
			if back := flagOf(cmd, path); back == "" {
				t.Errorf("%s: the errors of %s name no flag", name, path)
			}
		})
	}
}

// TestSpecFlagsReplaceFields: run --spec FILE with flags beside it runs the file's Spec
// with those fields replaced; a flag that names no field is refused.
func TestSpecFlagsReplaceFields(t *testing.T) {
	file := t.TempDir() + "/s.json"
	written := &spec.Spec{Scenario: spec.Scenario{Name: "quick-p2p-100", Set: []string{"a=1"}}, Loops: 2,
		Outputs: spec.Outputs{Out: "old.json", Format: "json"}}
	if err := writeFile(file, written.JSON()); err != nil {
		t.Fatal(err)
	}
	sp, _, err := specOf(t, "run", "--spec", file, "--out", "new.json", "--set", "b=2", "--set", "server.password=pw")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Outputs.Out != "new.json" || sp.Outputs.Format != "json" || sp.Loops != 2 || sp.Scenario.Name != "quick-p2p-100" ||
		strings.Join(sp.Scenario.Set, " ") != "b=2 server.password=<redacted>" {
		t.Errorf("spec %s", sp.JSON())
	}
	if _, _, err := specOf(t, "run", "--spec", file, "quick-conn-100"); err == nil || codeOf(err) != exitUsage {
		t.Errorf("--spec and a scenario: %v", err)
	}
}

// TestPasswordKeptOutOfSpec: a password given with --set or -P reaches the run beside its
// Spec, never in it: the Spec holds the marker.
func TestPasswordKeptOutOfSpec(t *testing.T) {
	sp, pw, err := specOf(t, "run", "quick-p2p-100", "--set", "server.username=u", "--set", "server.password=s3cret")
	if err != nil || pw != "s3cret" || strings.Contains(string(sp.JSON()), "s3cret") {
		t.Errorf("run --set: password %q, spec %s, %v", pw, sp.JSON(), err)
	}
	sp, pw, err = specOf(t, "conn", "-u", "u", "-P", "s3cret")
	if err != nil || pw != "s3cret" || strings.Contains(string(sp.JSON()), "s3cret") || !strings.Contains(string(sp.Scenario.File), `"password":"<redacted>"`) {
		t.Errorf("conn -P: password %q, spec %s, %v", pw, sp.JSON(), err)
	}
	// A group's own password too, by its group.
	sp, pws, err := specPasswords(t, "run", "quick-p2p-100", "--set", "server.password=s3cret", "--set", "groups.devices.server.password=d3v")
	if err != nil || pws.run != "s3cret" || pws.groups["devices"] != "d3v" || len(pws.groups) != 1 ||
		strings.Contains(string(sp.JSON()), "d3v") || !slices.Contains(sp.Scenario.Set, "groups.devices.server.password=<redacted>") {
		t.Errorf("run --set groups.devices.server.password: passwords %+v, spec %s, %v", pws, sp.JSON(), err)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
