package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	t.Parallel()
	out, _, code := runMQ(t, "study", "retain-throughput", "--dry-run", "--out", "D")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "retain-throughput: 24 cells" || len(lines) != 1+3*24 {
		t.Fatalf("dry run:\n%s", out)
	}
	if !strings.Contains(lines[1], "   1 c0001 mosquitto p2p-100x50 publishers.retain=false publishers.qos=0 local rep 1") ||
		!strings.HasSuffix(lines[2], " run --spec D/cells/c0001.spec.json; kill %1") ||
		!strings.Contains(lines[3], `cells/c0001.spec.json: {"schema":"mqblast.spec/v1","scenario":{"name":"quick-p2p-100","set":[`) ||
		!strings.Contains(lines[3], `"brokers":["127.0.0.1:`) || !strings.Contains(lines[3], `"out":"D/cells/c0001.json"`) {
		t.Errorf("first cell:\n%s\n%s\n%s", lines[1], lines[2], lines[3])
	}
	if !strings.Contains(lines[4], "   2 c0004 embedded ") {
		t.Errorf("the brokers do not alternate: %s", lines[4])
	}
}

// TestStudyInterrupt: SIGINT during a cell stops the study with exit 130; study.json says
// interrupted, with the running cell's partial result kept.
func TestStudyInterrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "c.json")
	if err := os.WriteFile(f, []byte(`{"brokers":[{"name":"e","type":"embedded"}],
		"scenarios":[{"scenario":"quick-p2p-100","set":{"publishers.client_count":10,"subscribers.client_count":10}}],
		"repetitions":2,"duration_sec":20}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	c := exec.Command(mqblastBin(t), "study", f, "--out", out, "--no-check")
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for { // the first cell's run has started once its log exists
		if _, err := os.Stat(filepath.Join(out, "cells", "c0001.log")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first cell did not start:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	_ = c.Process.Signal(os.Interrupt)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d:\n%s", err, exitInterrupted, stderr.String())
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v to stop", d)
	}
	ix, err := study.ReadIndex(out)
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Interrupted || ix.Cells[0].Status != study.StatusInterrupted || ix.Cells[0].Result == "" || ix.Cells[1].Status != study.StatusPending {
		t.Errorf("index: interrupted %v, cells %+v %+v", ix.Interrupted, ix.Cells[0], ix.Cells[1])
	}
	for _, f := range []string{"study.html", "summary.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err) // written on an interrupt too
		}
	}
	if !strings.Contains(stderr.String(), "run the same command to resume") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
