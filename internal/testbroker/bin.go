package testbroker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// "../cmd/mqblast" from study). Under the race detector it skips the test: the binary is
// not a race build, so the test would prove nothing make test has not (and the race pass
// is the longer for it). The package's TestMain must run its tests with Main, which removes
// the binary at the end; the test fails otherwise.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	if !bin.main {
		t.Fatal("testbroker.Binary needs the package's TestMain to run its tests with testbroker.Main, which removes the built binary")
	}
	tier.Integration(t)
	if tier.Race {
		t.Skip("drives the mqblast binary, which is not a race build: make test runs it")
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
