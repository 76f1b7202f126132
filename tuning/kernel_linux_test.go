package tuning

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/internal/countfmt"
	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/tier"
	"golang.org/x/sys/unix"
)

// TestReadKernelThisHost reads this host's counters: the tables are there and OutSegs has
// counted something (this machine has sent TCP segments since it booted, or the test makes it).
func TestReadKernelThisHost(t *testing.T) {
	k, err := ReadKernel("/proc/self", "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", k)
	for _, name := range []string{"ListenOverflows", "TCPSynRetrans", "RetransSegs", "OutSegs", "tcp_mem_pages",
		"tcp_mem_pressure_pages", "tcp_mem_high_pages", "softnet_dropped"} {
		if _, ok := k[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	if k["tcp_mem_pressure_pages"] <= 0 || k["tcp_mem_high_pages"] < k["tcp_mem_pressure_pages"] {
		t.Errorf("tcp_mem thresholds %d, %d", k["tcp_mem_pressure_pages"], k["tcp_mem_high_pages"])
	}
	if !SameNetNS("/proc/self", "/proc/self") || SameNetNS("/proc/self", "/proc/no-such-pid") {
		t.Error("SameNetNS of /proc/self with itself false, or with a missing pid true")
	}
}

var sinkBytes []byte

// TestReadProcessSelf sees this process's RSS grow by the 64 MiB it allocates and touches,
// its descriptors grow by the files it opens, and its CPU time grow while it spins.
func TestReadProcessSelf(t *testing.T) {
	tm := tier.Timing(t)
	before, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	b := make([]byte, size)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	var files []*os.File
	for range 10 {
		f, err := os.Open("/proc/self/stat")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		sinkBytes = b[:1]
	}
	after, err := ReadProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	for _, f := range files {
		f.Close()
	}
	t.Logf("before %+v, after %+v", before, after)
	if grew := after.RSSBytes - before.RSSBytes; grew < size*9/10 {
		t.Errorf("RSS grew by %d bytes after touching %d", grew, size)
	}
	if after.HWMBytes < after.RSSBytes {
		t.Errorf("HWM %d below RSS %d", after.HWMBytes, after.RSSBytes)
	}
	if after.FDs-before.FDs != 10 {
		t.Errorf("FDs %d -> %d after opening 10 files", before.FDs, after.FDs)
	}
	if spun := after.CPU - before.CPU; spun < 50*time.Millisecond {
		tm.Errorf("CPU grew by %v after spinning 100 ms", spun)
	}
	if _, err := ReadProcess(1 << 30); err == nil {
		t.Error("ReadProcess of a pid that does not exist: no error")
	}
}

// TestCountFDs: the size of /proc/self/fd (Linux 6.2 and later) and a listing of it, the
// fallback, count the same descriptors.
func TestCountFDs(t *testing.T) {
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed, err := countEntries(f)
	if err != nil {
		t.Fatal(err)
	}
	n, err := countFDs("/proc/self/fd") // opens it once more
	if err != nil || n != listed+1 {
		t.Errorf("countFDs = %d, %v; a listing holds %d entries (and countFDs's own makes one more)", n, err, listed)
	}
}

// TestClockTick: the auxiliary vector's AT_CLKTCK is 100 on Linux as built today.
func TestClockTick(t *testing.T) {
	if got := clockTick(); got != 10*time.Millisecond {
		t.Errorf("clock tick %v, want 10ms (USER_HZ 100)", got)
	}
}

// TestReadCgroupSelf reads this process's own cgroup, as /proc/self/cgroup names it: the
// CPU controller's (v1 cpuacct, or the v2 unified path), and finds CPU time spent.
func TestReadCgroupSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no /proc/self/cgroup: %v", err)
	}
	var v1, v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[1] == "" {
			v2 = f[2]
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpuacct" {
				v1 = f[2]
			}
		}
	}
	path := v1
	if path == "" {
		path = v2
	}
	s, err := ReadCgroup("/sys/fs/cgroup", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cgroup %s: %+v", path, s)
	if s.CPU <= 0 {
		t.Errorf("CPU %v in this process's cgroup %s", s.CPU, path)
	}
}

// helperEnv tells TestHelperProcess what to do when the test binary is re-executed inside a
// network namespace.
const helperEnv = "MQBLAST_TUNING_HELPER"

// TestHelperProcess is not a test: re-executed with helperEnv set, it prints "ready", waits
// for a line on stdin, makes a kernel condition happen in its network namespace, prints
// "done …", and exits when stdin closes (so that the test can read /proc/PID/net until then;
// what it started goes on until then too).
//
//	overflow: a listener on 127.0.0.1 with backlog 1 that never accepts, and 20
//	          non-blocking connects to it; then 2.5 s, for SYN retransmits.
//	syndrop ADDR: a connect to ADDR with a 3 s timeout.
//	recv ADDR PAUSE: listens on ADDR ("done listening HOST:PORT") and reads every
//	          connection it accepts, 64 KiB at a time with PAUSE between reads.
//	send ADDR CONNS FOR SIZE PAUSE: CONNS connections to ADDR, each writing SIZE bytes
//	          and pausing PAUSE, again and again, for FOR ("done sent N bytes").
//	spin:     a busy loop ("done spinning").
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for the network namespace tests")
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if _, err := in.ReadString('\n'); err != nil {
		os.Exit(2)
	}
	var result string
	switch f := strings.Fields(mode); f[0] {
	case "overflow":
		result = helperOverflow()
	case "syndrop":
		start := time.Now()
		c, err := net.DialTimeout("tcp", f[1], 3*time.Second)
		var ne net.Error
		switch {
		case err == nil:
			c.Close()
			result = "connected"
		case errors.As(err, &ne) && ne.Timeout():
			result = fmt.Sprintf("timeout after %v", time.Since(start).Round(time.Millisecond))
		default:
			result = "error " + err.Error()
		}
	case "recv":
		result = helperRecv(f[1], duration(f[2]))
	case "send":
		conns, _ := strconv.Atoi(f[2])
		size, _ := strconv.Atoi(f[4])
		result = helperSend(f[1], conns, duration(f[3]), size, duration(f[5]))
	case "spin":
		go func() {
			for {
				spinSink++
			}
		}()
		result = "spinning"
	}
	fmt.Println("done", result)
	_, _ = io.Copy(io.Discard, in)
	os.Exit(0)
}

var spinSink int

func duration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func helperRecv(addr string, pause time.Duration) string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "error " + err.Error()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				b := make([]byte, 64<<10)
				for {
					if _, err := c.Read(b); err != nil {
						return
					}
					time.Sleep(pause)
				}
			}()
		}
	}()
	return "listening " + ln.Addr().String()
}

func helperSend(addr string, conns int, d time.Duration, size int, pause time.Duration) string {
	end := time.Now().Add(d)
	sent := make(chan int64, conns)
	for range conns {
		go func() {
			var n int64
			defer func() { sent <- n }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			b := make([]byte, size)
			_ = c.SetWriteDeadline(end)
			for time.Now().Before(end) {
				m, err := c.Write(b)
				n += int64(m)
				if err != nil {
					return
				}
				time.Sleep(pause)
			}
		}()
	}
	var total int64
	for range conns {
		total += <-sent
	}
	return fmt.Sprintf("sent %d bytes", total)
}

func helperOverflow() string {
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return "error socket: " + err.Error()
	}
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return "error bind: " + err.Error()
	}
	if err := unix.Listen(ln, 1); err != nil {
		return "error listen: " + err.Error()
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return "error getsockname: " + err.Error()
	}
	to := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: sa.(*unix.SockaddrInet4).Port}
	inProgress := 0
	for range 20 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			return "error socket: " + err.Error()
		}
		if err := unix.Connect(fd, to); errors.Is(err, unix.EINPROGRESS) {
			inProgress++
		} else if err != nil {
			return "error connect: " + err.Error()
		}
	}
	// A dropped SYN is retransmitted after 1 s and again 2 s later.
	time.Sleep(2500 * time.Millisecond)
	return fmt.Sprintf("%d connects in progress, port %d", inProgress, to.Port)
}

// helper is TestHelperProcess running in a network namespace; root is its /proc directory,
// through which the namespace's counters are read.
type helper struct {
	mode  string
	root  string
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper starts TestHelperProcess in mode inside ns ("": this namespace), under the
// commands of wrap (taskset, chrt: each execs the next, so the helper keeps the pid Start
// saw), and waits for its "ready". It ends when the test does.
func startHelper(t *testing.T, ns string, wrap []string, mode string) *helper {
	t.Helper()
	argv := append(append([]string{}, wrap...), os.Args[0], "-test.run=^TestHelperProcess$")
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %s: %v", mode, err)
		}
	})
	h := &helper{mode: mode, root: "/proc/" + strconv.Itoa(cmd.Process.Pid), stdin: stdin, out: bufio.NewReader(stdout)}
	if line, err := h.out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper %s: %q, %v", mode, line, err)
	}
	if ns != "" && SameNetNS("/proc/self", h.root) {
		t.Fatalf("helper %s is in the test's own network namespace", mode)
	}
	return h
}

// act tells the helper to go and returns its "done …" line, without the newline.
func (h *helper) act(t *testing.T) string {
	t.Helper()
	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	done, err := h.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper %s: %v", h.mode, err)
	}
	return strings.TrimSpace(done)
}

// counted runs the helper's act between two readings of its namespace's counters and
// returns their delta and the helper's "done" line.
func (h *helper) counted(t *testing.T) (KernelCounters, string) {
	t.Helper()
	before, err := ReadKernel(h.root, "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	done := h.act(t)
	after, err := ReadKernel(h.root, "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	delta := after.Delta(before)
	t.Logf("helper %s: %s; delta %v", h.mode, done, delta)
	return delta, done
}

// inNetns runs TestHelperProcess in mode inside ns, reads the kernel counters of its
// namespace (through /proc/PID) before and after the helper acts, and returns the delta and
// the helper's "done" line.
func inNetns(t *testing.T, ns, mode string) (KernelCounters, string) {
	t.Helper()
	return startHelper(t, ns, nil, mode).counted(t)
}

func findingOf(fs []KernelFinding, counter string) (KernelFinding, bool) {
	for _, f := range fs {
		if f.Counter == counter {
			return f, true
		}
	}
	return KernelFinding{}, false
}

// TestNetnsListenOverflow fills a backlog-1 accept queue that nobody accepts from, in a
// namespace of its own: ListenOverflows and TCPSynRetrans rise there (and only there), and
// the findings name the accept queue and its fix.
func TestNetnsListenOverflow(t *testing.T) {
	ns := netnstest.New(t, "tuning-ovf")
	hostBefore, err := ReadKernel("/proc/self", "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	delta, done := inNetns(t, ns, "overflow")
	if !strings.HasPrefix(done, "done 20 connects in progress") {
		t.Fatalf("helper: %s", done)
	}
	// 20 SYNs, 2 of which fit in a backlog-1 queue, then their retransmissions.
	if delta["ListenOverflows"] < 15 {
		t.Errorf("ListenOverflows rose by %d, want at least 15", delta["ListenOverflows"])
	}
	if delta["TCPSynRetrans"] < 15 {
		t.Errorf("TCPSynRetrans rose by %d, want at least 15", delta["TCPSynRetrans"])
	}
	fs := KernelFindings(delta, "broker host", CPUWait{})
	for _, f := range fs {
		t.Log(f)
	}
	f, ok := findingOf(fs, "ListenOverflows")
	if !ok || fs[0].Counter != "ListenOverflows" || f.Meaning != "its accept queue was full" || !strings.Contains(f.Fix, "net.core.somaxconn") {
		t.Errorf("findings %v: want ListenOverflows first, with the accept queue and somaxconn", fs)
	}
	// The SYN retransmits are the listen queue's, not a loss; nothing else is a finding.
	want := fmt.Sprintf("TCPSynRetrans +%d on the broker host: SYNs were retransmitted because the listen queue was full (ListenOverflows +%d): "+
		"each such connection waited a second or more — raise net.core.somaxconn and the broker's backlog, or lower connection_rate",
		delta["TCPSynRetrans"], delta["ListenOverflows"])
	if f, ok := findingOf(fs, "TCPSynRetrans"); !ok || f.String() != want {
		t.Errorf("TCPSynRetrans finding:\n got %s\nwant %s", f, want)
	}
	if d := cmp.Diff([]string{"ListenOverflows", "ListenDrops", "TCPSynRetrans"}, counters(ofNamespace(fs))); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
	hostAfter, err := ReadKernel("/proc/self", "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	if d := hostAfter.Delta(hostBefore)["ListenOverflows"]; d >= delta["ListenOverflows"] {
		t.Errorf("the host's own ListenOverflows rose by %d: the namespace's counters were not read apart", d)
	}
}

// TestNetnsSynDropped sends SYNs into a veth whose far end drops them (no address there, and
// a static neighbour entry with a MAC nobody has): the connect times out after 3 s and
// TCPSynRetrans rises in the sending namespace, and the finding says so.
func TestNetnsSynDropped(t *testing.T) {
	a := netnstest.New(t, "tuning-syna")
	b := netnstest.New(t, "tuning-synb")
	netnstest.Sh(t, "ip", "-n", a, "link", "add", "mqbk0", "type", "veth", "peer", "name", "mqbk1", "netns", b)
	netnstest.Sh(t, "ip", "-n", a, "addr", "add", "10.200.0.1/24", "dev", "mqbk0")
	netnstest.Sh(t, "ip", "-n", a, "link", "set", "mqbk0", "up")
	netnstest.Sh(t, "ip", "-n", b, "link", "set", "mqbk1", "up")
	netnstest.Sh(t, "ip", "-n", a, "neigh", "add", "10.200.0.2", "lladdr", "02:00:00:00:00:99", "dev", "mqbk0")

	delta, done := inNetns(t, a, "syndrop 10.200.0.2:1883")
	if !strings.HasPrefix(done, "done timeout after 3") {
		t.Fatalf("connect to 10.200.0.2: %s, want a timeout after 3 s", done)
	}
	// SYN at 0 s, retransmitted at 1 s and 3 s.
	if delta["TCPSynRetrans"] < 1 {
		t.Errorf("TCPSynRetrans rose by %d, want at least 1", delta["TCPSynRetrans"])
	}
	fs := KernelFindings(delta, "client host", CPUWait{})
	for _, f := range fs {
		t.Log(f)
	}
	// The SYN's timeouts (TCPTimeouts rises with them) are not a loss of data: one finding.
	want := fmt.Sprintf("TCPSynRetrans +%d on the client host: SYNs were retransmitted: connection attempts went unanswered for a second or more, "+
		"most often because the broker's listen queue was full — raise net.core.somaxconn and the broker's backlog, or lower connection_rate; "+
		"if the broker host's ListenOverflows did not rise, look for packet loss on the way", delta["TCPSynRetrans"])
	if own := ofNamespace(fs); len(own) != 1 || own[0].String() != want {
		t.Errorf("findings %v, want only\n%s", fs, want)
	}
}

// ofNamespace keeps the findings on the namespace's own counters: softnet_stat and
// tcp_mem are the host's, which other work moves while a test runs.
func ofNamespace(fs []KernelFinding) []KernelFinding {
	var out []KernelFinding
	for _, f := range fs {
		if !strings.HasPrefix(f.Counter, "softnet_") && !IsGauge(f.Counter) && f.Counter != counterSteal {
			out = append(out, f)
		}
	}
	return out
}

// counters returns the counters the findings name, in order.
func counters(fs []KernelFinding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Counter)
	}
	return out
}

// allowedCPUs returns the CPUs this process may run on, or skips the test when there are
// fewer than two, or no taskset(1) and chrt(1) to pin and demote a helper with.
func allowedCPUs(t *testing.T) []string {
	t.Helper()
	for _, tool := range []string{"taskset", "chrt"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (util-linux): %v", tool, err)
		}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []string
	for i := range 1024 {
		if set.IsSet(i) {
			cpus = append(cpus, strconv.Itoa(i))
		}
	}
	if len(cpus) < 2 {
		t.Skipf("CPUs %v: the test needs one for a starved receiver and one for its sender", cpus)
	}
	return cpus
}

// TestNetnsLateACKs starves a receiver of CPU on loopback, in a namespace of its own: it
// reads (64 KiB, then a 10 ms pause) under SCHED_IDLE, pinned to a CPU a busy loop also
// runs on, while a sender pinned to another CPU writes 32 KiB every 20 ms on 20
// connections. The receiver's ACKs come late, the sender's tail-loss probes fire and draw
// DSACKs (the data had arrived): the finding says late ACKs and a receiver short of CPU,
// quotes the receiver's own wait for a CPU as the client's, and neither loss nor the
// generic retransmission advice appears.
func TestNetnsLateACKs(t *testing.T) {
	tm := tier.Timing(t)
	cpus := allowedCPUs(t)
	slow, other := cpus[len(cpus)-1], cpus[0]
	ns := netnstest.New(t, "tuning-late")
	recv := startHelper(t, ns, []string{"taskset", "-c", slow, "chrt", "--idle", "0"}, "recv 127.0.0.1:0 10ms")
	addr, ok := strings.CutPrefix(recv.act(t), "done listening ")
	if !ok {
		t.Fatalf("receiver: %s", addr)
	}
	if done := startHelper(t, "", []string{"taskset", "-c", slow}, "spin").act(t); done != "done spinning" {
		t.Fatalf("busy loop: %s", done)
	}
	send := startHelper(t, ns, []string{"taskset", "-c", other}, "send "+addr+" 20 3s 32768 20ms")
	wait0, ok0 := runDelay(recv.root)
	start := time.Now()
	delta, done := send.counted(t)
	span := time.Since(start)
	wait1, ok1 := runDelay(recv.root)
	if !strings.HasPrefix(done, "done sent ") || done == "done sent 0 bytes" {
		t.Fatalf("sender: %s", done)
	}
	if !ok0 || !ok1 {
		t.Skip("no schedstat in /proc (a kernel without CONFIG_SCHED_INFO)")
	}
	wait := CPUWait{Wait: wait1 - wait0, Span: span}
	t.Logf("the receiver waited %v for a CPU in %v", wait.Wait, wait.Span)
	// The counters first: probes fired and DSACKs answered them.
	if delta["TCPLossProbes"] == 0 || delta["TCPDSACKRecv"] == 0 || 2*delta["TCPDSACKRecv"] < delta["TCPLossProbes"] {
		tm.Fatalf("TCPLossProbes +%d, TCPDSACKRecv +%d: the starved receiver's ACKs did not come late enough to draw probes answered by DSACKs",
			delta["TCPLossProbes"], delta["TCPDSACKRecv"])
	}
	fs := KernelFindings(delta, "client and broker host", wait)
	for _, f := range fs {
		t.Log(f)
	}
	f, ok := findingOf(fs, "TCPLossProbes")
	wantMeaning := fmt.Sprintf("tail-loss probes were answered by %s DSACKs (TCPDSACKRecv): the data had arrived and the ACKs came late, "+
		"because a receiver was waiting for a CPU; nothing was lost (%s segments retransmitted, ",
		countfmt.Thousands(delta["TCPDSACKRecv"]), countfmt.Thousands(delta["RetransSegs"]))
	if !ok || !strings.HasPrefix(f.Meaning, wantMeaning) || f.Fix != fixLateACK {
		tm.Errorf("findings %v: want a TCPLossProbes finding saying %q…, fixed by %q", fs, wantMeaning, fixLateACK)
	}
	if !strings.HasSuffix(f.Meaning, ": it was short of CPU itself") {
		tm.Errorf("late-ACK finding %q: want the receiver's wait (%v in %v) said to be a shortage of CPU", f.Meaning, wait.Wait, span)
	}
	for _, c := range []string{"RetransSegs", "TCPTimeouts", "TCPFastRetrans"} {
		if f, ok := findingOf(fs, c); ok {
			t.Errorf("finding %s beside the late ACKs: nothing was lost on loopback", f)
		}
	}
}

// TestNetnsLoss streams between two namespaces of its own over a veth whose receiving end
// drops 5% of the data segments at random (an nftables numgen rule): the sender's fast
// retransmits and timeouts draw no DSACK, and the finding says segments were lost — not
// late ACKs, not the generic advice.
func TestNetnsLoss(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no nft (nftables): %v", err)
		}
		t.Skipf("no nft (nftables): %v", err)
	}
	a := netnstest.New(t, "tuning-lossa")
	b := netnstest.New(t, "tuning-lossb")
	netnstest.Sh(t, "ip", "-n", a, "link", "add", "mqls0", "type", "veth", "peer", "name", "mqls1", "netns", b)
	netnstest.Sh(t, "ip", "-n", a, "addr", "add", "10.201.0.1/24", "dev", "mqls0")
	netnstest.Sh(t, "ip", "-n", b, "addr", "add", "10.201.0.2/24", "dev", "mqls1")
	netnstest.Sh(t, "ip", "-n", a, "link", "set", "mqls0", "up")
	netnstest.Sh(t, "ip", "-n", b, "link", "set", "mqls1", "up")
	nft := func(args ...string) string {
		return netnstest.Sh(t, "ip", append([]string{"netns", "exec", b, "nft"}, args...)...)
	}
	nft("add", "table", "inet", "mqblast")
	nft("add", "chain", "inet", "mqblast", "input", "{ type filter hook input priority 0; }")
	nft("add", "rule", "inet", "mqblast", "input", "tcp", "dport", "7000", "tcp", "flags", "&", "syn", "==", "0",
		"numgen", "random", "mod", "100", "<", "5", "counter", "drop")

	if done := startHelper(t, b, nil, "recv 10.201.0.2:7000 0s").act(t); done != "done listening 10.201.0.2:7000" {
		t.Fatalf("receiver: %s", done)
	}
	delta, done := startHelper(t, a, nil, "send 10.201.0.2:7000 8 2s 32768 0s").counted(t)
	t.Logf("%s", nft("list", "chain", "inet", "mqblast", "input"))
	if !strings.HasPrefix(done, "done sent ") || done == "done sent 0 bytes" {
		t.Fatalf("sender: %s", done)
	}
	// The counters first: retransmissions by timeouts or fast retransmits, few DSACKs.
	if delta["RetransSegs"] == 0 || delta["TCPFastRetrans"]+delta["TCPTimeouts"] == 0 || 2*delta["TCPDSACKRecv"] >= delta["RetransSegs"] {
		t.Fatalf("RetransSegs +%d, TCPFastRetrans +%d, TCPTimeouts +%d, TCPDSACKRecv +%d: want retransmissions most of which drew no DSACK",
			delta["RetransSegs"], delta["TCPFastRetrans"], delta["TCPTimeouts"], delta["TCPDSACKRecv"])
	}
	fs := KernelFindings(delta, "client host", CPUWait{})
	for _, f := range fs {
		t.Log(f)
	}
	lost := delta["RetransSegs"] - delta["TCPDSACKRecv"]
	wantMeaning := fmt.Sprintf("segments were lost: %s retransmission timeouts and %s fast retransmits, and %s retransmitted segments (",
		countfmt.Thousands(delta["TCPTimeouts"]-delta["TCPSpuriousRTOs"]), countfmt.Thousands(delta["TCPFastRetrans"]), countfmt.Thousands(lost))
	own := ofNamespace(fs)
	if len(own) != 1 || !strings.HasPrefix(own[0].Meaning, wantMeaning) || !strings.HasSuffix(own[0].Meaning, ") drew no DSACK: the data had not arrived") ||
		own[0].Fix != fixLoss || (own[0].Counter != "TCPTimeouts" && own[0].Counter != "TCPFastRetrans") {
		t.Errorf("findings %v: want only a loss finding saying %q…", fs, wantMeaning)
	}
}
