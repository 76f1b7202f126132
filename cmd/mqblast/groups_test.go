package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateGroupsRefused: validate refuses each mixed scenario with bad groups,
// exit 3, with every problem's path and message (a run of one: run's
// TestGroupsRefusedBeforeAnySocket).
func TestValidateGroupsRefused(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob(filepath.Join("..", "..", "scenario", "testdata", "bad", "groups-*.json"))
	if len(files) < 5 {
		t.Fatalf("bad groups files %v", files)
	}
	for _, file := range files {
		want, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".err")
		if err != nil {
			t.Fatal(err)
		}
		r := runBin(t, "validate", file)
		for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
			if line = filepath.Join(filepath.Dir(file), line); r.code != exitInvalid || !strings.Contains(r.stderr, line) {
				t.Errorf("validate %s: exit %d, want %d with %q:\n%s", file, r.code, exitInvalid, line, r.stderr)
			}
		}
	}
}

// TestValidateGroups: validate prints each group's plan and the run's totals.
func TestValidateGroups(t *testing.T) {
	r := runBin(t, "validate", "iot-fleet-10K")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		`iot-fleet-10K: valid Mixed scenario "iot-fleet-10K"`,
		"groups       3",
		`devices      10000 clients (publish+subscribe), MQTT 5.0, keepalive 1m; 100 publishing 1/s QoS 1 to "devices/$clientid/telemetry"; subscribes to "devices/$clientindex/commands"; persistent session (expiry 5m); storm: 1000 reconnect at +20s (persistent sessions)`,
		`backend      10 clients (subscribe)`,
		`commands     10 clients (publish)`,
		"clients      10020 (110 publishing, 10010 subscribing)",
		"messages     110/s out, 110/s in, 110 topics",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate lacks %q:\n%s", want, r.stdout)
		}
	}
}
