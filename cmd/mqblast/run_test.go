package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// mqblastBin builds the binary once: run starts itself again (embedded broker, workers), so
// these tests drive the real executable.
func mqblastBin(t *testing.T) string { return testbroker.Binary(t, ".") }

type cliRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func runBin(t *testing.T, args ...string) cliRun {
	t.Helper()
	return runBinEnvVars(t, nil, args...)
}

// runBinEnvVars runs mqblast with args, and env (NAME=value) added to this process's
// environment.
func runBinEnvVars(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	r, err := execBin(mqblastBin(t), env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// execBin runs the mqblast binary bin with args, and env (NAME=value) added to this
// process's environment; the error is one of starting it (a test's goroutine can call it).
func execBin(bin string, env []string, args ...string) (cliRun, error) {
	c := exec.Command(bin, args...)
	if env != nil {
		c.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	start := time.Now()
	err := c.Run()
	r := cliRun{stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code, err = ee.ExitCode(), nil
	}
	return r, err
}

// interruptedRun runs mqblast with args and --out FILE, sends it SIGINT after d, fails the
// test unless it exits 130, and returns the partial result it wrote and its stderr.
func interruptedRun(t *testing.T, d time.Duration, args ...string) ([]byte, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	c := exec.Command(mqblastBin(t), append(args, "--out", out)...)
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	_ = c.Process.Signal(syscall.SIGINT)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v, want %d\n%s", err, exitInterrupted, errOut.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no partial result: %v\n%s", err, errOut.String())
	}
	return b, errOut.String()
}

func decodeResult(t *testing.T, r cliRun) *result.Result {
	t.Helper()
	var res result.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not one result document: %v\nstdout: %.500s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return &res
}

// TestRunInterrupted: SIGINT during the hold disconnects, writes the partial result, exit 130.
func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	b, _ := interruptedRun(t, 1500*time.Millisecond, "conn", "-H", host, "-p", port, "-c", "200", "-R", "1000", "--hold", "60s")
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil || !res.Interrupted || res.Connections.Established != 200 {
		t.Fatalf("partial result: %v interrupted=%v established=%d", err, res.Interrupted, res.Connections.Established)
	}
}

// TestMergeShards runs two shards of one scenario as separate commands (as on two hosts)
// and merges their result files: counts add up and the histogram holds every value.
func TestMergeShards(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := t.TempDir()
	var files []string
	for i := 0; i < 2; i++ {
		f := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		r := runBin(t, "run", "quick-conn-100", "--broker", m.Addr, "--shard", fmt.Sprintf("%d/2", i), "--run-id", "merge-shards",
			"--duration", "500ms", "--set", "parameters.connection_rate=1000", "--out", f)
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s", i, r.code, r.stderr)
		}
		files = append(files, f)
	}
	out := filepath.Join(dir, "merged.json")
	r := runBin(t, append([]string{"merge", "-o", out, "--format", "json"}, files...)...)
	if r.code != 0 {
		t.Fatalf("merge: exit %d\n%s", r.code, r.stderr)
	}
	res := decodeResult(t, r)
	if res.Connections.Target != 100 || res.Connections.Established != 100 || res.Host.Procs != 2 ||
		res.Histograms.ConnectLatency.Count() != 100 || res.Connections.ConnectLatencyUS.Count != 100 {
		t.Fatalf("merged %+v procs %d", res.Connections, res.Host.Procs)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
	if r := runBin(t, "merge", filepath.Join(dir, "nope.json")); r.code != exitUsage || !strings.Contains(r.stderr, "cannot read result") {
		t.Errorf("missing file: exit %d %s", r.code, r.stderr)
	}
}

// TestPubNeedsTopic: pub without a topic is refused, exit 2, naming --topic (what a pub
// run measures is run's: TestPubSubRuns).
func TestPubNeedsTopic(t *testing.T) {
	t.Parallel()
	if r := runBin(t, "pub", "-c", "1"); r.code != exitUsage || !strings.Contains(r.stderr, "--topic") {
		t.Errorf("pub without a topic: exit %d %s", r.code, r.stderr)
	}
}

// TestConnIPv6: -H takes an IPv6 address bare or bracketed, and --ifaddr an IPv6 source
// (a run against one is run's: TestRunIPv6).
func TestConnIPv6(t *testing.T) {
	for _, args := range [][]string{{"-H", "::1"}, {"-H", "[::1]", "--ifaddr", "::1"}} {
		sp, _, err := specOf(t, append([]string{"conn", "-p", "1883"}, args...)...)
		if err != nil || len(sp.Brokers) != 1 || sp.Brokers[0] != "[::1]:1883" || len(args) > 2 && (len(sp.Bind) != 1 || sp.Bind[0] != "::1") {
			t.Errorf("%v: %v, spec %s", args, err, sp.JSON())
		}
	}
}

// TestRunFormatJSON: with --format json stdout is exactly one result document, and the
// progress is on stderr.
func TestRunFormatJSON(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	r := runBin(t, "conn", "-H", host, "-p", port, "-c", "30", "-R", "1000", "--hold", "1s", "--format", "json")
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var res result.Result
	if err := dec.Decode(&res); err != nil || res.Schema != result.Schema || res.Connections.Established != 30 {
		t.Fatalf("stdout is not a result document of the run: %v\n%.500s", err, r.stdout)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		t.Errorf("stdout holds more than one document: %v\n%.500s", err, r.stdout)
	}
	if !strings.Contains(r.stderr, "established 30/30") {
		t.Errorf("stderr has no progress:\n%s", r.stderr)
	}
}
