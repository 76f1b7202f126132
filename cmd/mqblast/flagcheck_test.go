package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestRunFlagsChecked: bad flags are refused before any socket opens (exit 2), with a
// message naming the flag, its value and the fix.
func TestRunFlagsChecked(t *testing.T) {
	broker := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	dir := t.TempDir()
	run := []string{"run", "quick-conn-100", "--broker", broker, "--no-check", "--procs", "1"}
	conn := []string{"conn", "-H", "127.0.0.1", "-p", strings.TrimPrefix(broker, "127.0.0.1:"), "-c", "5", "--no-check", "--procs", "1"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"duration-zero", append(run, "--duration", "0s"), []string{"--duration 0s: must be more than 0"}},
		{"duration-negative", append(run, "--duration", "-5s"), []string{"--duration -5s: must be more than 0"}},
		{"loops", append(run, "--loops", "-1"), []string{"--loops -1: must be 0"}},
		{"max-packet-size-word", append(run, "--max-packet-size", "big"), []string{`invalid argument "big" for "--max-packet-size"`, "e.g. 1MiB"}},
		{"max-packet-size-small", append(run, "--max-packet-size", "10"), []string{`invalid argument "10" for "--max-packet-size"`, "from 64 to 256MiB"}},
		{"out-no-dir", append(run, "--out", filepath.Join(dir, "nope", "r.json")), []string{"--out " + filepath.Join(dir, "nope", "r.json") + ": cannot write there", "writable directory"}},
		{"out-is-dir", append(run, "--out", dir), []string{"--out " + dir + ": is a directory"}},
		{"bind-foreign", append(run, "--bind", "203.0.113.1"), []string{"--bind 203.0.113.1: 203.0.113.1 is not an address of this host", "cannot assign requested address", "127.0.0.0/8"}},
		{"bind-range-foreign", append(run, "--bind", "127.0.0.2,203.0.113.1-203.0.113.9"), []string{"--bind 203.0.113.1-203.0.113.9: 203.0.113.1 is not an address of this host"}},
		{"bind-cidr-foreign", append(run, "--bind", "198.51.100.0/30"), []string{"--bind 198.51.100.0/30: 198.51.100.0 is not an address"}},
		{"bind-nonsense", append(run, "--bind", "nonsense"), []string{"--bind nonsense: not an address, range, CIDR or interface on this host (interfaces: lo"}},
		{"ifaddr-foreign", append(conn, "--ifaddr", "203.0.113.7"), []string{"--ifaddr 203.0.113.7: 203.0.113.7 is not an address of this host"}},
		{"ifaddr-nonsense", append(conn, "--ifaddr", "eth-nope"), []string{"--ifaddr eth-nope: not an address, range, CIDR or interface"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runMQ(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\n%s", code, exitUsage, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "connecting") {
				t.Errorf("it dialed:\n%s", errOut)
			}
		})
	}
	// Loopback addresses and ranges are always this host's: the run goes on (and fails to
	// connect, nothing listening).
	for _, b := range []string{"127.0.0.2", "127.0.0.2-127.0.0.9", "127.0.1.0/24", "lo"} {
		if _, errOut, code := runMQ(t, append(run, "--bind", b, "--duration", "1s")...); code == exitUsage {
			t.Errorf("--bind %s: refused as usage:\n%s", b, errOut)
		}
	}
}

// TestRunOutLostStillSummarizes: when the --out directory disappears during the run, the
// summary still prints and the run fails naming the file.
func TestRunOutLostStillSummarizes(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	dir := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	c := exec.Command(mqblastBin(t), "run", "quick-conn-100", "--broker", m.Addr, "--duration", "1500ms",
		"--set", "parameters.connection_rate=2000", "--out", out)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	if err == nil || !strings.Contains(stderr.String(), "cannot write "+out) {
		t.Errorf("exit %v, stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "100 of 100 established") {
		t.Errorf("no summary:\n%s", stdout.String())
	}
}

// TestPacketSizeFlag: run's --max-packet-size takes the sizes the sink's does, and plain
// bytes as before (the workers get it that way).
func TestPacketSizeFlag(t *testing.T) {
	var n int
	v := packetSize{&n}
	for in, want := range map[string]int{"1MiB": 1 << 20, "64KiB": 64 << 10, "65536": 65536, "0": 0, "256MiB": 256 << 20} {
		if err := v.Set(in); err != nil || n != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, n, err, want)
		}
	}
	for _, in := range []string{"63", "-1", "1TiB", "300MiB", "one"} {
		if err := v.Set(in); err == nil {
			t.Errorf("Set(%q) took it (%d)", in, n)
		}
	}
}
