// Package epoll holds the event-loop system calls that the engine's loops (reactor) and
// the per-message floor client (internal/floor) make alike: an epoll instance with the
// eventfd that wakes it, a wait with a nanosecond timeout, and the socket address of a
// broker. Nothing here allocates per call but Sockaddr.
package epoll

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// New creates a loop's epoll instance and the eventfd other goroutines wake it with, the
// eventfd already in the set (its event's Pad is -1).
func New() (ep, evfd int, err error) {
	ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return -1, -1, fmt.Errorf("cannot create an event loop (epoll_create1): %w", err)
	}
	evfd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		_ = unix.Close(ep)
		return -1, -1, fmt.Errorf("cannot create an event loop (eventfd): %w", err)
	}
	if err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd), Pad: -1}); err != nil {
		_ = unix.Close(ep)
		_ = unix.Close(evfd)
		return -1, -1, fmt.Errorf("cannot create an event loop (epoll_ctl): %w", err)
	}
	return ep, evfd, nil
}

// pwait2 is false once the kernel said it has no epoll_pwait2 (before 5.11).
var pwait2 atomic.Bool

func init() { pwait2.Store(true) }

// Wait waits for events on ep for at most timeout nanoseconds (negative: without limit).
// epoll_pwait2 takes the timeout in nanoseconds, so a loop wakes for a publisher's due
// time rather than up to a millisecond after it; kernels without it get epoll_wait's
// milliseconds, rounded up.
func Wait(ep int, events []unix.EpollEvent, timeout int64) (int, error) {
	if pwait2.Load() {
		var ts *unix.Timespec
		var t unix.Timespec
		if timeout >= 0 {
			t = unix.NsecToTimespec(timeout)
			ts = &t
		}
		n, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(ep), uintptr(unsafe.Pointer(&events[0])),
			uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
		if errno == 0 {
			return int(n), nil
		}
		if errno != unix.ENOSYS {
			return 0, errno
		}
		pwait2.Store(false)
	}
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + 999_999) / 1_000_000)
	}
	return unix.EpollWait(ep, events, ms)
}

// Sockaddr converts an address and port to the form connect(2) and bind(2) take. Every
// loop keeps its own: x/sys/unix encodes into the value on each call.
func Sockaddr(ap netip.AddrPort) unix.Sockaddr {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
}
