package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/sink"
	"github.com/mqblast/mqblast/tuning"
)

// envSinkChild makes the test binary a sink process for the message benchmarks, so that the
// CPU the benchmark process measures is the client's alone.
const envSinkChild = "MQBLAST_BENCH_SINK_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envSinkChild) == "1" {
		if err := sinkChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "bench sink child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childStats is the child's answer to "stats": the sink's counters and the process's CPU.
type childStats struct {
	sink.Stats
	CPU time.Duration `json:"cpu_total_ns"`
}

// sinkChild runs a sink and answers commands on in, one per line: "feed TOPIC N" publishes N
// measured QoS 0 messages to TOPIC through the sink once it has a subscription; "stats" writes
// a childStats line. It returns when in closes.
func sinkChild(in io.Reader, out io.Writer) error {
	srv, err := sink.Start(context.Background(), sink.Config{MaxOutput: 1 << 30})
	if err != nil {
		return err
	}
	defer srv.Close() //nolint:errcheck
	fmt.Fprintf(out, "ready %s\n", srv.Addr())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "feed":
			n, _ := strconv.Atoi(f[2])
			go func() {
				if err := feed(srv, f[1], n); err != nil {
					fmt.Fprintln(os.Stderr, "feed:", err)
				}
			}()
		case len(f) == 1 && f[0] == "stats":
			b, _ := json.Marshal(childStats{srv.Stats(), tuning.SelfCPU()})
			fmt.Fprintf(out, "%s\n", b)
		}
	}
	return sc.Err()
}

// feed publishes n QoS 0 messages with measured 16-byte payloads (due now, publisher 0, sequence
// 0, 1, ...) on topic, as fast as the sink reads them, once the sink has a subscription.
func feed(srv *sink.Server, topic string, n int) error {
	for srv.Stats().Subscriptions == 0 {
		time.Sleep(time.Millisecond)
	}
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		return err
	}
	// The connection stays open until the process exits: closing it with the CONNACK unread,
	// or while the sink still reads, would reset it and lose what the sink had not read yet.
	if _, err := nc.Write(codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("feeder"), CleanStart: true}, codec.V311)); err != nil {
		return err
	}
	var connack [4]byte
	if _, err := io.ReadFull(nc, connack[:]); err != nil {
		return err
	}
	var pl [16]byte
	p := codec.Publish{Topic: []byte(topic), Payload: pl[:]}
	buf := make([]byte, 0, 64<<10)
	for seq := 0; seq < n; {
		buf = buf[:0]
		now := time.Now().UnixNano()
		for ; seq < n && len(buf) < 60<<10; seq++ {
			reactor.PutHeader(pl[:], now, 0, 0, uint32(seq))
			buf = codec.AppendPublish(buf, &p, codec.V311)
		}
		if _, err := nc.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// benchSink is a sink in a child process of the benchmark.
type benchSink struct {
	addr string
	in   io.WriteCloser
	out  *bufio.Reader
}

func startBenchSink(b *testing.B) *benchSink {
	b.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), envSinkChild+"=1")
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outp, err := c.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	s := &benchSink{in: in, out: bufio.NewReader(outp)}
	b.Cleanup(func() {
		_ = in.Close()
		_ = c.Wait()
	})
	line, err := s.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		b.Fatalf("the sink child did not start: %q %v", line, err)
	}
	s.addr = addr
	return s
}

func (s *benchSink) send(b *testing.B, cmd string) {
	if _, err := fmt.Fprintln(s.in, cmd); err != nil {
		b.Fatal(err)
	}
}

func (s *benchSink) stats(b *testing.B) childStats {
	s.send(b, "stats")
	line, err := s.out.ReadString('\n')
	var st childStats
	if err != nil || json.Unmarshal([]byte(line), &st) != nil {
		b.Fatalf("stats from the sink child: %q %v", line, err)
	}
	return st
}
