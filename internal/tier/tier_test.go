package tier

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMarks: a test Timing marked, and its subtests, count as timing; others do not.
func TestMarks(t *testing.T) {
	t.Parallel()
	marked.Store("TestSomethingTimed", true)
	for name, want := range map[string]bool{"TestSomethingTimed": true, "TestSomethingTimed/sub/case": true,
		"TestSomethingElse": false, "TestSomethingTimedToo": false} {
		if got := isTiming(name); got != want {
			t.Errorf("isTiming(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestTimingPass: under -short and in the parallel pass Timing skips the test; otherwise
// it marks it and returns a handle on the same test.
func TestTimingPass(t *testing.T) {
	if testing.Short() || os.Getenv(Env) == "skip" {
		t.Skip("Timing skips here, which is what the test would check")
	}
	tm := Timing(t)
	if tm.TB != t || !isTiming(t.Name()) {
		t.Errorf("Timing(t) = %v, marked %v", tm.TB, isTiming(t.Name()))
	}
	tm.Logf("race build %v", Race)
}

// TestSkipRaceWritesDown: SkipRace skips a subtest and writes its top-level test down with
// its package's directory, a line a call, where PlainEnv says; and scripts/plain-tests.sh
// makes of the lines one -run over the packages, each package once.
func TestSkipRaceWritesDown(t *testing.T) {
	list := filepath.Join(t.TempDir(), "plain.list")
	t.Setenv(PlainEnv, list)
	for _, name := range []string{"a", "b/c"} {
		t.Run(name, func(t *testing.T) {
			SkipRace(t, "the race build lacks it")
			t.Error("SkipRace did not skip")
		})
	}
	b, err := os.ReadFile(list)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := os.Getwd()
	if want := strings.Repeat(dir+" TestSkipRaceWritesDown\n", 2); string(b) != want {
		t.Errorf("written down:\n%s\nwant:\n%s", b, want)
	}
	if err := os.WriteFile(list, append(b, "/elsewhere TestOther\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("../../scripts/plain-tests.sh", list, "echo").CombinedOutput()
	if err != nil {
		t.Fatalf("plain-tests.sh: %v\n%s", err, out)
	}
	if want := "-run ^(TestOther|TestSkipRaceWritesDown)$ ./internal/tier /elsewhere\n"; !strings.HasSuffix(string(out), want) {
		t.Errorf("plain-tests.sh ran:\n%s\nwant it to end in %q", out, want)
	}
}
