package reactor

import (
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
)

// maxPoolAddrs bounds one pool: more source addresses than this never help one process
// (each holds ~28K ports per destination already) and only cost memory.
const maxPoolAddrs = 1 << 20

// AddrPool is an ordered set of source addresses that connections are spread over
// round-robin. The zero value (and nil) is the empty pool: the kernel picks the source.
// An AddrPool is immutable after ParseAddrs and safe for concurrent use.
type AddrPool struct {
	ranges []addrRange
	total  int
}

type addrRange struct {
	first netip.Addr
	n     int
}

// ParseAddrs parses a source-address specification: a comma-separated list whose items are
// single addresses (127.0.0.2, ::1), inclusive ranges (127.0.0.2-127.0.0.40), CIDR blocks
// (10.0.0.0/24: every host address, without the network and broadcast addresses of IPv4
// blocks wider than /31) or interface names (eth0: every address on it). lookup resolves
// interface names; nil means the host's interfaces.
func ParseAddrs(spec string, lookup func(name string) ([]netip.Addr, error)) (*AddrPool, error) {
	if lookup == nil {
		lookup = interfaceAddrs
	}
	p := &AddrPool{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if err := p.addItem(item, lookup); err != nil {
			return nil, err
		}
		if p.total > maxPoolAddrs {
			return nil, fmt.Errorf("source addresses %q: %d addresses, more than the %d one process can use", spec, p.total, maxPoolAddrs)
		}
	}
	if p.total == 0 {
		return nil, fmt.Errorf("source addresses %q: no address given (want e.g. 127.0.0.2-127.0.0.9, 10.0.0.0/24 or eth0)", spec)
	}
	return p, nil
}

func (p *AddrPool) addItem(item string, lookup func(string) ([]netip.Addr, error)) error {
	switch {
	case strings.Contains(item, "/"):
		pfx, err := netip.ParsePrefix(item)
		if err != nil {
			return fmt.Errorf("source address block %q: %w", item, err)
		}
		pfx = pfx.Masked()
		first := pfx.Addr()
		hostBits := first.BitLen() - pfx.Bits()
		if hostBits > 30 {
			return fmt.Errorf("source address block %q: too large (%d host bits); give a /%d or narrower", item, hostBits, first.BitLen()-20)
		}
		n := 1 << hostBits
		if first.Is4() && hostBits > 1 { // skip the network and broadcast addresses
			first = first.Next()
			n -= 2
		}
		p.add(first, n)
	case strings.Contains(item, "-") && isAddr(item[:strings.Index(item, "-")]):
		lo, hi, _ := strings.Cut(item, "-")
		a := netip.MustParseAddr(strings.TrimSpace(lo))
		b, err := netip.ParseAddr(strings.TrimSpace(hi))
		if err != nil {
			return fmt.Errorf("source address range %q: %w", item, err)
		}
		if a.Is4() != b.Is4() || b.Less(a) {
			return fmt.Errorf("source address range %q: the end must be an address of the same family at or after the start", item)
		}
		n := new(big.Int).Sub(new(big.Int).SetBytes(b.AsSlice()), new(big.Int).SetBytes(a.AsSlice()))
		if !n.IsInt64() || n.Int64() >= maxPoolAddrs {
			return fmt.Errorf("source address range %q: more than %d addresses", item, maxPoolAddrs)
		}
		p.add(a, int(n.Int64())+1)
	default:
		if a, err := netip.ParseAddr(item); err == nil {
			p.add(a.Unmap(), 1)
			return nil
		}
		addrs, err := lookup(item)
		if err != nil {
			return fmt.Errorf("source address %q: not an address, range, block or interface: %w", item, err)
		}
		if len(addrs) == 0 {
			return fmt.Errorf("source address %q: interface has no addresses", item)
		}
		for _, a := range addrs {
			p.add(a, 1)
		}
	}
	return nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(strings.TrimSpace(s))
	return err == nil
}

func (p *AddrPool) add(first netip.Addr, n int) {
	if n <= 0 {
		return
	}
	p.ranges = append(p.ranges, addrRange{first: first, n: n})
	p.total += n
}

// Len returns the number of addresses in the pool (0 for nil).
func (p *AddrPool) Len() int {
	if p == nil {
		return 0
	}
	return p.total
}

// At returns the i-th address of the pool, i taken modulo Len. It panics on an empty pool.
func (p *AddrPool) At(i int) netip.Addr {
	i %= p.total
	for _, r := range p.ranges {
		if i < r.n {
			return addN(r.first, i)
		}
		i -= r.n
	}
	panic("BUG: AddrPool index out of range")
}

// String lists the pool's ranges.
func (p *AddrPool) String() string {
	if p.Len() == 0 {
		return "(kernel's choice)"
	}
	parts := make([]string, 0, len(p.ranges))
	for _, r := range p.ranges {
		if r.n == 1 {
			parts = append(parts, r.first.String())
		} else {
			parts = append(parts, r.first.String()+"-"+addN(r.first, r.n-1).String())
		}
	}
	return strings.Join(parts, ",")
}

// addN returns a + n.
func addN(a netip.Addr, n int) netip.Addr {
	if a.Is4() {
		b := a.As4()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		v += uint32(n)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	b := a.As16()
	carry := uint64(n)
	for i := 15; i >= 0 && carry > 0; i-- {
		s := uint64(b[i]) + carry
		b[i] = byte(s)
		carry = s >> 8
	}
	return netip.AddrFrom16(b)
}

// interfaceAddrs returns the unicast addresses of the named interface.
func interfaceAddrs(name string) ([]netip.Addr, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		if ipn, ok := a.(*net.IPNet); ok {
			if ad, ok := netip.AddrFromSlice(ipn.IP); ok && !ad.Unmap().IsLinkLocalUnicast() {
				out = append(out, ad.Unmap())
			}
		}
	}
	return out, nil
}

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
