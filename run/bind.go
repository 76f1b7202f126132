package run

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mqblast/mqblast/run/spec"
	"github.com/mqblast/mqblast/sink"
)

// family is an IP address family: the one a run reaches its brokers by, which its source
// addresses must share (a socket cannot connect across families).
type family uint8

const (
	anyFamily family = iota // not known: every address is kept
	ipv4
	ipv6
)

func familyOf(a netip.Addr) family {
	if a.Unmap().Is4() {
		return ipv4
	}
	return ipv6
}

func (f family) String() string {
	switch f {
	case ipv4:
		return "IPv4"
	case ipv6:
		return "IPv6"
	}
	return "any family"
}

// brokerFamily returns the family by which a run reaches the brokers on hosts, resolved
// as the engine resolves them (an address, else the name's first IPv4 address, else its
// first), and a sentence for messages ("the broker 10.0.0.5 is IPv4"). Without hosts the run reaches the embedded
// broker or the sink, on 127.0.0.1. The family is anyFamily when a host does not resolve
// (the run reports that); brokers of both families are an error, as each client takes a
// source address and a broker apart and some would pair across families.
func brokerFamily(what string, hosts []string) (family, string, error) {
	if len(hosts) == 0 {
		return ipv4, "the local broker (127.0.0.1) is IPv4", nil
	}
	fam, first := anyFamily, ""
	for _, h := range hosts {
		a, err := netip.ParseAddr(h)
		if err != nil {
			ta, rerr := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, "0"))
			if rerr != nil {
				return anyFamily, "", nil
			}
			a = ta.AddrPort().Addr()
		}
		f := familyOf(a)
		switch {
		case fam == anyFamily:
			fam, first = f, h
		case f != fam:
			return anyFamily, "", fmt.Errorf("%s: the broker %s is %s and the broker %s is %s, and each client "+
				"takes its source address and its broker apart, so some would pair across address families "+
				"and fail: give brokers of one family, or no source addresses", what, first, fam, h, f)
		}
	}
	return fam, fmt.Sprintf("the broker %s is %s", first, fam), nil
}

// expandInterfaces replaces the interface names of a --bind list (flag) by their
// addresses of family fam, the brokers' (every address when anyFamily): an interface such
// as lo has IPv4 and IPv6 addresses, and a client bound to one of the other family cannot
// reach the broker. An interface without an address of fam is an error.
func expandInterfaces(flag string, items []string, fam family, broker string) ([]string, error) {
	var out []string
	for _, item := range items {
		for _, a := range strings.Split(item, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			ifc, err := net.InterfaceByName(a)
			if err != nil { // not an interface: an address, range or block for scenario to read
				out = append(out, a)
				continue
			}
			as, err := ifc.Addrs()
			if err != nil {
				return nil, fmt.Errorf("%s %s: cannot read its addresses: %w", flag, a, err)
			}
			var other []string
			n := 0
			for _, x := range as {
				ipn, ok := x.(*net.IPNet)
				if !ok || ipn.IP.IsLinkLocalUnicast() {
					continue
				}
				ip, _ := netip.AddrFromSlice(ipn.IP)
				if fam != anyFamily && familyOf(ip) != fam {
					other = append(other, ip.Unmap().String())
					continue
				}
				out = append(out, ip.Unmap().String())
				n++
			}
			switch {
			case n == 0 && len(other) > 0:
				return nil, fmt.Errorf("%s %s: the interface has no %s address (only %s), and %s: "+
					"give an interface or addresses of the %s family", flag, a, fam, strings.Join(other, ", "), broker, fam)
			case n == 0:
				return nil, fmt.Errorf("%s %s: the interface has no usable address", flag, a)
			}
		}
	}
	return out, nil
}

// checkFamily refuses source entries (addresses, ranges, CIDRs; what names where they come
// from) of another family than fam, the brokers'.
func checkFamily(what string, entries []string, fam family, broker string) error {
	if fam == anyFamily {
		return nil
	}
	for _, e := range entries {
		addrs, ok := bindAddrs(e)
		if !ok {
			continue // an interface name, or not an address: reported where it is read
		}
		if f := familyOf(addrs[0]); f != fam {
			return fmt.Errorf("%s %s: %s source addresses, but %s: a socket cannot connect across "+
				"address families; give %s source addresses (an interface name takes its %s ones)",
				what, e, f, broker, fam, fam)
		}
	}
	return nil
}

// checkBind checks each word of a --bind list: an interface of this host, or an address, a
// range or a CIDR whose addresses this host has.
func checkBind(flag string, items []string) error {
	for _, item := range items {
		for _, w := range strings.Split(item, ",") {
			w = strings.TrimSpace(w)
			if w == "" {
				continue
			}
			if _, err := net.InterfaceByName(w); err == nil {
				continue
			}
			addrs, ok := bindAddrs(w)
			if !ok {
				return fmt.Errorf("%s %s: not an address, range, CIDR or interface on this host (interfaces: %s)",
					flag, w, strings.Join(interfaceNames(), ", "))
			}
			for _, a := range addrs {
				if err := bindable(a); err != nil {
					return fmt.Errorf("%s %s: %s is not an address of this host (%v); give addresses it has (%s), "+
						"or add them first (mqblast addrs add --dev DEV --cidr %s/N --count K). "+
						"Any 127.0.0.0/8 address is fine: Linux loopback takes them all",
						flag, w, a, err, strings.Join(hostAddrs(), ", "), a)
				}
			}
		}
	}
	return nil
}

// maxBindProbe is how many addresses of one range checkBind tries; a longer range is
// checked at its ends.
const maxBindProbe = 256

// bindAddrs returns the addresses of word w to try (an address, "a-b" or a CIDR), or false
// when w is none of these. The syntax is checked in full by scenario.SetBind later.
func bindAddrs(w string) ([]netip.Addr, bool) {
	var first, last netip.Addr
	if lo, hi, ok := strings.Cut(w, "-"); ok {
		a, err1 := netip.ParseAddr(strings.TrimSpace(lo))
		b, err2 := netip.ParseAddr(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil {
			return nil, false
		}
		first, last = a, b
	} else if strings.Contains(w, "/") {
		p, err := netip.ParsePrefix(w)
		if err != nil {
			return nil, false
		}
		first, last = p.Masked().Addr(), lastOf(p)
	} else {
		a, err := netip.ParseAddr(w)
		if err != nil {
			return nil, false
		}
		first, last = a, a
	}
	if first.Is4() != last.Is4() || last.Less(first) {
		return []netip.Addr{first}, true // SetBind reports the range itself
	}
	var out []netip.Addr
	for a := first; a.IsValid() && !last.Less(a); a = a.Next() {
		if len(out) == maxBindProbe {
			return []netip.Addr{first, last}, true
		}
		out = append(out, a)
	}
	return out, true
}

// lastOf returns the last address of prefix p.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As16()
	host := p.Addr().BitLen() - p.Bits()
	for i := 15; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	a := netip.AddrFrom16(b)
	if p.Addr().Is4() {
		return a.Unmap()
	}
	return a
}

// bindable reports whether a socket can be bound to a: whether a is an address of this host
// (or the host lets any address be bound, net.ipv4.ip_nonlocal_bind).
func bindable(a netip.Addr) error {
	if a.Is4() && a.IsLoopback() {
		return nil // all of 127.0.0.0/8 is routed to lo on Linux
	}
	c, err := net.ListenPacket("udp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			return errors.New("bind: cannot assign requested address")
		}
		return err
	}
	_ = c.Close()
	return nil
}

// interfaceNames lists this host's network interfaces.
func interfaceNames() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return []string{"cannot list them: " + err.Error()}
	}
	out := make([]string, 0, len(ifs))
	for _, ifc := range ifs {
		out = append(out, ifc.Name)
	}
	return out
}

// hostAddrs lists this host's addresses (at most 8, then "...").
func hostAddrs() []string {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return []string{"cannot list them: " + err.Error()}
	}
	var out []string
	for _, a := range as {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		if len(out) == 8 {
			return append(out, "...")
		}
		out = append(out, ipn.IP.String())
	}
	return out
}

// inputs are the settings of a run that can be checked before any socket opens.
type inputs struct {
	Loops     int           // event loops per process
	Sink      bool          // a calibration run against the sink
	SinkDelay time.Duration // the sink's flush delay
	Bind      []string      // source addresses, ranges, CIDRs or interfaces
	HTML, Out string        // the files of the HTML report and the result
}

// loopsPerCore bounds the loops: event loops beyond a few per core only take turns on the
// cores, each with its own thread, epoll set and eventfd.
const loopsPerCore = 4

// Check checks the inputs: loops (0 to loopsPerCore per core) and the sink's flush delay
// (sink.CheckFlushDelay) in range, an output file that can be written, and Bind words that
// are addresses of this host, ranges or CIDRs of them, or interfaces. Every error is a
// usage error naming the field, its value and the fix.
func (in inputs) Check() error {
	if most := loopsPerCore * runtime.NumCPU(); in.Loops > most {
		return usage(spec.Errorf("loops", "{loops} %d: more than %d loops (%d per core on this host's %d cores) only take turns on the cores, "+
			"each with its own thread, epoll set and eventfd: give 0 (one per core) or at most %d",
			in.Loops, most, loopsPerCore, runtime.NumCPU(), most))
	}
	if err := sink.CheckFlushDelay("{sink.flush_delay}", in.SinkDelay); err != nil {
		return usage(spec.Textf("sink.flush_delay", err.Error()))
	}
	if err := checkBind("{bind}", in.Bind); err != nil {
		return usage(spec.Textf("bind", err.Error()))
	}
	if in.HTML != "" {
		if err := checkOut("outputs.html", in.HTML, "report.html"); err != nil {
			return err
		}
	}
	if in.Out != "" {
		if err := checkOut("outputs.out", in.Out, "result.json"); err != nil {
			return err
		}
	}
	return nil
}
