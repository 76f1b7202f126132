package tuning

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
)

// TestFindListenerSelf finds this test's own loopback listener on IPv4 and IPv6, says when
// nothing listens, and searches nothing once its context has ended.
func TestFindListenerSelf(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if strings.HasPrefix(addr, "[") {
				t.Logf("no IPv6 loopback: %v", err)
				continue
			}
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pid, err := FindListener(context.Background(), port)
		if err != nil || pid != os.Getpid() {
			t.Errorf("FindListener(%d) for %s = %d, %v; want %d", port, addr, pid, err, os.Getpid())
		}
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		l, err := FindListeners(ctx, port)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || l.FDs != 0 || len(l.PIDs) != 0 {
			t.Errorf("FindListeners(%d) past its deadline = %+v, %v; want nothing read and a DeadlineExceeded", port, l, err)
		}
		ln.Close()
		// Another process may take the freed port for its own listener at once (the race
		// pass runs packages side by side): hold it, bound to every address and not
		// listening, so that nothing listens on it while FindListener looks.
		hold, err := holdPort(port)
		if err != nil {
			t.Logf("port %d taken by another process once closed (%v); not checked", port, err)
			continue
		}
		if l, err := net.Listen("tcp", addr[:strings.LastIndexByte(addr, ':')+1]+strconv.Itoa(port)); err == nil {
			l.Close()
			t.Fatalf("port %d held, yet a listener could take it", port)
		}
		if pid, err := FindListener(context.Background(), port); err == nil {
			t.Errorf("after closing, FindListener(%d) = %d", port, pid)
		}
		unix.Close(hold)
	}
}

// holdPort binds a socket to port on the wildcard address, IPv6's with IPv4 mapped where
// there is IPv6, without SO_REUSEADDR and without listening: no other socket of either
// family can then listen on that port, and the held one is bound but not a listener.
func holdPort(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		if err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0); err == nil {
			if err = unix.Bind(fd, &unix.SockaddrInet6{Port: port}); err == nil {
				return fd, nil
			}
		}
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return -1, err
		}
	}
	if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// TestFindListenersShared: a listening socket held by this process and a child (as a
// forking or SO_REUSEPORT broker holds its port from several processes) gives both pids.
func TestFindListenersShared(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	port := ln.Addr().(*net.TCPAddr).Port
	want := []int{os.Getpid(), child.Process.Pid}
	slices.Sort(want)
	l, err := FindListeners(context.Background(), port)
	if err != nil || !slices.Equal(l.PIDs, want) || l.Sockets != 1 {
		t.Errorf("FindListeners(%d) = %+v, %v; want pids %v, one socket", port, l, err, want)
	}
	if pid, err := FindListener(context.Background(), port); err != nil || pid != want[0] {
		t.Errorf("FindListener(%d) = %d, %v; want the lowest, %d", port, pid, err, want[0])
	}
}

// TestListenSocketsAgree: the kernel's socket diagnostics and /proc/net/tcp{,6} (the
// fallback) give the same listening sockets for a port listened on over IPv4 and IPv6, and
// neither gives one that is connected.
func TestListenSocketsAgree(t *testing.T) {
	ln4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln4.Close()
	port := ln4.Addr().(*net.TCPAddr).Port
	want := 1
	if ln6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", port)); err == nil {
		defer ln6.Close()
		want = 2
	} else {
		t.Logf("no IPv6 listener: %v", err)
	}
	c, err := net.Dial("tcp4", ln4.Addr().String()) // an established socket on the port
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	diag, err := diagListeners(port)
	if err != nil {
		t.Fatalf("inet_diag: %v", err)
	}
	proc := map[uint64]bool{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if err := procNetListeners(context.Background(), name, port, proc); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if len(diag) != want || !maps.Equal(diag, proc) {
		t.Errorf("listening sockets on %d: inet_diag %v, /proc/net %v; want %d, the same", port, diag, proc, want)
	}
}

// holderEnv makes TestHelperHolder hold that many pipe descriptors, then a listening socket.
const holderEnv = "MQBLAST_HELPER_HOLD"

// TestHelperHolder is not a test: re-executed with holderEnv set, it opens that many
// descriptors (pipes), then listens on a free loopback port, the last of its descriptors;
// it writes "ready PORT" and holds them until its stdin closes.
func TestHelperHolder(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(holderEnv))
	if err != nil {
		t.Skip("helper process for the listener search tests")
	}
	for i := 0; i < n; i += 2 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("ready", ln.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// startHolder starts TestHelperHolder with n descriptors; it returns its pid and port.
func startHolder(t *testing.T, n int) (pid, port int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$")
	cmd.Env = append(os.Environ(), holderEnv+"="+strconv.Itoa(n))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	p, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if port, err = strconv.Atoi(p); !ok || err != nil {
		t.Fatalf("the holder said %q", line)
	}
	return cmd.Process.Pid, port
}

// TestFindListenersStops: the only holder of a port keeps its listening socket behind
// 16,000 other descriptors, so that the search must read them all to find it; a search
// cancelled (Ctrl-C) while at it returns at once, with what it read so far.
func TestFindListenersStops(t *testing.T) {
	tm := tier.Timing(t)
	const held = 16000
	pid, port := startHolder(t, held)
	start := time.Now()
	l, err := FindListeners(context.Background(), port)
	full := time.Since(start)
	if err != nil || !slices.Equal(l.PIDs, []int{pid}) {
		t.Fatalf("FindListeners(%d) = %+v, %v; want the holder, %d", port, l, err, pid)
	}
	t.Logf("found the holder in %v: %+v", full, l)
	if l.FDs < held {
		t.Errorf("read %d descriptors; the listening socket is behind %d of the holder's", l.FDs, held)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(full/4, cancel)
	start = time.Now()
	l, err = FindListeners(ctx, port)
	late := time.Since(start) - full/4
	t.Logf("cancelled after %v: returned %v later with %+v, %v", full/4, late, l, err)
	if !errors.Is(err, context.Canceled) || l.FDs >= held {
		tm.Errorf("FindListeners(%d) cancelled after %v of %v = %+v, %v; want a Canceled error before the end", port, full/4, full, l, err)
	}
	if late > 50*time.Millisecond {
		tm.Errorf("FindListeners returned %v after its context was cancelled, want within 50ms", late)
	}
}

// TestFindListenersBesideCrowd: Mosquitto beside a sink holding 8,000 connections and the
// client holding their other ends. The search finds Mosquitto without reading either big
// descriptor table, allocating under 1 MiB (reading /proc/net/tcp and every table whole
// allocates 34 MB here), and finds the sink on its own port.
func TestFindListenersBesideCrowd(t *testing.T) {
	bin := testbroker.Binary(t, "../cmd/mqblast")
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	crowd := testbroker.StartCrowd(t, bin, 8000)
	port := func(addr string) int {
		_, p, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(p)
		return n
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	l, err := FindListeners(context.Background(), port(m.Addr))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("found %+v in %v, allocating %d bytes", l, took, alloc)
	if err != nil || !slices.Equal(l.PIDs, []int{m.Cmd.Process.Pid}) {
		t.Fatalf("FindListeners(%s) = %+v, %v; want Mosquitto, %d", m.Addr, l, err, m.Cmd.Process.Pid)
	}
	if l.FDs >= crowd.Conns {
		t.Errorf("read %d descriptors: a process of the crowd, %d connections each, was searched", l.FDs, crowd.Conns)
	}
	if alloc > 1<<20 {
		t.Errorf("the search allocated %d bytes, want under 1 MiB", alloc)
	}
	if l, err := FindListeners(context.Background(), port(crowd.SinkAddr)); err != nil || !slices.Equal(l.PIDs, []int{crowd.Sink.Process.Pid}) {
		t.Errorf("FindListeners(%s) = %+v, %v; want the sink, %d", crowd.SinkAddr, l, err, crowd.Sink.Process.Pid)
	}
}
