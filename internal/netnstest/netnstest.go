//go:build linux

// Package netnstest gives tests network namespaces of their own (ip(8), as root), so that
// what they make the kernel do — full listen queues, dropped SYNs, changed sysctls — stays
// inside them. Outside CI (CI=true) a test that cannot have one is skipped; in CI it fails.
package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/tier"
)

// New creates a network namespace named after the process and name, with its loopback up,
// and deletes it when the test ends.
func New(t testing.TB, name string) string {
	t.Helper()
	tier.Integration(t)
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("network namespace tests need root")
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
