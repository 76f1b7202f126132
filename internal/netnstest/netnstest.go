//go:build linux

// Package netnstest gives tests network namespaces of their own (ip(8), as root), so that
// what they make the kernel do — full listen queues, dropped SYNs, changed sysctls — stays
// inside them. Outside CI (CI=true) a test that cannot have one is skipped; in CI it fails.
package netnstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/internal/tier"
)

// NeedRoot skips a test that creates network namespaces (its own, or the packet
// emulator's) without root, and fails it under CI=true; it puts the test in the
// integration tier.
func NeedRoot(t testing.TB) {
	t.Helper()
	tier.Integration(t)
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("network namespace tests need root")
	}
	t.Skip("network namespace tests need root")
}

// New creates a network namespace named after the process and name, with its loopback up,
// and deletes it when the test ends.
func New(t testing.TB, name string) string {
	t.Helper()
	NeedRoot(t)
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skip("network namespace tests need ip(8): %v", err)
	}
	ns := fmt.Sprintf("mqblast-%s-%d", name, os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		skip("cannot create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("cannot delete network namespace %s: %v: %s", ns, err, out)
		}
	})
	Sh(t, "ip", "-n", ns, "link", "set", "lo", "up")
	return ns
}

// Sh runs a command, fails the test if it fails, and returns its output.
func Sh(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// hosts counts the Host namespaces of this process, for their device names.
var hosts atomic.Int32

// Host creates a network namespace as New does, joined to this one by a veth pair with
// addresses in a private /30 of 10.231.0.0/16 chosen at random (one no interface of this
// namespace already has): a host of its own, reached over a link as a broker's host would
// be. It returns the namespace and its address; this side's address is that address - 1.
// The pair goes with the namespace when the test ends.
func Host(t testing.TB, name string) (ns string, addr netip.Addr) {
	t.Helper()
	ns = New(t, name)
	n := hosts.Add(1)
	outer := fmt.Sprintf("mq%dh%d", os.Getpid(), n)
	inner := fmt.Sprintf("mq%dn%d", os.Getpid(), n)
	Sh(t, "ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", outer).Run() })
	used := Sh(t, "ip", "-o", "-4", "addr", "show")
	var here netip.Addr
	for try := 0; ; try++ {
		i := 1 + rand.IntN(1<<14-2) // a /30 of 10.231.0.0/16, not the first or last
		base := netip.AddrFrom4([4]byte{10, 231, byte(i >> 6), byte(i&63) << 2})
		here, addr = base.Next(), base.Next().Next()
		if !strings.Contains(used, " "+here.String()+"/") && !strings.Contains(used, " "+addr.String()+"/") {
			break
		}
		if try == 100 {
			t.Fatalf("no free /30 in 10.231.0.0/16 for namespace %s", ns)
		}
	}
	Sh(t, "ip", "addr", "add", here.String()+"/30", "dev", outer)
	Sh(t, "ip", "link", "set", outer, "up")
	Sh(t, "ip", "-n", ns, "addr", "add", addr.String()+"/30", "dev", inner)
	Sh(t, "ip", "-n", ns, "link", "set", inner, "up")
	Sh(t, "ip", "-n", ns, "route", "add", "default", "via", here.String())
	return ns, addr
}

// LimitOut caps what a Host namespace ns sends over its link at rate (tc(8)'s units, as
// "2mbit") with a token bucket that queues at most 5 ms: a broker there whose output, not
// its CPU, is the limit, at a rate that the host's load and the hypervisor's steal do not
// move.
func LimitOut(t testing.TB, ns, rate string) {
	t.Helper()
	var dev string
	for _, line := range strings.Split(Sh(t, "ip", "-n", ns, "-o", "link", "show", "type", "veth"), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			dev, _, _ = strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			break
		}
	}
	if dev == "" {
		t.Fatalf("namespace %s has no veth link (netnstest.Host makes one)", ns)
	}
	Sh(t, "tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "4kb", "latency", "5ms")
}

// Listen opens a listener inside the network namespace ns (a socket stays in the
// namespace it was made in, whichever thread uses it later), closed when the test ends.
func Listen(t testing.TB, ns, network, address string) net.Listener {
	t.Helper()
	var l net.Listener
	err := Do(ns, func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s %s in namespace %s: %v", network, address, ns, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// Do runs fn on an OS thread moved into the network namespace ns, and moves the thread back
// after. The thread must live on: a child started from it with a parent-death signal
// (SysProcAttr.Pdeathsig, internal/child) gets that signal when the thread exits, not the
// process; so it is discarded (the goroutine ends locked) only when it cannot be moved back.
func Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer orig.Close()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
		_ = f.Close()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("cannot enter network namespace %s: %w", ns, err)
			return
		}
		err = fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
