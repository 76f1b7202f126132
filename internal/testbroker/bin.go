package testbroker

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/mqblast/mqblast/internal/tier"
)

var bin struct {
	once sync.Once
	main bool // Main runs the tests, and removes what Binary builds
	dir  string
	path string
	err  error
}

// waitingParallel is how many parallel tests of a package whose tests wait on brokers,
// sinks and runs of their own (MainWaiting) run at once when -test.parallel is not given
// (go test's default is GOMAXPROCS): most of them wait rather than compute, so more of
// them than there are cores share the host without pushing one another's figures off. The
// tests whose assertions rest on the scheduler are in the timing tier, which runs each alone.
const waitingParallel = 4

// MainWaiting is Main for a package whose tests mostly wait (run, cmd/mqblast): it sets
// -test.parallel to waitingParallel (or GOMAXPROCS when larger) unless the command line
// gives it.
func MainWaiting(m *testing.M) int {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(waitingParallel, runtime.GOMAXPROCS(0))))
	}
	return Main(m)
}

// Main runs a test binary's tests for its TestMain, then removes the mqblast binary that
// Binary built (25 MB in a directory of its own under the temporary directory, which
// would otherwise outlive every test run), and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	bin.main = true
	code := m.Run()
	if bin.dir != "" {
		_ = os.RemoveAll(bin.dir)
	}
	return code
}

// Binary builds cmd/mqblast once per test process and returns its path: tests that drive
// the real executable (it starts itself again for the embedded broker, workers and study
// cells). pkg is the package's directory relative to the test's ("." from cmd/mqblast,
// "../cmd/mqblast" from study). Under the race detector it skips the test (tier.SkipRace),
// and make test runs it in its pass without the race detector: the binary is not a race
// build, so the race pass would prove nothing more of it. The package's TestMain must run
// its tests with Main, which removes the binary at the end; the test fails otherwise.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	if !bin.main {
		t.Fatal("testbroker.Binary needs the package's TestMain to run its tests with testbroker.Main, which removes the built binary")
	}
	tier.Integration(t)
	if tier.Race {
		tier.SkipRace(t, "drives the mqblast binary, which is not a race build")
	}
	bin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mqblast-bin-")
		if err != nil {
			bin.err = err
			return
		}
		bin.dir, bin.path = dir, filepath.Join(dir, "mqblast")
		if out, err := exec.Command("go", "build", "-o", bin.path, pkg).CombinedOutput(); err != nil {
			bin.err = fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}
