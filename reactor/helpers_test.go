package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testSession returns a loop and a connected session whose socket is one end of a stream
// socket pair; the other end is returned for the test to write and read.
func testSession(t testing.TB, version byte) (*loop, *session, int) {
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
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		_ = unix.Close(l.ep)
		_ = unix.Close(l.evfd)
	})
	s := &session{fd: int32(fds[0]), version: version, state: stConnected, flags: sfVerdict}
	l.add(s)
	return l, s, fds[1]
}
