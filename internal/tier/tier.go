// Package tier sorts the tests into three tiers, so that the fast ones run in parallel and
// the ones bound to the wall clock run once, alone:
//
//   - unit: pure tests, no process, broker or port of their own; they run under -short,
//     in parallel.
//   - integration: tests that start Mosquitto, the embedded broker, a sink, Chromium, a
//     network namespace or the mqblast binary. Integration skips them under -short.
//     testbroker's starters and Binary, netnstest.New and browsertest.Start call it, so a
//     test that uses them is in this tier without saying so.
//   - timing: tests (or the assertions of a test) on the scheduler — schedule-lag bounds,
//     CPU figures, latency bounds, a broker that must keep up on shared cores. Timing marks
//     them; they run in a pass of their own, serially, and under the race detector they
//     log what they would have failed on.
//
// $MQBLAST_TIMING chooses the pass: unset, every test runs (plain go test); "skip" skips
// the timing tests (the parallel pass); "only" runs the timing tests alone (the serial
// pass, with -run naming them: integration tests not marked Timing skip themselves, unit
// tests are left out by -run). -short skips both integration and timing tests.
//
// A test that the race detector's build cannot judge (it drives the mqblast binary, which
// is not a race build) calls SkipRace: make test's race pass skips it and writes it down
// ($MQBLAST_PLAIN_LIST), and its pass without the race detector runs what was written
// (scripts/plain-tests.sh), so that each test runs once, under the race detector where it
// can.
//
// Timing must be the first statement of a top-level test function: make test-timing
// finds the timing tests by it (scripts/timing-tests.sh).
package tier

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Env is the environment variable that selects the pass (see the package comment).
const Env = "MQBLAST_TIMING"

// PlainEnv names the file where SkipRace writes down the tests it skipped, a line each:
// the package's directory and the top-level test's name.
const PlainEnv = "MQBLAST_PLAIN_LIST"

// SkipRace skips t, which the race detector's build cannot judge (why says what it
// lacks), and writes its top-level test down for the pass without the race detector
// (PlainEnv). Call it only under the race detector (Race).
func SkipRace(t testing.TB, why string) {
	t.Helper()
	if list := os.Getenv(PlainEnv); list != "" {
		top, _, _ := strings.Cut(t.Name(), "/")
		dir, err := os.Getwd()
		if err == nil {
			err = appendLine(list, dir+" "+top+"\n")
		}
		if err != nil {
			t.Fatalf("writing %s down for the pass without the race detector: %v", top, err)
		}
	}
	t.Skipf("%s: the pass without the race detector runs it (make test)", why)
}

// appendLine appends line to the file at path in one write (O_APPEND: the lines of
// several test processes do not interleave).
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// marked holds the names of the top-level tests Timing marked.
var marked sync.Map

// Integration marks a test that starts a broker, a sink, a browser, a network namespace
// or the mqblast binary: -short skips it, and so does the timing pass unless the test is
// marked Timing.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tier: skipped under -short")
	}
	if os.Getenv(Env) == "only" && !isTiming(t.Name()) {
		t.Skip("integration tier: skipped in the timing pass")
	}
}

// Timing marks the test t as one whose assertions rest on the scheduler and returns t for
// those assertions: its Errorf and Fatalf fail the test, except under the race detector,
// where the client runs several times slower than it measures, and they only log. The
// test's other assertions go through t as usual. -short skips the test, and so does the
// parallel pass ($MQBLAST_TIMING=skip).
func Timing(t *testing.T) *T {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("BUG: tier.Timing(%s): call it first in a top-level test, where make test-timing finds it", t.Name())
	}
	if testing.Short() {
		t.Skip("timing tier: skipped under -short")
	}
	if os.Getenv(Env) == "skip" {
		t.Skip("timing tier: skipped in the parallel pass (make test-timing runs it)")
	}
	marked.Store(t.Name(), true)
	return &T{TB: t}
}

// Assert returns t's handle for assertions on the scheduler, as Timing does, for a subtest
// or a helper of a test marked Timing (which Timing itself refuses).
func Assert(t testing.TB) *T {
	return &T{TB: t}
}

// isTiming reports whether the test named name, or the top-level test it is a subtest
// of, is marked Timing.
func isTiming(name string) bool {
	top, _, _ := strings.Cut(name, "/")
	_, ok := marked.Load(top)
	return ok
}

// T is a test's handle for its assertions on the scheduler: under the race detector
// Errorf, Error, Fatalf and Fatal log, and the Fatal ones end the test as skipped.
type T struct {
	testing.TB
}

// Errorf fails the test as testing.T's does, or logs under the race detector.
func (t *T) Errorf(format string, args ...any) {
	t.Helper()
	if Race {
		t.Logf("timing (logged, not failed, under -race): "+format, args...)
		return
	}
	t.TB.Errorf(format, args...)
}

// Error fails the test as testing.T's does, or logs under the race detector.
func (t *T) Error(args ...any) {
	t.Helper()
	t.Errorf("%s", fmt.Sprint(args...))
}

// Fatalf ends the test as failed as testing.T's does, or under the race detector logs
// and ends it as skipped.
func (t *T) Fatalf(format string, args ...any) {
	t.Helper()
	if Race {
		t.Skipf("timing (logged, not failed, under -race): "+format, args...)
	}
	t.TB.Fatalf(format, args...)
}

// Fatal ends the test as failed as testing.T's does, or under the race detector logs and
// ends it as skipped.
func (t *T) Fatal(args ...any) {
	t.Helper()
	t.Fatalf("%s", fmt.Sprint(args...))
}
