package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/result"
)

// listenEnv makes TestHelperListener listen on 127.0.0.1:PORT with a backlog of 1 and
// never accept.
const listenEnv = "MQBLAST_HELPER_LISTEN"

// TestHelperListener is not a test: re-executed with listenEnv set (inside a network
// namespace), it holds a listening socket whose accept queue fills at once.
func TestHelperListener(t *testing.T) {
	port, err := strconv.Atoi(os.Getenv(listenEnv))
	if err != nil {
		t.Skip("helper process for the kernel-counter tests")
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err == nil {
		err = syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	}
	if err == nil {
		err = syscall.Listen(fd, 1)
	}
	if err != nil {
		os.Exit(3)
	}
	time.Sleep(60 * time.Second)
	os.Exit(0)
}

// TestNetnsListenOverflowFinding: in a network namespace of its own, a "broker" whose
// accept queue holds one connection and which never accepts, and `mqblast conn` with 30
// clients against it. The kernel drops SYNs (ListenOverflows): the result says so with the
// fix, marks the host as having limited the run, and found the listening process itself
// (the broker is local); the SYNs it dropped were retransmitted, which the findings put
// down to the listen queue, not to a loss.
func TestNetnsListenOverflowFinding(t *testing.T) {
	t.Parallel()
	ns := newNetns(t) // loopback up
	const port = 18830
	l := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestHelperListener$")
	l.Env = append(os.Environ(), listenEnv+"="+strconv.Itoa(port))
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Process.Kill(); _ = l.Wait() })
	time.Sleep(500 * time.Millisecond)
	out, code := inNetns(t, ns, "conn", "-H", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "30", "-R", "1000",
		"--duration", "1s", "--no-check", "--format", "json")
	if code != exitFailed {
		t.Errorf("exit %d, want %d (no client got a CONNACK)", code, exitFailed)
	}
	var res result.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not a result: %v", err)
	}
	if res.Kernel == nil || res.Kernel.Client["ListenOverflows"] == 0 {
		t.Fatalf("kernel %+v: no ListenOverflows counted", res.Kernel)
	}
	t.Logf("kernel %v", res.Kernel.Client)
	found, syn := "", ""
	for _, f := range res.Kernel.Findings {
		t.Log(f)
		switch f.Counter {
		case "ListenOverflows":
			found = f.String()
		case "TCPSynRetrans":
			syn = f.String()
		case "RetransSegs", "TCPTimeouts", "TCPFastRetrans", "TCPLossProbes":
			t.Errorf("finding %s: the retransmissions were the SYNs of a full listen queue", f)
		}
	}
	// The clients' SYNs, dropped while the queue was full, were retransmitted after a second;
	// the first data of a connection whose handshake the queue had not completed may have
	// gone again too (ListenOverflows +200, TCPSynRetrans +165, RetransSegs +171 here once:
	// 6 data segments), which the same finding then names.
	k := res.Kernel.Client
	wantSyn := fmt.Sprintf("TCPSynRetrans +%d on the client and broker host: SYNs were retransmitted because the listen queue was full (ListenOverflows +%d): "+
		"each such connection waited a second or more", k["TCPSynRetrans"], k["ListenOverflows"])
	rest, ok := strings.CutPrefix(syn, wantSyn)
	if data := min(k["ListenOverflows"]-k["TCPSynRetrans"], k["RetransSegs"]-k["TCPSynRetrans"]); data > 0 {
		rest, ok = strings.CutPrefix(rest, fmt.Sprintf(", and %d data segments went again after a timeout: "+
			"the first data of connections whose handshake the full queue had not completed", data))
	}
	if k["TCPSynRetrans"] == 0 || !ok || !strings.HasPrefix(rest, " — raise net.core.somaxconn") {
		t.Errorf("counters %v, finding %q; want one starting %q", k, syn, wantSyn)
	}
	if !strings.Contains(found, "somaxconn") || !res.Host.Limited || len(res.Host.LimitedEvidence) == 0 {
		t.Errorf("finding %q, host.limited %v %v", found, res.Host.Limited, res.Host.LimitedEvidence)
	}
	if res.BrokerProcess == nil || res.BrokerProcess.PID == 0 {
		t.Errorf("broker_process %+v: the local listener was not found", res.BrokerProcess)
	}
}
