package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestValidateEveryProblem: decode problems (an unknown field, a wrong type) and rule
// problems are printed together, one per line with the file and path; a rule at a path that
// failed to decode is not reported on its default. Exit 3.
func TestValidateEveryProblem(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p2p.json")
	if err := os.WriteFile(f, []byte(`{"type": "Point-To-Point",
		"publishers": {"client_count": 10, "topics": "t/$clientindex", "qoss": 1},
		"subscribers": {"client_count": 5, "topics": "t/$clientindex"},
		"parameters": {"publish_rate": "fast", "payload_size": 8, "keep_alive_sec": -1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runMQ(t, "validate", f)
	want := f + `: publishers.qoss: unknown field (did you mean "qos"?)` + "\n" +
		f + `: parameters.publish_rate: "fast" is not a number` + "\n" +
		f + `: subscribers.client_count: 5 differs from publishers.client_count 10 (Point-To-Point pairs each publisher with one subscriber)` + "\n" +
		f + `: parameters.payload_size: 8 is smaller than the 16-byte measurement header (must be ≥ 16)` + "\n" +
		f + `: parameters.keep_alive_sec: -1 is not a keepalive (want whole seconds, 0 to 65535)` + "\n" +
		"mqblast: 1 of 1 scenarios invalid\n"
	if code != exitInvalid || errOut != want {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, errOut, want)
	}
}
