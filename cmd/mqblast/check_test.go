package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/tuning"
)

// runCLI runs mqblast with args in this process and returns its stdout, exit code and error.
func runCLI(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	out, _, code, err := execCLI(args...)
	return out, code, err
}

// execCLI runs mqblast with args in this process: stdout, stderr (ending with the error
// line main would print), exit code and error.
func execCLI(args ...string) (stdout, stderr string, code int, err error) {
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	if err != nil {
		errOut.WriteString("mqblast: " + errorText(cmd, err) + "\n")
	}
	return out.String(), errOut.String(), codeOf(err), err
}

// TestCheckThisMachine runs `mqblast check --connections 100000` against this host. On a host
// whose hard descriptor limit is below the need and that lacks CAP_SYS_RESOURCE (the machine
// this was written on: ulimit -Hn 20000, no CAP_SYS_RESOURCE even as root) the finding must
// say the hard limit, that it cannot be raised here, and --procs as the fix.
func TestCheckThisMachine(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	out, code, err := runCLI(t, "check", "--connections", "100000")
	t.Logf("exit %d, err %v\n%s", code, err, out)
	hardLow := rl.Max < 100000+tuning.FDHeadroom
	capable := strings.Contains(out, "this process may raise it: CAP_SYS_RESOURCE")
	if !hardLow || capable {
		t.Skipf("hard limit %d, CAP_SYS_RESOURCE %v: not the host this test is about", rl.Max, capable)
	}
	if code != exitNotReady {
		t.Errorf("exit code %d, want %d", code, exitNotReady)
	}
	for _, want := range []string{
		fmt.Sprintf("soft %d, hard %d (cannot be raised here: no CAP_SYS_RESOURCE)", rl.Cur, rl.Max),
		fmt.Sprintf("fail RLIMIT_NOFILE: the hard limit caps each process at %d descriptors, and only CAP_SYS_RESOURCE may raise it", rl.Max),
		"fix: mqblast run --procs ",
		"re-login: the hard limit is inherited",
		"NOT READY",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q", want)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	out, code, _ := runCLI(t, "check", "-c", "1000", "--format", "json")
	var doc struct {
		Schema   string `json:"schema"`
		Ready    bool   `json:"ready"`
		Findings []struct {
			Name, Verdict string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, out)
	}
	if doc.Schema != tuning.Schema || len(doc.Findings) < 10 {
		t.Errorf("document %s", out)
	}
	if want := map[bool]int{true: exitOK, false: exitNotReady}[doc.Ready]; code != want {
		t.Errorf("ready %v but exit %d", doc.Ready, code)
	}
}

func TestCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"check"},
		{"check", "--connections", "0"},
		{"check", "-c", "10", "--addrs", "0"},
		{"check", "-c", "10", "--format", "yaml"},
		{"check", "a.json", "-c", "10"},
		{"check", "a.json", "b.json"},
	} {
		if _, code, err := runCLI(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, code, err, exitUsage)
		}
	}
	// A scenario's plan sets the needs: a million connections cannot fit this process's
	// descriptors (no host has a hard limit above fs.nr_open's default of 1048576 minus
	// what the run needs on top), and an unknown name is an invalid scenario.
	out, code, err := runCLI(t, "check", "singlenode-conn-tcp-1M-5K")
	if code != exitNotReady || !strings.Contains(out, ">= 1000064 per process") {
		t.Errorf("check singlenode-conn-tcp-1M-5K: exit %d (%v), want %d and the plan's descriptors:\n%s", code, err, exitNotReady, out)
	}
	if _, code, err := runCLI(t, "check", "no-such-scenario"); code != exitInvalid {
		t.Errorf("check no-such-scenario: exit %d (%v), want %d", code, err, exitInvalid)
	}
}

func TestCheckHelp(t *testing.T) {
	out, code, _ := runCLI(t, "check", "--help")
	for _, want := range []string{"Examples:", "--connections", "--addrs int", "(default 1)", `(default "text")`} {
		if !strings.Contains(out, want) {
			t.Errorf("help does not hold %q:\n%s", want, out)
		}
	}
	if code != exitOK || strings.Contains(out, "--root") {
		t.Errorf("exit %d; hidden --root shown: %v", code, strings.Contains(out, "--root"))
	}
}
