package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "fanout.json")
	if err := os.WriteFile(bad, []byte(`{"type": "Fan-Out",
		"publishers": {"client_count": 1, "topics": "news"},
		"subscribers": {"client_count": 10, "topics": "news", "qos": 1},
		"parameters": {"publish_rate": -5, "payload_size": 8}}`), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runMQ(t, "validate", "quick-fanout-1-100", bad, "singlenode-conn-tcp-1M-5K")
	if code != exitInvalid {
		t.Errorf("exit %d, want %d", code, exitInvalid)
	}
	wantErr := bad + ": parameters.publish_rate: -5 is not a rate (must be > 0)\n" +
		bad + ": parameters.payload_size: 8 is smaller than the 16-byte measurement header (must be ≥ 16)\n" +
		"mqblast: 1 of 3 scenarios invalid\n"
	if errOut != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, wantErr)
	}
	for _, want := range []string{
		`quick-fanout-1-100: valid Fan-Out scenario "quick-fanout-1-100"`,
		"  clients      101 (1 publishing, 100 subscribing)",
		"  connections  101, 165 file descriptors",
		"  messages     10/s out, 1000/s in, 1 topics",
		"  broker       none given: run starts the embedded broker",
		"singlenode-conn-tcp-1M-5K: valid Connections scenario",
		"  connections  1000000, 1000064 file descriptors",
		"  connect      3m20s at 5000/s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, bad) {
		t.Errorf("an invalid scenario has a size:\n%s", out)
	}
}

func TestValidateOverrides(t *testing.T) {
	out, errOut, code := runMQ(t, "validate", "quick-p2p-100", "--set", "parameters.publish_rate=2",
		"--broker", "10.0.0.1:1883,10.0.0.2:1883")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"  messages     200/s out, 200/s in", "  broker       10.0.0.1:1883, 10.0.0.2:1883"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	_, errOut, code = runMQ(t, "validate", "quick-p2p-100", "--set", "parameters.publish_rate=x", "--set", "nosuch=1", "--broker", "h:0")
	wantErr := `--set: parameters.publish_rate: "x" is not a number` + "\n" +
		"--set: nosuch: unknown field\n" +
		`--broker: "h:0" has port "0" (want 1..65535)` + "\n" +
		"mqblast: 1 of 1 scenarios invalid\n"
	if code != exitInvalid || errOut != wantErr {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errOut, wantErr)
	}
	if _, _, code := runMQ(t, "validate", "quick-p2p-100", "--set", "novalue"); code != exitUsage {
		t.Errorf("--set without =: exit %d", code)
	}
	if _, _, code := runMQ(t, "validate"); code != exitUsage {
		t.Errorf("no argument: exit %d", code)
	}
}

// TestSetStringBare: --set takes a string field's text as it is: a bare word, and text
// that looks like JSON (a payload {"temp": 21.5}), each its whole length.
func TestSetStringBare(t *testing.T) {
	_, errOut, code := runMQ(t, "validate", "quick-p2p-100", "--set", "parameters.payload=hello", "--set", "parameters.payload_size=29")
	if code != exitOK {
		t.Errorf("--set parameters.payload=hello: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runMQ(t, "validate", "quick-p2p-100", "--set", `parameters.payload={"temp": 21.5}`, "--set", "parameters.payload_size=30")
	if code != exitInvalid || !strings.Contains(errOut, "parameters.payload_size: 30 does not fit the payload literal (24 measurement bytes + 14 bytes = 38)") {
		t.Errorf(`--set parameters.payload={"temp": 21.5}: exit %d, want the literal's 14 bytes counted:`+"\n%s", code, errOut)
	}
}
