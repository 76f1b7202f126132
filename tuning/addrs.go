package tuning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os/exec"
	"strings"
)

// HostAddrs returns count consecutive addresses of cidr, each with cidr's prefix length,
// for use as source addresses. It starts at cidr's address, or at the first one after the
// network address when cidr names the network ("10.0.0.0/24" starts at 10.0.0.1), and skips
// an IPv4 broadcast address. It fails when the prefix holds fewer than count addresses.
func HostAddrs(cidr string, count int) ([]netip.Prefix, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("cannot parse --cidr %q: %w", cidr, err)
	}
	if count < 1 {
		return nil, fmt.Errorf("cannot add %d addresses: the count must be at least 1", count)
	}
	network := p.Masked()
	a := p.Addr()
	// A /31, /32 (/127, /128) has no network or broadcast address to skip.
	small := p.Bits() >= a.BitLen()-1
	if a == network.Addr() && !small {
		a = a.Next()
	}
	out := make([]netip.Prefix, 0, count)
	for ; len(out) < count; a = a.Next() {
		if !a.IsValid() || !network.Contains(a) {
			return nil, fmt.Errorf("cannot take %d addresses from %s: it holds only %d after %s", count, cidr, len(out), p.Addr())
		}
		if a.Is4() && !small && !network.Contains(a.Next()) {
			// the last address of an IPv4 subnet is its broadcast address
			return nil, fmt.Errorf("cannot take %d addresses from %s: it holds only %d after %s", count, cidr, len(out), p.Addr())
		}
		out = append(out, netip.PrefixFrom(a, p.Bits()))
	}
	return out, nil
}

// AddrBatch returns the `ip -batch` script that adds (op "add") or deletes (op "del") addrs on
// dev. Deletion runs in reverse order: deleting a subnet's primary address first would take its
// secondaries with it, and the later deletions would fail.
func AddrBatch(op, dev string, addrs []netip.Prefix) (string, error) {
	if op != "add" && op != "del" {
		return "", fmt.Errorf("unknown operation %q: want add or del", op)
	}
	if dev == "" || strings.ContainsAny(dev, " \t\n/") {
		return "", errors.New("cannot use --dev " + fmt.Sprintf("%q", dev) + ": want an interface name")
	}
	var b strings.Builder
	for i := range addrs {
		a := addrs[i]
		if op == "del" {
			a = addrs[len(addrs)-1-i]
		}
		fmt.Fprintf(&b, "address %s %s dev %s\n", op, a, dev)
	}
	return b.String(), nil
}

// RunAddrBatch runs script, the `ip -batch` commands of AddrBatch that op ("add" or "del")
// addrs on dev, in the network namespace netns (when not ""), and says on w what it did;
// with dryRun it prints the commands instead.
func RunAddrBatch(ctx context.Context, w io.Writer, op, dev, netns string, addrs []netip.Prefix, script string, dryRun bool) error {
	var ipArgs []string
	if netns != "" {
		ipArgs = append(ipArgs, "-n", netns)
	}
	if dryRun {
		prefix := "ip " + strings.Join(append(ipArgs, ""), " ")
		for _, line := range strings.SplitAfter(strings.TrimSuffix(script, "\n"), "\n") {
			if _, err := fmt.Fprint(w, prefix+line); err != nil {
				return err
			}
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	ip := exec.CommandContext(ctx, "ip", append(ipArgs, "-batch", "-")...)
	ip.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	ip.Stdout, ip.Stderr = w, &stderr
	if err := ip.Run(); err != nil {
		return fmt.Errorf("cannot %s addresses on %s: ip -batch: %w: %s", op, dev, err, strings.TrimSpace(stderr.String()))
	}
	done := map[string]string{"add": "added", "del": "removed"}[op]
	_, err := fmt.Fprintf(w, "%s %d addresses on %s: %s to %s\n", done, len(addrs), dev,
		addrs[0].Addr(), addrs[len(addrs)-1].Addr())
	return err
}
