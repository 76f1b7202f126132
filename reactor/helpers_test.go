package reactor

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testLoop returns a loop of an engine that is never started (one loop, NopObserver),
// closed at the end of the test.
func testLoop(t testing.TB) *loop {
	t.Helper()
	e, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Loops: 1, Observer: NopObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	e.epoch = time.Now()
	l, err := newLoop(e, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.Close(l.ep)
		_ = unix.Close(l.evfd)
	})
	return l
}

// testSession returns a loop and a connected session whose socket is one end of a stream
// socket pair; the other end is returned for the test to write and read.
func testSession(t testing.TB, version byte) (*loop, *session, int) {
	t.Helper()
	l := testLoop(t)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
	})
	s := &session{fd: int32(fds[0]), version: version, state: stConnected, flags: sfVerdict}
	l.add(s)
	return l, s, fds[1]
}

// wsSession dials the WebSocket server srv (an httptest server at path /mqtt), upgrades,
// and returns a loop with a connected 3.1.1 WebSocket session on a duplicate of that socket
// (the loop may close its own), and the test's connection.
func wsSession(t testing.TB, srv *httptest.Server) (*loop, *session, net.Conn) {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL, "http://")
	tg, err := parseTarget("ws://" + addr + "/mqtt")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	rest, err := wsUpgrade(nc, &tg, nil)
	if err != nil || len(rest) != 0 {
		t.Fatalf("upgrade: %v, %d bytes after it", err, len(rest))
	}
	raw, _ := nc.(*net.TCPConn).SyscallConn()
	var fd int
	_ = raw.Control(func(f uintptr) { fd = int(f) })
	if fd, err = unix.Dup(fd); err != nil {
		t.Fatal(err)
	}
	l, s, _ := testSession(t, 4)
	_ = unix.Close(int(s.fd))
	s.fd = int32(fd)
	t.Cleanup(func() {
		if s.fd >= 0 {
			_ = unix.Close(int(s.fd))
		}
	})
	l.setTransport(s, &transport{ws: true})
	return l, s, nc
}
