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
	path string
	err  error
}

// Binary builds cmd/mqblast once per test process and returns its path: tests that drive
// the real executable (it starts itself again for the embedded broker, workers and study
// cells). pkg is the package's directory relative to the test's ("." from cmd/mqblast,
// "../cmd/mqblast" from study). Under the race detector it skips the test: the binary is
// not a race build, so the test would prove nothing make test has not (and the race pass
// is the longer for it).
func Binary(t testing.TB, pkg string) string {
	t.Helper()
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
		bin.path = filepath.Join(dir, "mqblast")
		if out, err := exec.Command("go", "build", "-o", bin.path, pkg).CombinedOutput(); err != nil {
			bin.err = fmt.Errorf("go build %s: %w: %s", pkg, err, out)
		}
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}
