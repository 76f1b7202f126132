package main

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// hasAddr reports whether this host has address a (an IPv6 loopback may be disabled).
func hasAddr(a string) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}

// TestBindInterfaceBrokerFamily: --bind lo (and --ifaddr lo) against a real Mosquitto
// takes only lo's addresses of the broker's family, IPv4 or IPv6, so that every client
// connects (lo has 127.0.0.1 and ::1: half the clients bound to the other one failed, and
// the run exited 0); a source address of the other family is refused before any socket
// opens, naming the broker's family and the fix.
func TestBindInterfaceBrokerFamily(t *testing.T) {
	const clients = 20
	quick := []string{"--set", "publishers.client_count=" + strconv.Itoa(clients), "--set", "parameters.connection_rate=400",
		"--duration", "1s", "--no-check", "--procs", "1", "--format", "json"}
	hosts := []string{"127.0.0.1"}
	if hasAddr("::1") {
		hosts = append(hosts, "::1")
	} else {
		t.Log("no ::1 on this host: the IPv6 broker is not tried")
	}
	for _, host := range hosts {
		m := testbroker.StartMosquitto(t, testbroker.Options{Host: host})
		_, port, _ := net.SplitHostPort(m.Addr)
		for name, args := range map[string][]string{
			"run --bind lo":    append([]string{"run", "quick-conn-100", "--broker", m.Addr, "--bind", "lo"}, quick...),
			"conn --ifaddr lo": {"conn", "-H", host, "-p", port, "-c", strconv.Itoa(clients), "-R", "400", "--hold", "1s", "--ifaddr", "lo", "--no-check", "--procs", "1", "--format", "json"},
		} {
			r := runBin(t, args...)
			if r.code != 0 {
				t.Errorf("%s against %s: exit %d\n%s", name, m.Addr, r.code, r.stderr)
				continue
			}
			c := decodeResult(t, r).Connections
			if c.Established != clients || c.Failed != 0 {
				t.Errorf("%s against %s: %d of %d established, %d failed (%v)", name, m.Addr, c.Established, clients, c.Failed, c.FailedBy)
			}
		}
	}

	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "quick-conn-100", "--broker", m.Addr, "--bind", "127.0.0.2,::1"},
			[]string{"--bind ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4", "give IPv4 source addresses"}},
		{[]string{"run", "quick-conn-100", "--broker", "[::1]:1883", "--bind", "127.0.0.2-127.0.0.9"},
			[]string{"--bind 127.0.0.2-127.0.0.9: IPv4 source addresses, but the broker ::1 is IPv6", "give IPv6 source addresses"}},
		{[]string{"run", "quick-conn-100", "--broker", m.Addr + ",[::1]:1883", "--bind", "lo"},
			[]string{"--bind: the broker 127.0.0.1 is IPv4 and the broker ::1 is IPv6", "give brokers of one family"}},
		{[]string{"conn", "-H", "127.0.0.1", "-p", "1", "-c", "5", "--ifaddr", "::1"},
			[]string{"--ifaddr ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4"}},
		{[]string{"run", "quick-conn-100", "--bind", "::1"}, // the embedded broker listens on 127.0.0.1
			[]string{"--bind ::1: IPv6 source addresses, but the local broker (127.0.0.1) is IPv4"}},
	} {
		r := runBin(t, append(tc.args, "--no-check", "--procs", "1")...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, r.code, exitUsage, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "connecting") {
			t.Errorf("%v: it dialed:\n%s", tc.args, r.stderr)
		}
	}
}
