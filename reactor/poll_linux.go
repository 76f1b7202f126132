package reactor

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of the engine: epoll, eventfd and non-blocking sockets, straight from
// x/sys/unix. Nothing here allocates per packet.

// never is the wake time of a loop that has nothing timed to do.
const never = int64(1<<63 - 1)

// newEpoll creates a loop's epoll instance and the eventfd other goroutines wake it with.
func newEpoll() (ep, evfd int, err error) {
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

// epollWait waits for events on ep for at most timeout nanoseconds (negative: without
// limit). epoll_pwait2 takes the timeout in nanoseconds, so a loop wakes for a publisher's
// due time rather than up to a millisecond after it; kernels without it get epoll_wait's
// milliseconds, rounded up.
func epollWait(ep int, events []unix.EpollEvent, timeout int64) (int, error) {
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

// eventData packs a socket and its session's slot into an epoll event.
func eventData(fd, slot int32) unix.EpollEvent { return unix.EpollEvent{Fd: fd, Pad: slot} }

// sockaddr converts an address and port to the form connect(2) and bind(2) take. Every loop
// keeps its own: x/sys/unix encodes into the value on each call.
func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
}

// noPortRange is set once the kernel refused IP_LOCAL_PORT_RANGE (before 6.3): no socket
// asks again.
var noPortRange atomic.Bool

// openSocket creates a non-blocking TCP socket of the family of dst, with TCP_NODELAY
// (MQTT packets are small and latency is what is measured) and, if src is not nil, bound
// to src with IP_BIND_ADDRESS_NO_PORT, so that binding a source address does not reserve a
// port before connect() (a bind to port 0 without it takes the port out of the range for
// every process for as long as the socket lives). Where the kernel has it (6.3+),
// IP_LOCAL_PORT_RANGE set to the whole range makes connect() search every port of the range
// instead of one parity first; measured here, it halves the kernel's connect time once a
// source address holds more than a few thousand connections.
func openSocket(dst, src unix.Sockaddr, portRange uint32) (int, error) {
	family := unix.AF_INET
	if _, ok := dst.(*unix.SockaddrInet6); ok {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, err
	}
	if err = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	// The kernel stamps each packet's arrival; the CONNACK's read asks for the stamp, so
	// that connect latency does not include the time the loop took to get to it.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	if portRange != 0 && family == unix.AF_INET && !noPortRange.Load() {
		e := unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_LOCAL_PORT_RANGE, int(portRange))
		if errors.Is(e, unix.ENOPROTOOPT) || errors.Is(e, unix.EINVAL) {
			noPortRange.Store(true)
		}
	}
	if src != nil {
		if err = unix.SetsockoptInt(fd, unix.SOL_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1); err == nil {
			err = unix.Bind(fd, src)
		}
		if err != nil {
			_ = unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// rxStamp returns the arrival time (CLOCK_REALTIME ns) in the control data of a recvmsg(2)
// on a socket with SO_TIMESTAMPNS, or 0.
func rxStamp(oob []byte) int64 {
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			return ts.Nano()
		}
		oob = rest
	}
	return 0
}

// socketError returns the error a non-blocking connect ended with (nil: connected).
func socketError(fd int) error {
	v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return unix.Errno(v)
	}
	return nil
}
