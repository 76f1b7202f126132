package main

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// waitingParallel is how many of this package's parallel tests run at once when
// -test.parallel is not given (go test's default is GOMAXPROCS): most of them wait on a
// broker, a sink or a run of their own rather than compute, so more of them than there
// are cores share the host without pushing one another's figures off. The tests whose
// assertions rest on the scheduler are in the timing tier, which runs each alone.
const waitingParallel = 4

// TestMain sets -test.parallel to waitingParallel (or GOMAXPROCS when larger) unless the
// command line gives it, and removes the binary testbroker.Binary built.
func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(waitingParallel, runtime.GOMAXPROCS(0))))
	}
	os.Exit(testbroker.Main(m))
}
