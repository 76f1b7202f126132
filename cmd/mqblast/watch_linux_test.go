package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestRunBesideCrowd: a 5-connection run against Mosquitto beside a sink holding 8,000
// connections (and a client holding their other ends) finds Mosquitto as the broker process
// by itself, and its client's peak RSS is that of the same run told --broker-pid: the
// search for the broker's process does not weigh in the client's figures.
func TestRunBesideCrowd(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	testbroker.StartCrowd(t, mqblastBin(t), 8000)
	host, port, _ := strings.Cut(m.Addr, ":")
	pid := m.Cmd.Process.Pid
	args := []string{"conn", "-H", host, "-p", port, "-c", "5", "-R", "100", "--hold", "500ms", "--procs", "1",
		"--no-check", "--format", "json"}
	auto := runBin(t, args...)
	given := runBin(t, append(args, "--broker-pid", strconv.Itoa(pid))...)
	if auto.code != 0 || given.code != 0 {
		t.Fatalf("exit %d and %d\n%s\n%s", auto.code, given.code, auto.stderr, given.stderr)
	}
	ra, rg := decodeResult(t, auto), decodeResult(t, given)
	t.Logf("client max RSS %.1f MiB found, %.1f MiB with --broker-pid; runs took %v and %v",
		float64(ra.Client.MaxRSSBytes)/(1<<20), float64(rg.Client.MaxRSSBytes)/(1<<20), auto.took, given.took)
	if ra.BrokerProcess == nil || ra.BrokerProcess.PID != pid ||
		!strings.Contains(auto.stderr, fmt.Sprintf("broker process: pid %d (mosquitto)", pid)) {
		t.Errorf("broker_process %+v, want Mosquitto's pid %d found by itself; stderr:\n%s", ra.BrokerProcess, pid, auto.stderr)
	}
	if ra.Client.MaxRSSBytes > rg.Client.MaxRSSBytes+4<<20 {
		t.Errorf("client max RSS %d bytes when the broker's process was searched for, %d with --broker-pid: want within 4 MiB",
			ra.Client.MaxRSSBytes, rg.Client.MaxRSSBytes)
	}
}
