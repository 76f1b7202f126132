package sink_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/sink"
	"github.com/mqblast/mqblast/tuning"
	"golang.org/x/sys/unix"
)

// envChild makes the test binary a sink process, so that a benchmark measures the sink's CPU
// and memory apart from the clients'. Its value is the FlushDelay; envChildMaxHeld, when set,
// is the MaxHeld; envChildNoFile, when set, the process's descriptor limit (soft and hard);
// envChildWS, when set, makes it serve WebSocket (Config.WS).
const (
	envChild        = "MQBLAST_SINK_CHILD"
	envChildMaxHeld = "MQBLAST_SINK_CHILD_MAX_HELD"
	envChildNoFile  = "MQBLAST_SINK_CHILD_NOFILE"
	envChildWS      = "MQBLAST_SINK_CHILD_WS"
)

func TestMain(m *testing.M) {
	if d, ok := os.LookupEnv(envChild); ok {
		if err := child(d, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sink child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childStats is a sink process's answer to a line on its stdin.
type childStats struct {
	sink.Stats
	CPU time.Duration `json:"cpu_ns"`
	RSS int64         `json:"rss_bytes"`
}

func child(delay string, in io.Reader, out io.Writer) error {
	d, err := time.ParseDuration(delay)
	if err != nil {
		return err
	}
	maxHeld, _ := strconv.Atoi(os.Getenv(envChildMaxHeld))
	if v := os.Getenv(envChildNoFile); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return err
		}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return err
		}
	}
	_, ws := os.LookupEnv(envChildWS)
	srv, err := sink.Start(context.Background(), sink.Config{FlushDelay: d, MaxHeld: maxHeld, WS: ws})
	if err != nil {
		return err
	}
	defer srv.Close() //nolint:errcheck
	fmt.Fprintf(out, "ready %s\n", srv.Addr())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		b, _ := json.Marshal(childStats{srv.Stats(), tuning.SelfCPU(), tuning.SelfRSS()})
		fmt.Fprintf(out, "%s\n", b)
	}
	return sc.Err()
}

// sinkProc is a sink in a child process.
type sinkProc struct {
	addr string
	in   io.WriteCloser
	out  *bufio.Reader
}

func startChild(tb testing.TB, flushDelay time.Duration, env ...string) *sinkProc {
	tb.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(append(os.Environ(), envChild+"="+flushDelay.String()), env...)
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	outp, err := c.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = in.Close(); _ = c.Wait() })
	p := &sinkProc{in: in, out: bufio.NewReader(outp)}
	line, err := p.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		tb.Fatalf("sink child: %q %v", line, err)
	}
	p.addr = addr
	return p
}

func (p *sinkProc) stats(tb testing.TB) childStats {
	tb.Helper()
	if _, err := fmt.Fprintln(p.in, "stats"); err != nil {
		tb.Fatal(err)
	}
	line, err := p.out.ReadString('\n')
	var st childStats
	if err != nil || json.Unmarshal([]byte(line), &st) != nil {
		tb.Fatalf("sink child stats: %q %v", line, err)
	}
	return st
}
