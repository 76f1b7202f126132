package main

import (
	"strings"
	"testing"
)

// TestBrokerNameNotResolved: a broker host name that does not resolve is found before the
// run's first socket: exit 2 with one line naming --broker and the fix when the flag gave
// it, exit 3 naming the scenario when --set gave it; no "connecting" line. The name is a
// .onion one, which Go's resolver answers without asking DNS (RFC 7686): the test sends
// nothing off this host.
func TestBrokerNameNotResolved(t *testing.T) {
	t.Parallel()
	env := []string{"GODEBUG=netdns=go"}
	r := runBinEnvVars(t, env, "run", "quick-conn-100", "--broker", "no-such-host.onion:1883", "--no-check")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != exitUsage || !strings.HasPrefix(lines[0], `mqblast: --broker no-such-host.onion:1883: cannot resolve the host name "no-such-host.onion" (`) ||
		!strings.Contains(lines[0], "IP address") || strings.Contains(r.stderr, "connecting") {
		t.Errorf("--broker: exit %d\n%s", r.code, r.stderr)
	}
	r = runBinEnvVars(t, env, "run", "quick-conn-100", "--set", "server.hostname=no-such-host.onion", "--no-check")
	if r.code != exitInvalid || !strings.Contains(r.stderr, `quick-conn-100: the broker no-such-host.onion:1883: cannot resolve`) ||
		strings.Contains(r.stderr, "connecting") {
		t.Errorf("--set server.hostname: exit %d\n%s", r.code, r.stderr)
	}
}
