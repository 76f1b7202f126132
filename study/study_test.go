package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/browsertest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// mqblastBin builds the binary once: each cell is its own mqblast run process.
func mqblastBin(t *testing.T) string { return testbroker.Binary(t, "../cmd/mqblast") }

// emulatorAvailable reports whether this test can put brokers behind tuning/netemu.
func emulatorAvailable() bool {
	_, err := exec.LookPath("ip")
	return os.Geteuid() == 0 && err == nil
}

// TestStudyEndToEnd runs 2 brokers (Mosquitto and the embedded broker, both started by the
// study on free ports) × 2 network profiles (local and optimal through the packet
// emulator; without root, 2 QoS values instead) × 2 payloads × 2 repetitions: it is
// interrupted in its third cell, resumed (the cells done are kept, not run again), loses
// its Mosquitto to a SIGKILL in one cell (recorded, and the study goes on), and is resumed
// once more with --retry-failed, which runs that cell alone. Its report renders in
// Chromium with every box drawn.
func TestStudyEndToEnd(t *testing.T) {
	testbroker.Need(t)
	exe := mqblastBin(t)
	profiles, sweep := `["local", "optimal"]`, `"parameters.payload_size": ["64", "1KB"]`
	emulated := emulatorAvailable()
	if !emulated {
		if os.Getenv("CI") == "true" {
			t.Fatal("the study test needs root and ip(8) for the packet emulator")
		}
		t.Log("no root or ip(8): local only, 2 QoS values instead of 2 profiles")
		profiles, sweep = `["local"]`, sweep+`, "publishers.qos": [0, 1]`
	}
	campaign := fmt.Sprintf(`{
  "name": "ci-study",
  "brokers": [{"name": "mosquitto", "type": "mosquitto"}, {"name": "embedded", "type": "embedded"}],
  "scenarios": [{"scenario": "quick-p2p-100", "label": "p2p-20",
    "set": {"publishers.client_count": 20, "subscribers.client_count": 20, "parameters.publish_rate": 20, "parameters.drain_sec": 0.3},
    "sweep": {%s}}],
  "profiles": %s, "repetitions": 2, "duration_sec": 1, "warmup_sec": 0.2
}`, sweep, profiles)
	c, err := Parse("ci.json", ".", []byte(campaign))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var progress strings.Builder
	opt := Options{Dir: dir, Exe: exe, Command: testCommand(exe), ToolVersion: "test", Progress: &progress, Report: WriteReport}

	// 1. Interrupted in its third cell: the two before are ok, the third interrupted.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.OnCellStart = func(rec *CellRecord, _ int) {
		if rec.Seq == 3 {
			time.AfterFunc(400*time.Millisecond, cancel)
		}
	}
	ix, err := Run(ctx, c, opt)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted study: %v, want ErrInterrupted\n%s", err, progress.String())
	}
	first := map[string]time.Time{}
	for _, r := range ix.Cells {
		switch {
		case r.Seq <= 2:
			if r.Status != StatusOK {
				t.Fatalf("cell %d: %s %s\n%s", r.Seq, r.Status, r.Error, progress.String())
			}
			first[r.ID] = r.StartedAt
		case r.Seq == 3:
			if r.Status != StatusInterrupted {
				t.Errorf("cell 3: %s, want interrupted", r.Status)
			}
		default:
			if r.Status != StatusPending {
				t.Errorf("cell %d: %s, want pending", r.Seq, r.Status)
			}
		}
	}
	if !ix.Interrupted {
		t.Error("index not marked interrupted")
	}

	// 2. Resumed: the done cells are skipped; Mosquitto is killed during cell 5.
	var started []int
	killed := false
	opt.OnCellStart = func(rec *CellRecord, pid int) {
		started = append(started, rec.Seq)
		if rec.Seq == 5 {
			if rec.Broker != "mosquitto" {
				t.Errorf("cell 5 runs %s, want mosquitto", rec.Broker)
			}
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(comm)) != "mosquitto" {
				t.Errorf("cell 5: the sampled broker pid %d is %q, not mosquitto", pid, comm)
			}
			time.AfterFunc(500*time.Millisecond, func() { killed = syscall.Kill(pid, syscall.SIGKILL) == nil })
		}
	}
	ix, err = Run(context.Background(), c, opt)
	if err != nil {
		t.Fatalf("resumed study: %v\n%s", err, progress.String())
	}
	if len(started) != len(ix.Cells)-2 || started[0] != 3 {
		t.Errorf("resume ran cells %v, want 3 to %d", started, len(ix.Cells))
	}
	if !killed {
		t.Fatal("mosquitto was not killed")
	}
	for _, r := range ix.Cells {
		if t0, ok := first[r.ID]; ok && !r.StartedAt.Equal(t0) {
			t.Errorf("cell %d ran again on resume", r.Seq)
		}
		if r.Seq == 5 {
			if r.Status != StatusFailed || !strings.Contains(r.Error, "the broker mosquitto went away during the cell") {
				t.Errorf("killed cell: %s %q", r.Status, r.Error)
			}
			continue
		}
		if r.Status != StatusOK {
			t.Errorf("cell %d (%s): %s %s", r.Seq, r.Label(), r.Status, r.Error)
		}
	}

	// 3. --retry-failed runs the failed cell alone.
	started = nil
	opt.RetryFailed = true
	opt.OnCellStart = func(rec *CellRecord, _ int) { started = append(started, rec.Seq) }
	ix, err = Run(context.Background(), c, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 1 || started[0] != 5 {
		t.Errorf("retry ran cells %v, want [5]", started)
	}
	if !ix.Finished {
		t.Error("study not finished")
	}
	t.Logf("progress:\n%s", progress.String())

	// The index on disk, each cell's result and command.
	disk, err := ReadIndex(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(disk.Cells) != 16 {
		t.Fatalf("%d cells in study.json, want 16", len(disk.Cells))
	}
	med := map[string][]int64{}         // broker|profile -> medians
	merged := map[string]*result.Hist{} // sweep value|profile|broker -> histograms added
	for _, r := range disk.Cells {
		if r.Status != StatusOK {
			t.Errorf("cell %d: %s %s", r.Seq, r.Status, r.Error)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Result))
		if err != nil {
			t.Fatal(err)
		}
		var res result.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Schema != "mqblast.result/v1" || res.Messages.Received == 0 || res.BrokerProcess == nil || res.BrokerProcess.CPUS <= 0 {
			t.Errorf("cell %d: result %s: schema %q, received %d, broker_process %+v", r.Seq, r.Result, res.Schema, res.Messages.Received, res.BrokerProcess)
		}
		sb, err := os.ReadFile(filepath.Join(dir, r.Spec))
		if err != nil {
			t.Fatal(err)
		}
		sp, err := spec.Read(sb)
		if err != nil || sp.Scenario.Name != "quick-p2p-100" || len(sp.Brokers) != 1 ||
			!slices.Contains(sp.Scenario.Set, r.Params[0].Path+"="+r.Params[0].Value) || !strings.Contains(r.Reproduce, " run --spec "+filepath.Join(dir, r.Spec)) {
			t.Errorf("cell %d: reproduce %q, spec %s (%v)", r.Seq, r.Reproduce, sb, err)
		}
		if emulated != (r.Network != nil) {
			t.Errorf("cell %d: network stats %+v with emulation %v", r.Seq, r.Network, emulated)
		}
		k := r.Broker + "|" + r.Profile
		med[k] = append(med[k], report.Box(res.Histograms.Latency).P50)
		gk := comboName(r.Params) + "|" + r.Profile + "|" + r.Broker
		if merged[gk] == nil {
			merged[gk] = result.NewHist()
		}
		merged[gk].Merge(res.Histograms.Latency)
	}
	// summary.md: a row per sweep value, profile and broker, its median that of the
	// repetitions' histograms added.
	sum, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, group := 0, ""
	for _, line := range strings.Split(string(sum), "\n") {
		if g, ok := strings.CutPrefix(line, "## "); ok {
			_, group, _ = strings.Cut(g, " · ") // scenario label · sweep value
		}
		f := strings.Split(line, " | ")
		if len(f) < 4 || (f[0] != "| local" && f[0] != "| optimal") {
			continue
		}
		rows++
		h := merged[group+"|"+strings.TrimPrefix(f[0], "| ")+"|"+f[1]]
		if want := report.FormatUS(report.Box(h).P50); h == nil || f[2] != "2/2" || f[3] != want {
			t.Errorf("summary.md row %q (under %q): want 2/2 runs, median %s", line, group, want)
		}
	}
	if rows != 8 {
		t.Errorf("summary.md has %d rows, want 8 (2 payloads × 2 profiles × 2 brokers):\n%s", rows, sum)
	}
	if emulated {
		// optimal is 1.25 ms each way: publisher → broker → subscriber crosses it twice.
		for _, b := range []string{"mosquitto", "embedded"} {
			lo, hi := minOf(med[b+"|local"]), minOf(med[b+"|optimal"])
			if hi-lo < 2000 {
				t.Errorf("%s: median latency %d µs under optimal vs %d µs local: the profile's 2.5 ms are not there", b, hi, lo)
			}
		}
	}
	if !strings.Contains(progress.String(), "cell 16 of 16") || !strings.Contains(progress.String(), "ETA") {
		t.Errorf("progress:\n%s", progress.String())
	}

	// The report: every box drawn by the browser, offline, without an error or a request.
	page := browsertest.Open(t, filepath.Join(dir, "study.html"), `document.body.hasAttribute("data-boxes-drawn")`)
	expected := browsertest.Eval[string](page, `document.body.dataset.boxesExpected`)
	drawn := browsertest.Eval[string](page, `document.body.dataset.boxesDrawn`)
	if expected != "8" || drawn != "8" {
		t.Errorf("boxes: %s expected, %s drawn; want 8 (2 payloads × 2 profiles × 2 brokers)", expected, drawn)
	}
	if n := browsertest.Eval[int](page, `[...document.querySelectorAll("svg rect.bar")].filter(r => r.getBBox().width > 0).length`); n != 8 {
		t.Errorf("%d throughput bars drawn, want 8", n)
	}
	if n := browsertest.Eval[int](page, `document.querySelectorAll("tr.ok[data-cell]").length`); n != 16 {
		t.Errorf("%d ok cells in the table, want 16", n)
	}
	if e := page.Errors(); len(e) > 0 {
		t.Errorf("console errors: %v", e)
	}
	if r := page.Requests(); len(r) > 0 {
		t.Errorf("the page requested %v: it must be self-contained", r)
	}
	page.Screenshot("study.png")
}

func minOf(v []int64) int64 {
	m := int64(1 << 62)
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

// TestStudyBrokerKinds: a broker defined by its start command (mqblast sink), one whose
// command fails (recorded, the study goes on), one that runs and never listens (the same
// after its start timeout), and an external broker (a Mosquitto the test
// runs; its pid found by its listening port), one cell each; with the emulator, also under
// the worst profile, where the external broker's cell fails with the reason (it cannot be
// put behind the emulator) rather than run without the profile.
func TestStudyBrokerKinds(t *testing.T) {
	exe := mqblastBin(t)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	profiles := `["local"]`
	if emulatorAvailable() {
		profiles = `["local", "worst"]`
	}
	campaign := fmt.Sprintf(`{
  "name": "kinds",
  "brokers": [
    {"name": "sink-cmd", "start": "{mqblast} sink --listen {addr} --allow-remote"},
    {"name": "broken", "start": "echo no broker here {port}; exit 3", "start_timeout_sec": 5},
    {"name": "silent", "start": "sleep 30; echo never on {port}", "start_timeout_sec": 1.5},
    {"name": "outside", "address": %q}
  ],
  "scenarios": [{"scenario": "quick-p2p-100", "set": {"publishers.client_count": 10, "subscribers.client_count": 10, "parameters.drain_sec": 0.3}}],
  "profiles": %s, "repetitions": 1, "duration_sec": 1, "warmup_sec": 0.2
}`, m.Addr, profiles)
	c, err := Parse("kinds.json", ".", []byte(campaign))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var progress strings.Builder
	ix, err := Run(context.Background(), c, Options{Dir: dir, Exe: exe, Command: testCommand(exe), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	want := map[string]string{"sink-cmd": StatusOK, "broken": StatusFailed, "silent": StatusFailed, "outside": StatusOK}
	for _, r := range ix.Cells {
		if r.Broker == "outside" && r.Profile == "worst" {
			if r.Status != StatusFailed || !strings.Contains(r.Error, "the external broker outside at "+m.Addr+" cannot be put there") || r.Result != "" {
				t.Errorf("external broker under worst: %s %q (result %q)", r.Status, r.Error, r.Result)
			}
			continue
		}
		if r.Status != want[r.Broker] {
			t.Errorf("%s %s: %s %s", r.Broker, r.Profile, r.Status, r.Error)
		}
		if r.Broker == "broken" && !strings.Contains(r.Error, `exited before it listened`) {
			t.Errorf("broken broker's error: %q", r.Error)
		}
		if r.Broker == "silent" && !strings.Contains(r.Error, `broker silent: nothing listens on`) {
			t.Errorf("a broker that never listens: %q", r.Error)
		}
		if r.Status != StatusOK {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, r.Result))
		if err != nil {
			t.Fatal(err)
		}
		var res result.Result
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Messages.Received == 0 || res.BrokerProcess == nil {
			t.Errorf("%s: received %d, broker_process %+v", r.Broker, res.Messages.Received, res.BrokerProcess)
		}
		if r.Broker == "outside" && (res.BrokerProcess == nil || res.BrokerProcess.PID != m.Cmd.Process.Pid) {
			t.Errorf("external broker sampled as %+v, want pid %d", res.BrokerProcess, m.Cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "brokers", "broken", "broker.log")); err != nil {
		t.Error(err)
	}
}

// TestStudyCellKilled: a cell whose mqblast run is killed by a signal (here the process
// kills itself with SIGKILL, as the OOM killer would) is recorded as failed with how it
// ended, "killed by signal KILL", not as "exited -1".
func TestStudyCellKilled(t *testing.T) {
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	exe := filepath.Join(t.TempDir(), "mqblast")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho 'starting the run' >&2\nkill -KILL $$\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Parse("killed.json", ".", []byte(fmt.Sprintf(`{
  "name": "killed", "brokers": [{"name": "outside", "address": %q}],
  "scenarios": [{"scenario": "quick-p2p-100"}], "profiles": ["local"], "repetitions": 1, "duration_sec": 1, "warmup_sec": 0.2
}`, m.Addr)))
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	ix, err := Run(context.Background(), c, Options{Dir: t.TempDir(), Exe: exe, Command: testCommand(exe), Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if len(ix.Cells) != 1 {
		t.Fatalf("%d cells", len(ix.Cells))
	}
	r := ix.Cells[0]
	if want := "mqblast run failed (killed by signal KILL): starting the run"; r.Status != StatusFailed || r.Error != want {
		t.Errorf("cell %s %q, want failed %q", r.Status, r.Error, want)
	}
}
