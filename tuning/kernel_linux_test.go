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
// "done …", and exits when stdin closes (so that the test can read /proc/PID/net until then).
//
//	overflow: a listener on 127.0.0.1 with backlog 1 that never accepts, and 20
//	          non-blocking connects to it; then 2.5 s, for SYN retransmits.
//	syndrop ADDR: a connect to ADDR with a 3 s timeout.
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
	}
	fmt.Println("done", result)
	_, _ = io.Copy(io.Discard, in)
	os.Exit(0)
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

// inNetns runs TestHelperProcess in mode inside ns, reads the kernel counters of its
// namespace (through /proc/PID) before and after the helper acts, and returns the delta and
// the helper's "done" line.
func inNetns(t *testing.T, ns, mode string) (KernelCounters, string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestHelperProcess$")
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
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %s: %v", mode, err)
		}
	}()
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper %s: %q, %v", mode, line, err)
	}
	// ip netns exec setns(2)es and execs, so the helper keeps the pid Start saw.
	root := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	if SameNetNS("/proc/self", root) {
		t.Fatalf("helper %s is in the test's own network namespace", mode)
	}
	before, err := ReadKernel(root, "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	done, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper %s: %v", mode, err)
	}
	after, err := ReadKernel(root, "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	delta := after.Delta(before)
	t.Logf("helper %s in %s: %s delta %v", mode, ns, done, delta)
	return delta, strings.TrimSpace(done)
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
	if _, ok := findingOf(fs, "TCPSynRetrans"); !ok {
		t.Errorf("no TCPSynRetrans finding in %v", fs)
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
	f, ok := findingOf(fs, "TCPSynRetrans")
	if !ok || !strings.Contains(f.String(), "TCPSynRetrans +") || !strings.Contains(f.Meaning, "SYNs were retransmitted") {
		t.Errorf("findings %v: want TCPSynRetrans saying SYNs were retransmitted", fs)
	}
	if _, ok := findingOf(fs, "ListenOverflows"); ok {
		t.Errorf("ListenOverflows in %v, where nothing listens", fs)
	}
}
