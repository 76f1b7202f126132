package reactor

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// dialControl returns the net.Dialer Control function for outgoing sockets. It sets
// IP_BIND_ADDRESS_NO_PORT, so binding a source address does not reserve a port before
// connect() (a bind to port 0 without it takes the port out of the range for every process
// for as long as the socket lives), and, where the kernel has it (6.3+), IP_LOCAL_PORT_RANGE
// set to the whole range, which makes connect() search every port of the range instead of
// one parity first.
func dialControl(portLo, portHi int) func(network, address string, c syscall.RawConn) error {
	rng := uint32(portLo) | uint32(portHi)<<16
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
			if serr != nil {
				return
			}
			if portLo > 0 && portHi >= portLo {
				e := unix.SetsockoptInt(int(fd), unix.SOL_IP, unix.IP_LOCAL_PORT_RANGE, int(rng))
				if e != nil && !errors.Is(e, unix.ENOPROTOOPT) && !errors.Is(e, unix.EINVAL) {
					serr = e
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}
