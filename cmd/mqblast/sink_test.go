package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/sink"
)

// TestSinkRefusesRemote: a non-loopback --listen is a usage error naming --allow-remote, on
// one line; the flag's bounds are checked too.
func TestSinkRefusesRemote(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"sink", "--listen", "0.0.0.0:18830"},
		{"sink", "--listen", ":18830"},
		{"sink", "--listen", "192.0.2.1:1883", "--procs", "2"},
	} {
		_, stderr, code, _ := execCLI(args...)
		if code != exitUsage || !strings.Contains(stderr, "--allow-remote") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line naming --allow-remote", args, code, stderr, exitUsage)
		}
	}
	for _, args := range [][]string{
		{"sink", "--procs", "0"},
		{"sink", "--receive-maximum", "0"},
		{"sink", "--max-packet-size", "12"},
		{"sink", "--max-output", "lots"},
		{"sink", "--max-held", "512KiB"}, // under --max-packet-size
	} {
		if _, stderr, code, _ := execCLI(args...); code != exitUsage || !strings.Contains(stderr, args[1]) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", args, code, stderr, exitUsage, args[1])
		}
	}
}

// startSinkBin starts `mqblast sink args...` and returns its address (from the ready line on
// stderr), its JSON lines and the command.
func startSinkBin(t *testing.T, args ...string) (string, <-chan sink.Line, *exec.Cmd) {
	t.Helper()
	c := exec.Command(mqblastBin(t), append([]string{"sink"}, args...)...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	lines := make(chan sink.Line, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l sink.Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("not a JSON line: %q", sc.Text())
				continue
			}
			lines <- l
		}
	}()
	r := bufio.NewReader(stderr)
	line, err := r.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		t.Fatalf("no ready line: %q %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return addr, lines, c
}

// TestSinkProcs2 holds 40 connections in two processes on one port: both take some, and
// the parent's summed counters add up, at each interval and at exit.
func TestSinkProcs2(t *testing.T) {
	t.Parallel()
	addr, lines, c := startSinkBin(t, "--procs", "2", "--stats-json", "--interval", "100ms")
	const n = 40
	for i := range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close() //nolint:errcheck
		wire := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("c" + strconv.Itoa(i)), CleanStart: true}, codec.V311)
		wire = codec.AppendPublish(wire, &codec.Publish{Topic: []byte("nobody/listens"), Payload: []byte("x")}, codec.V311)
		if _, err := nc.Write(wire); err != nil {
			t.Fatal(err)
		}
		var ack [4]byte
		if _, err := io.ReadFull(nc, ack[:]); err != nil || ack[0] != 0x20 {
			t.Fatalf("CONNACK %x: %v", ack, err)
		}
	}
	deadline := time.After(10 * time.Second)
	for {
		var l sink.Line
		select {
		case l = <-lines:
		case <-deadline:
			t.Fatal("no line with every connection")
		}
		if l.Connections < n || l.PublishIn[0] < n {
			continue
		}
		if l.Procs != 2 || len(l.ProcConnections) != 2 || l.ProcConnections[0] == 0 || l.ProcConnections[1] == 0 ||
			l.ProcConnections[0]+l.ProcConnections[1] != n {
			t.Fatalf("procs %d, per process %v; want 2 processes holding %d between them", l.Procs, l.ProcConnections, n)
		}
		break
	}
	_ = c.Process.Signal(syscall.SIGINT)
	var final sink.Line
	for l := range lines {
		final = l
	}
	if !final.Final || final.Procs != 2 || final.ConnectionsTotal != n || final.Connected != n ||
		final.PublishIn[0] != n || final.NoSubscribers != n || final.BytesIn == 0 || final.CPUS <= 0 {
		t.Errorf("final line %+v", final)
	}
	if err := c.Wait(); err != nil {
		t.Errorf("exit: %v", err)
	}
}

// TestRunSink: `run --sink` of a quick fan-out accounts for every message, and the result and
// the summary say it is a calibration run against the sink.
func TestRunSink(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := runBin(t, "run", "quick-fanout-1-100", "--sink", "--duration", "3s", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "calibration") || !strings.Contains(r.stdout, "client host's own ceiling") {
		t.Errorf("summary does not say it is a calibration run:\n%s", r.stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	m := res.Messages
	if !res.Calibration || res.BrokerKind != "sink" {
		t.Errorf("calibration %v broker_kind %q", res.Calibration, res.BrokerKind)
	}
	if m.Published == 0 || m.Scheduled != m.Published || m.Expected != 100*m.Published || m.Received != m.Expected || m.Lost != 0 {
		t.Errorf("scheduled %d published %d expected %d received %d lost %d", m.Scheduled, m.Published, m.Expected, m.Received, m.Lost)
	}
	if r := runBin(t, "run", "quick-conn-100", "--sink", "--broker", "127.0.0.1:1"); r.code != exitUsage || !strings.Contains(r.stderr, "--sink and --broker") {
		t.Errorf("--sink with --broker: exit %d %s", r.code, r.stderr)
	}
}

// TestSinkProcsTakeTurns: with --connections, the processes take the port's new
// connections in turns, an equal share each in the order they started (90 over 3: 30
// each), rather than by the kernel's hash; past the shares the turn goes round, one
// connection each; and connections that come back after a storm go to the process with
// room.
func TestSinkProcsTakeTurns(t *testing.T) {
	t.Parallel()
	addr, lines, c := startSinkBin(t, "--procs", "3", "--connections", "90", "--stats-json", "--interval", "100ms")
	var conns []net.Conn
	dial := func() {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nc.Close() })
		conns = append(conns, nc)
		wire := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("t" + strconv.Itoa(len(conns))), CleanStart: true}, codec.V311)
		if _, err := nc.Write(wire); err != nil {
			t.Fatal(err)
		}
		var ack [4]byte
		if _, err := io.ReadFull(nc, ack[:]); err != nil || ack[0] != 0x20 {
			t.Fatalf("CONNACK %x: %v", ack, err)
		}
	}
	held := func(n int64) []int64 {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l := <-lines:
				if l.Connections == n {
					return l.ProcConnections
				}
			case <-deadline:
				t.Fatalf("no line with %d connections", n)
			}
		}
	}
	want := func(n int64, want []int64, why string) {
		t.Helper()
		if got := held(n); !slices.Equal(got, want) {
			t.Fatalf("%d connections held %v by process; want %v: %s", n, got, want, why)
		}
	}
	for range 75 {
		dial()
	}
	want(75, []int64{30, 30, 15}, "the first two full, in turns")
	for range 30 {
		dial()
	}
	want(105, []int64{35, 35, 35}, "the third full, then the 15 past the shares one each round")
	for _, nc := range conns[:20] { // the first process's: a storm
		_ = nc.Close()
	}
	want(85, []int64{15, 35, 35}, "20 of the first process's closed")
	for range 20 {
		dial()
	}
	want(105, []int64{31, 37, 37}, "15 back to the first process (its turn, with room), then one each round")
	_ = c.Process.Signal(syscall.SIGINT)
	for range lines {
	}
}
