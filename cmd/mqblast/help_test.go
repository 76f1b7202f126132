package main

import (
	"strings"
	"testing"
)

// TestHelpCurrent: run's help no longer promises messaging "with issue #5", and the
// scenarios commands point to the field reference.
func TestHelpCurrent(t *testing.T) {
	out, _, code := runMQ(t, "run", "--help")
	if code != exitOK || strings.Contains(out, "issue #5") || !strings.Contains(out, "--password-file") {
		t.Errorf("run --help (exit %d):\n%s", code, out)
	}
	for _, args := range [][]string{{"scenarios", "--help"}, {"scenarios", "show", "--help"}} {
		if out, _, _ := runMQ(t, args...); !strings.Contains(out, "docs/scenario.md") {
			t.Errorf("%v does not point to docs/scenario.md:\n%s", args, out)
		}
	}
}
