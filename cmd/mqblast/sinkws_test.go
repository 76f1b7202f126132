package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/sink"
)

// TestWSSinkClient: mqblast's own client over ws:// and wss:// through the WebSocket sink,
// at QoS 0, 1 and 2: every message published is received, none lost, and the sink saw each
// one in and relayed it once, over one upgrade (and, over wss, one handshake) per client.
// Then `run --sink --sink-ws` (and with --sink-tls) starts such a sink and dials it.
func TestWSSinkClient(t *testing.T) {
	certs := testbroker.NewCerts(t)
	tc, err := sink.LoadTLS(certs.ServerCert, certs.ServerKey, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"ws", "wss"} {
		for q := range 3 {
			t.Run(fmt.Sprintf("%s/qos%d", scheme, q), func(t *testing.T) {
				cfg := sink.Config{WS: true}
				var extra []string
				wantHS := uint64(0)
				if scheme == "wss" {
					cfg.TLS, extra, wantHS = tc, []string{"--cacert", certs.CA}, 200
				}
				srv, err := sink.Start(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close() //nolint:errcheck
				res, st := sinkQoSRun(t, srv, scheme+"://"+srv.Addr(), q, extra...)
				if l := res.Transport.RecordLayer; scheme == "wss" && (l["loop"] != 200 || len(l) != 1) {
					t.Errorf("record layers %v, want 200 loop", l)
				}
				if st.WS.Upgrades != 200 || st.WS.Refused != 0 || st.WS.ProtocolErrors != 0 || st.Connected != 200 || st.TLS.Handshakes != wantHS {
					t.Errorf("sink: ws %+v, tls %+v, connected %d: want 200 upgrades, %d handshakes, 200 connected", st.WS, st.TLS, st.Connected, wantHS)
				}
			})
		}
	}
	for _, flags := range [][]string{{"--sink-ws"}, {"--sink-ws", "--sink-tls"}} {
		t.Run("run --sink "+strings.Join(flags, " "), func(t *testing.T) {
			args := append([]string{"run", "quick-p2p-100", "--sink"}, flags...)
			r := runBin(t, append(args, "--no-check", "--format", "json", "--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0")...)
			res := decodeResult(t, r)
			ms := res.Messages
			want := "ws://"
			if len(flags) == 2 {
				want = "wss://"
			}
			if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || len(res.Broker) != 1 || !strings.HasPrefix(res.Broker[0], want) || res.BrokerProcess == nil {
				t.Errorf("published %d, received %d, lost %d, brokers %v; stderr %s", ms.Published, ms.Received, ms.Lost, res.Broker, r.stderr)
			}
		})
	}
}

// TestWSSinkVerb: `mqblast sink --ws --ws-path /x --procs 2 --connections 4` passes the
// WebSocket flags to both processes: four upgrades on /x are answered 101 and connect, one
// on /mqtt is answered 404, and the parent's summary sums the upgrades. Bad WebSocket flags
// exit 2 before it listens, naming the flag and the fix.
func TestWSSinkVerb(t *testing.T) {
	t.Parallel()
	sp := startSinkProc(t, "sink", "--ws", "--ws-path", "/x", "--procs", "2", "--connections", "4", "--stats-json", "--interval", "100ms")
	addr := sp.addr
	// A 3.1.1 CONNECT of client "c" in one masked binary frame (key 0), and the CONNACK in
	// one unmasked frame.
	connect := append([]byte{0x82, 0x80 | 15, 0, 0, 0, 0}, 0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, 1, 'c')
	var conns []net.Conn
	for i := range 5 {
		path := "/x"
		if i == 4 {
			path = "/mqtt"
		}
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		req := "GET " + path + " HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
		if _, err := nc.Write(append([]byte(req), connect...)); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		var got []byte
		for { // the head and the CONNACK's frame, or the head of a refusal and the close
			var buf [1024]byte
			n, err := nc.Read(buf[:])
			got = append(got, buf[:n]...)
			if _, f, ok := strings.Cut(string(got), "\r\n\r\n"); err != nil || (ok && len(f) >= 6) {
				break
			}
		}
		head, frames, _ := strings.Cut(string(got), "\r\n\r\n")
		switch {
		case i < 4 && (!strings.HasPrefix(head, "HTTP/1.1 101 ") || frames != "\x82\x04\x20\x02\x00\x00"):
			t.Fatalf("client %d: %q, want 101 and a CONNACK in one frame", i, got)
		case i == 4 && !strings.HasPrefix(head, "HTTP/1.1 404 "):
			t.Fatalf("/mqtt: %q, want 404", got)
		}
	}
	last, summary := sp.stop()
	for _, nc := range conns {
		_ = nc.Close()
	}
	if last.Connections != 4 || last.WS.Upgrades != 4 || last.WS.Refused != 1 || last.Procs != 2 || last.Connected != 4 {
		t.Errorf("stats at the most connections: %d open, %d connected, ws %+v, %d processes", last.Connections, last.Connected, last.WS, last.Procs)
	}
	if !strings.Contains(summary, "websocket    4 upgrades, 1 refused") || !strings.Contains(summary, `over WebSocket (ws, path "/x")`) {
		t.Errorf("summary:\n%s", summary)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sink", "--ws-path", "/x"}, "--ws-path /x: the sink serves it only over WebSocket; add --ws"},
		{[]string{"sink", "--ws", "--ws-path", "x?y"}, `--ws-path "x?y": want an absolute path`},
		{[]string{"run", "quick-conn-100", "--sink-ws", "--no-check"}, "--sink-ws: the sink that --sink starts speaks MQTT over WebSocket with it; add --sink"},
	} {
		stderr, code := runRefused(t, nil, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "ready ") {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}

// sinkQoSRun runs quick-p2p-100 at QoS q for 2 s against srv at broker (with the flags
// extra) and checks the accounts on both sides: every message published received, none
// lost, the sink's in and relayed counts those of the client, each QoS 1/2 copy
// acknowledged. It returns the run's result and the sink's counters.
func sinkQoSRun(t *testing.T, srv *sink.Server, broker string, q int, extra ...string) (*result.Result, sink.Stats) {
	t.Helper()
	args := append([]string{"run", "quick-p2p-100", "--broker", broker, "--no-check", "--format", "json",
		"--set", fmt.Sprintf("publishers.qos=%d", q), "--set", fmt.Sprintf("subscribers.qos=%d", q),
		"--set", "parameters.duration_sec=2", "--set", "parameters.warmup_sec=0"}, extra...)
	res := decodeResult(t, runBin(t, args...))
	ms := res.Messages
	st := srv.Stats()
	t.Logf("published %d, received %d; sink: publish in %v, relayed %v, acked %d, tls %+v, ws %+v", ms.Published, ms.Received, st.PublishIn, st.Relayed, st.Acked, st.TLS, st.WS)
	if ms.Published < 1500 || ms.Received != ms.Published || ms.Lost != 0 || ms.Expected != ms.Published {
		t.Errorf("published %d, received %d, expected %d, lost %d", ms.Published, ms.Received, ms.Expected, ms.Lost)
	}
	if st.PublishIn[q] != uint64(ms.Published) || st.Relayed[q] != uint64(ms.Received) || st.Dropped.Total() != 0 {
		t.Errorf("sink: publish in %v, relayed %v, dropped %+v; the client published %d, received %d", st.PublishIn, st.Relayed, st.Dropped, ms.Published, ms.Received)
	}
	if q > 0 && (st.Acked != uint64(ms.Received) || st.Unacked != 0) {
		t.Errorf("sink: acked %d, unacked %d; want %d acked", st.Acked, st.Unacked, ms.Received)
	}
	return res, st
}

// sinkProc is `mqblast sink` running in a process of its own, listening on addr.
type sinkProc struct {
	addr   string
	cancel context.CancelFunc
	cmd    *exec.Cmd
	out    bytes.Buffer  // its stats lines
	rest   bytes.Buffer  // its stderr after the ready line
	done   chan struct{} // closed when stderr ends
}

// startSinkProc starts mqblast with args (a sink verb with --stats-json) and waits for its
// ready line.
func startSinkProc(t *testing.T, args ...string) *sinkProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	sp := &sinkProc{cancel: cancel, done: make(chan struct{})}
	c := exec.CommandContext(ctx, mqblastBin(t), args...)
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGINT) }
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout = &sp.out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	sp.cmd = c
	lines := bufio.NewScanner(stderr)
	for sp.addr == "" && lines.Scan() {
		sp.addr, _ = strings.CutPrefix(lines.Text(), "ready ")
	}
	if sp.addr == "" {
		t.Fatal("the sink did not say ready")
	}
	go func() {
		for lines.Scan() {
			sp.rest.WriteString(lines.Text() + "\n")
		}
		close(sp.done)
	}()
	return sp
}

// stop waits for a stats line with every connection counted, interrupts the sink and
// returns its stats line at the most connections and its stderr after the ready line (the
// summary).
func (sp *sinkProc) stop() (sink.Line, string) {
	time.Sleep(300 * time.Millisecond)
	sp.cancel()
	<-sp.done
	_ = sp.cmd.Wait()
	// The last line with the most connections, with the most failed TLS handshakes any line
	// counted: a refused handshake may be counted after the line with the most connections.
	var last sink.Line
	var failed uint64
	for _, l := range strings.Split(strings.TrimSpace(sp.out.String()), "\n") {
		var line sink.Line
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		if line.Connections >= last.Connections {
			last = line
		}
		failed = max(failed, line.TLS.HandshakeFailures)
	}
	last.TLS.HandshakeFailures = failed
	return last, sp.rest.String()
}
