package main

import (
	"os"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestMain runs this package's tests, most of which wait on a broker, a sink or a run of
// their own, several at a time (testbroker.MainWaiting), and removes the binary
// testbroker.Binary built.
func TestMain(m *testing.M) { os.Exit(testbroker.MainWaiting(m)) }
