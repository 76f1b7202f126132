package run

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run/spec"
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

// TestBindInterfaceBrokerFamily: bind lo against a real Mosquitto takes only lo's
// addresses of the broker's family, IPv4 or IPv6, so that every client connects (lo has
// 127.0.0.1 and ::1: half the clients bound to the other one failed, and the run
// succeeded); a source address of the other family is refused before any socket opens,
// naming the broker's family and the fix.
func TestBindInterfaceBrokerFamily(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	const clients = 20
	hosts := []string{"127.0.0.1"}
	if hasAddr("::1") {
		hosts = append(hosts, "::1")
	} else {
		t.Log("no ::1 on this host: the IPv6 broker is not tried")
	}
	for _, host := range hosts {
		m := testbroker.StartMosquitto(t, testbroker.Options{Host: host})
		sp := quick("quick-conn-100", m.Addr, sets("publishers.client_count", clients, "parameters.connection_rate", 400)...)
		sp.Bind, sp.Duration, sp.NoCheck, sp.Procs = []string{"lo"}, spec.Duration(time.Second), true, 1
		r := doSpec(t, sp)
		if r.err != nil {
			t.Errorf("bind lo against %s: %v\n%s", m.Addr, r.err, r.stderr)
			continue
		}
		if c := r.res.Connections; c.Established != clients || c.Failed != 0 {
			t.Errorf("bind lo against %s: %d of %d established, %d failed (%v)", m.Addr, c.Established, clients, c.Failed, c.FailedBy)
		}
	}

	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, tc := range []struct {
		broker, bind string
		want         []string
	}{
		{m.Addr, "127.0.0.2,::1", []string{"bind ::1: IPv6 source addresses, but the broker 127.0.0.1 is IPv4", "give IPv4 source addresses"}},
		{"[::1]:1883", "127.0.0.2-127.0.0.9",
			[]string{"bind 127.0.0.2-127.0.0.9: IPv4 source addresses, but the broker ::1 is IPv6", "give IPv6 source addresses"}},
		{m.Addr + ",[::1]:1883", "lo", []string{"bind: the broker 127.0.0.1 is IPv4 and the broker ::1 is IPv6", "give brokers of one family"}},
		{"", "::1", []string{"bind ::1: IPv6 source addresses, but the local broker (127.0.0.1) is IPv4"}}, // the embedded broker
	} {
		sp := quick("quick-conn-100", tc.broker)
		sp.Bind, sp.NoCheck, sp.Procs = []string{tc.bind}, true, 1
		r := doSpec(t, sp)
		if !errors.Is(r.err, fail.ErrUsage) {
			t.Errorf("broker %q, bind %s: %v, want %v\n%s", tc.broker, tc.bind, r.err, fail.ErrUsage, r.stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("broker %q, bind %s: %v lacks %q", tc.broker, tc.bind, r.err, w)
			}
		}
		if strings.Contains(r.stderr, "connecting") {
			t.Errorf("broker %q, bind %s: it dialed:\n%s", tc.broker, tc.bind, r.stderr)
		}
	}
}

// TestShardAndStartAtInputs: against a real Mosquitto, a shard count that leaves shards
// without a client (shard 7/100 of 8 clients ran, connected nothing and failed with "no
// error recorded"), a JOB_COMPLETION_INDEX with a blank, and a start_at more than a day
// ahead or long past are refused before any connection (usage errors), each saying the
// fix; a start_at ahead says that the clients hold their connections until then.
func TestShardAndStartAtInputs(t *testing.T) {
	t.Parallel() // its own broker and runs: it waits on them, beside the other such tests
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	eight := func(shard, startAt string) *Spec {
		sp := quick("quick-conn-100", m.Addr, "publishers.client_count=8")
		sp.Duration, sp.NoCheck, sp.Procs, sp.RunID, sp.Shard, sp.StartAt = spec.Duration(time.Second), true, 1, "inputs", shard, startAt
		return sp
	}
	p2p := func(startAt string) *Spec {
		sp := quick("quick-p2p-100", m.Addr, "publishers.client_count=5", "subscribers.client_count=5", "parameters.warmup_sec=0")
		sp.Duration, sp.NoCheck, sp.Procs, sp.StartAt = spec.Duration(time.Second), true, 1, startAt
		return sp
	}
	for _, tc := range []struct {
		env  []string
		sp   *Spec
		want []string
	}{
		{nil, eight("7/100", ""), []string{"shard 7/100: the plan has 8 clients, 8 in its largest group",
			"(this one gets 0); give at most 8 shards (shard I/8, or JOB_COMPLETIONS=8 with shard auto)"}},
		{[]string{"JOB_COMPLETION_INDEX=7", "JOB_COMPLETIONS=100"}, eight("auto", ""), []string{"shard 7/100: the plan has 8 clients"}},
		{[]string{"JOB_COMPLETION_INDEX= 1", "JOB_COMPLETIONS=3"}, eight("auto", ""),
			[]string{`shard auto: JOB_COMPLETION_INDEX=" 1" is not a shard index: want digits alone, no blank or sign`}},
		{nil, p2p("+25h"), []string{`start_at "+25h" is 25h0m0s from now, more than 24h0m0s ahead`, "give an instant within 24h0m0s"}},
		{nil, p2p("2020-01-02T03:04:05Z"), []string{`start_at "2020-01-02T03:04:05Z" was `, "ago, more than 10m0s", "give a later instant"}},
	} {
		// A run that took them would run on: it ends after 10 s, long enough to refuse them.
		r := doSpecCtx(interruptAfter(t, 10*time.Second), t, tc.sp, tc.env...)
		name := string(tc.sp.JSON())
		if !errors.Is(r.err, fail.ErrUsage) {
			t.Errorf("%v %s: %v, want %v\n%s", tc.env, name, r.err, fail.ErrUsage, r.stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("%v %s: %v lacks %q", tc.env, name, r.err, w)
			}
		}
		if strings.Contains(r.stderr, "connecting") {
			t.Errorf("%v %s: it dialed:\n%s", tc.env, name, r.stderr)
		}
	}

	r := doOK(t, p2p("+3s"))
	for _, w := range []string{"--start-at: connecting 10 clients now and holding their connections until ", "), then publishing",
		"subscribed: holding the connections until "} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("start_at +3s: stderr lacks %q:\n%s", w, r.stderr)
		}
	}
	r = doSpec(t, eight("", "+1h"))
	if r.err != nil || !strings.Contains(r.stderr, "a Connections scenario publishes nothing: its clients connect now") || r.took > 30*time.Second {
		t.Errorf("a Connections run with start_at +1h: %v after %v\n%s", r.err, r.took, r.stderr)
	}
}
