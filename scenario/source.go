package scenario

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strings"
)

// sourceRange is a contiguous run of source addresses.
type sourceRange struct {
	first netip.Addr
	n     uint64 // number of addresses, ≥ 1
}

// maxSources bounds the addresses of one bind entry (a /8 has 16M); more is a mistake.
const maxSources = 1 << 24

// parseSource reads a bind entry: an address, a range "a-b" or a prefix "a/n".
// An interface name is reported with errInterface.
func parseSource(s string) (sourceRange, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		b, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil {
			if isIfName(s) {
				return sourceRange{}, errInterface
			}
			return sourceRange{}, errors.New("is not an address range (want first-last, e.g. 127.0.0.2-127.0.0.40)")
		}
		if a.Is4() != b.Is4() || a.Zone() != "" || b.Zone() != "" {
			return sourceRange{}, errors.New("mixes address families")
		}
		if b.Less(a) {
			return sourceRange{}, errors.New("ends before it starts")
		}
		n := new(big.Int).Sub(new(big.Int).SetBytes(b.AsSlice()), new(big.Int).SetBytes(a.AsSlice()))
		n.Add(n, big.NewInt(1))
		if !n.IsUint64() || n.Uint64() > maxSources {
			return sourceRange{}, fmt.Errorf("holds more than %d addresses", maxSources)
		}
		return sourceRange{a, n.Uint64()}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return sourceRange{}, errors.New("is not an address prefix (want e.g. 10.0.0.0/24)")
		}
		host := p.Addr().BitLen() - p.Bits()
		if host > 24 {
			return sourceRange{}, fmt.Errorf("holds more than %d addresses", maxSources)
		}
		return sourceRange{p.Masked().Addr(), 1 << host}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		if isIfName(s) {
			return sourceRange{}, errInterface
		}
		return sourceRange{}, errors.New("is not an address, range, prefix or interface name")
	}
	return sourceRange{a, 1}, nil
}

// errInterface marks a bind entry that names an interface: the caller must resolve it.
var errInterface = errors.New("is an interface name")

// isIfName reports whether s can be a Linux interface name (IFNAMSIZ-1 bytes, no '/' or
// blank).
func isIfName(s string) bool {
	if s == "" || len(s) > 15 || strings.Trim(s, "0123456789.") == "" {
		return false // too long, or a malformed IPv4 address
	}
	for _, c := range s {
		if c <= ' ' || c == '/' || c == ':' || c > '~' {
			return false
		}
	}
	return true
}

// sourceSet is the expanded bind list: address k is found by walking the ranges.
type sourceSet struct {
	ranges []sourceRange
	total  int
}

func newSourceSet(entries []string) (sourceSet, error) {
	var ss sourceSet
	for _, e := range entries {
		r, err := parseSource(e)
		if err != nil {
			return sourceSet{}, fmt.Errorf("%q %w", e, err)
		}
		ss.ranges = append(ss.ranges, r)
		ss.total += int(r.n)
	}
	return ss, nil
}

// addr returns address k, 0 ≤ k < total.
func (ss *sourceSet) addr(k int) netip.Addr {
	for _, r := range ss.ranges {
		if uint64(k) < r.n {
			return addAddr(r.first, uint64(k))
		}
		k -= int(r.n)
	}
	return netip.Addr{}
}

func addAddr(a netip.Addr, k uint64) netip.Addr {
	b := a.As16()
	carry := k
	for i := 15; i >= 0 && carry > 0; i-- {
		s := uint64(b[i]) + carry&0xff
		b[i] = byte(s)
		carry = carry>>8 + s>>8
	}
	out := netip.AddrFrom16(b)
	if a.Is4() {
		return out.Unmap()
	}
	return out
}
