package testbroker

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Crowd is a pair of processes holding many connections beside the broker under test:
// `mqblast sink` and `mqblast conn` with Conns connections to it, each holding Conns sockets.
type Crowd struct {
	SinkAddr   string
	Sink, Conn *exec.Cmd
	Conns      int
}

// StartCrowd starts bin's sink on a free loopback port and bin's conn holding conns
// connections to it (at most some 19,000: each process holds its end of every one), and
// returns once the sink holds them all. Both are killed when the test ends.
func StartCrowd(t testing.TB, bin string, conns int) *Crowd {
	t.Helper()
	c := &Crowd{Conns: conns, Sink: exec.Command(bin, "sink", "--listen", "127.0.0.1:0")}
	stderr, err := c.Sink.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Sink.Start(); err != nil {
		t.Fatalf("cannot start the sink: %v", err)
	}
	t.Cleanup(func() { _ = c.Sink.Process.Kill(); _ = c.Sink.Wait() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
			c.SinkAddr = a
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	host, port, err := net.SplitHostPort(c.SinkAddr)
	if err != nil {
		t.Fatalf("the sink did not say where it listens: %v", err)
	}
	c.Conn = exec.Command(bin, "conn", "-H", host, "-p", port, "-c", strconv.Itoa(conns), "-R", "5000",
		"--duration", "10m", "--procs", "1", "--no-check", "--broker-pid", strconv.Itoa(c.Sink.Process.Pid))
	if err := c.Conn.Start(); err != nil {
		t.Fatalf("cannot start mqblast conn: %v", err)
	}
	t.Cleanup(func() { _ = c.Conn.Process.Kill(); _ = c.Conn.Wait() })
	fdDir := "/proc/" + strconv.Itoa(c.Sink.Process.Pid) + "/fd"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		fds, err := os.ReadDir(fdDir)
		if err == nil && len(fds) >= conns {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink holds %d descriptors after a minute, want %d connections (%v)", len(fds), conns, err)
		}
	}
}
