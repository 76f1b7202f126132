package reactor

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// LocalPortRange reads net.ipv4.ip_local_port_range (which also governs IPv6).
func LocalPortRange() (lo, hi int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the local port range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("cannot parse the local port range %q", b)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo > hi {
		return 0, 0, fmt.Errorf("cannot parse the local port range %q", b)
	}
	return lo, hi, nil
}
