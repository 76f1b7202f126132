package reactor

import (
	"errors"
	"fmt"
)

// ErrAddrCapacity reports that the source addresses cannot carry the connections asked for.
var ErrAddrCapacity = errors.New("reactor: not enough source ports for the connections")

// CheckCapacity verifies that conns connections to one destination fit the ports of the
// local port range times the source addresses (at least 1: the kernel's own choice). It
// returns an error wrapping ErrAddrCapacity that states the numbers and the fix.
func CheckCapacity(connsPerDest, addrs, portLo, portHi int) error {
	ports := portHi - portLo + 1
	if addrs < 1 {
		addrs = 1
	}
	if ports <= 0 || connsPerDest <= ports*addrs {
		return nil
	}
	need := (connsPerDest + ports - 1) / ports
	return fmt.Errorf("%w: %d connections to one broker address need %d source addresses, have %d "+
		"(ip_local_port_range %d-%d gives %d ports per source address); "+
		"fix: --bind 127.0.0.2-127.0.0.%d on loopback, `mqblast addrs add` elsewhere, "+
		"or widen the range: sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\"",
		ErrAddrCapacity, connsPerDest, need, addrs, portLo, portHi, ports, min(need+1, 254))
}
