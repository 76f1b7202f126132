package reactor

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls of the engine: epoll and eventfd (internal/epoll, which the floor client
// shares) and non-blocking sockets, straight from x/sys/unix. Nothing here allocates per
// packet.

// never is the wake time of a loop that has nothing timed to do.
const never = int64(1<<63 - 1)

// eventData packs a socket and its session's slot into an epoll event.
func eventData(fd, slot int32) unix.EpollEvent { return unix.EpollEvent{Fd: fd, Pad: slot} }

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
