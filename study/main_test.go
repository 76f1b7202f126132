package study

import (
	"os"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestMain removes the mqblast binary that testbroker.Binary built for the tests.
func TestMain(m *testing.M) { os.Exit(testbroker.Main(m)) }

// testCommand is the argv of a cell's run with the mqblast binary exe, as the command
// line gives it to a study (Options.Command).
func testCommand(exe string) func(path string) []string {
	return func(path string) []string { return []string{exe, "run", "--spec", path} }
}
