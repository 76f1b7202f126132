package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelpCurrent: run's help lists the flags of today, the scenarios commands point to the
// field reference, and no help text cites a design-document section or an issue number (a
// user of the binary has neither).
func TestHelpCurrent(t *testing.T) {
	out, _, code := runMQ(t, "run", "--help")
	if code != exitOK || !strings.Contains(out, "--password-file") {
		t.Errorf("run --help (exit %d):\n%s", code, out)
	}
	for _, args := range [][]string{{"scenarios", "--help"}, {"scenarios", "show", "--help"}} {
		if out, _, _ := runMQ(t, args...); !strings.Contains(out, "docs/scenario.md") {
			t.Errorf("%v does not point to docs/scenario.md:\n%s", args, out)
		}
	}
	cite := regexp.MustCompile(`DESIGN\.md|STYLE\.md|§|(?i:issue) ?#?[0-9]+`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, text := range []string{c.Short, c.Long, c.Example, c.LocalFlags().FlagUsages()} {
			if m := cite.FindString(text); m != "" {
				t.Errorf("%s: help cites %q:\n%s", c.CommandPath(), m, text)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}
