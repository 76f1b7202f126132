package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/scenario"
)

// runMQ runs mqblast with args in this process and returns stdout, stderr and the exit code.
func runMQ(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, _ = execCLI(args...)
	return stdout, stderr, code
}

func TestScenariosList(t *testing.T) {
	out, _, code := runMQ(t, "scenarios")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	names := scenario.BuiltinNames()
	if len(lines) != len(names)+1 {
		t.Fatalf("%d lines for %d built-ins:\n%s", len(lines), len(names), out)
	}
	col := strings.Index(lines[0], "TYPE")
	for i, name := range names {
		line := lines[i+1]
		if !strings.HasPrefix(line, name+" ") || strings.Index(line, strings.Fields(line)[1]) != col {
			t.Errorf("line %q is not aligned under the header", line)
		}
	}
	for _, want := range []string{
		"singlenode-fanout-5-1000-5-250K       Fan-Out              1005     5     1K    1K      250        250K        30m",
		"singlenode-conn-tcp-1M-5K             Connections          1M       1M    -     5K      -          -           30m",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("listing lacks %q:\n%s", want, out)
		}
	}
}

func TestScenariosShow(t *testing.T) {
	out, _, code := runMQ(t, "scenarios", "show", "quick-p2p-100")
	if code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(out, `"type": "Point-To-Point"`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if _, errOut, code := runMQ(t, "scenarios", "show", "nosuch"); code != exitUsage || !strings.Contains(errOut, `no built-in scenario "nosuch"`) {
		t.Errorf("unknown name: exit %d, %s", code, errOut)
	}
	if _, _, code := runMQ(t, "scenarios", "show"); code != exitUsage {
		t.Errorf("no name: exit %d", code)
	}
	if _, _, code := runMQ(t, "scenarios", "list"); code != exitUsage {
		t.Errorf("unknown subcommand: exit %d", code)
	}
}

func TestPlanNeeds(t *testing.T) {
	n, err := planNeeds(context.Background(), "singlenode-conn-tcp-1M-5K")
	if err != nil {
		t.Fatal(err)
	}
	if n.Connections != 1_000_000 || n.ConnectRate != 5000 || !n.LocalBroker || n.HeapBytes < 1_000_000*4096 || n.SocketMemBytes == 0 {
		t.Errorf("needs %+v", n)
	}
	if _, err := planNeeds(context.Background(), "nosuch"); codeOf(err) != exitInvalid {
		t.Errorf("unknown scenario: %v (exit %d)", err, codeOf(err))
	}
}
