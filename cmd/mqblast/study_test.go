package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/study"
)

func TestStudyListAndShow(t *testing.T) {
	out, _, code := runMQ(t, "study", "--list")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, n := range study.BuiltinNames() {
		if !strings.Contains(out, "\n"+n+" ") {
			t.Errorf("--list lacks %s:\n%s", n, out)
		}
	}
	out, _, code = runMQ(t, "study", "show", "retain-throughput")
	data, _ := study.BuiltinJSON("retain-throughput")
	if code != exitOK || out != string(data) {
		t.Errorf("show: exit %d, %q", code, out)
	}
	_, errOut, code := runMQ(t, "study", "show", "retain-througput")
	if code != exitUsage || !strings.Contains(errOut, `did you mean "retain-throughput"`) {
		t.Errorf("show of a misspelt name: exit %d, %q", code, errOut)
	}
}

// TestStudyInvalid: a bad campaign exits 3 with every error and its JSON path, before
// anything runs; a missing --out is a usage error.
func TestStudyInvalid(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(f, []byte(`{"brokers":[{"name":"m","type":"mosquitto","prot":1}],
		"scenarios":[{"scenario":"quick-p2p-100","sweep":{"parameters.payload_size":["1KB","1QB"]}}],"profiles":["wrost"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runMQ(t, "study", f, "--out", t.TempDir())
	if code != exitInvalid {
		t.Fatalf("exit %d, want %d: %s", code, exitInvalid, errOut)
	}
	for _, w := range []string{f + ": brokers[0].prot: unknown field", f + ": scenarios[0].sweep.parameters.payload_size[1]: ", f + `: profiles[0]: "wrost"`} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
	if _, errOut, code := runMQ(t, "study", "retain-throughput"); code != exitUsage || !strings.Contains(errOut, "--out DIR is required") {
		t.Errorf("no --out: exit %d %q", code, errOut)
	}
}

// TestStudyDryRun lists the cells in run order with their commands, running nothing.
func TestStudyDryRun(t *testing.T) {
	out, _, code := runMQ(t, "study", "retain-throughput", "--dry-run", "--out", "D")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "retain-throughput: 24 cells" || len(lines) != 1+2*24 {
		t.Fatalf("dry run:\n%s", out)
	}
	if !strings.Contains(lines[1], "   1 c0001 mosquitto p2p-100x50 publishers.retain=false publishers.qos=0 local rep 1") ||
		!strings.Contains(lines[2], " run quick-p2p-100 --broker 127.0.0.1:") || !strings.Contains(lines[2], "--out D/cells/c0001.json") {
		t.Errorf("first cell:\n%s\n%s", lines[1], lines[2])
	}
	if !strings.Contains(lines[3], "   2 c0004 embedded ") {
		t.Errorf("the brokers do not alternate: %s", lines[3])
	}
}
