package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// TestRunNet runs a Round-Trip scenario with a network profile on this host (no
// sch_netem: the broker, Mosquitto, runs behind the packet emulator) and wants the round
// trip to take at least the profile's 2 × 2 ms, the emulator's counters on stderr, and its
// namespaces gone afterwards.
func TestRunNet(t *testing.T) {
	tm := tier.Timing(t)
	netnstest.NeedRoot(t)
	testbroker.Need(t)
	sp := quick("quick-roundtrip-10", "")
	sp.Net, sp.Duration, sp.Outputs.Out = &spec.Net{Profile: "delay=2ms"}, spec.Duration(3*time.Second), filepath.Join(t.TempDir(), "r.json")
	r := doSpec(t, sp) // the run goes on in a child process in the client namespace: no result here
	if r.err != nil {
		t.Fatalf("%v:\n%s", r.err, r.stderr)
	}
	res, err := result.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("broker %v, round trip p50 %d µs over %d", res.Broker, res.LatencyUS.P50, res.LatencyUS.Count)
	if res.LatencyUS.Count == 0 || res.LatencyUS.P50 < 4000 {
		t.Errorf("round trip p50 %d µs over %d messages, want 4 ms (2 × 2 ms) and more", res.LatencyUS.P50, res.LatencyUS.Count)
	}
	if res.LatencyUS.P50 > 40000 {
		tm.Errorf("round trip p50 %d µs over %d messages, want 4 ms (2 × 2 ms) and not ten times that", res.LatencyUS.P50, res.LatencyUS.Count)
	}
	if n := res.Network; n == nil || n.Profile != "delay=2ms" || n.Via != "emulator" || n.Up.Delay != 2*time.Millisecond || n.Down.Delay != 2*time.Millisecond {
		t.Errorf("result's network %+v, want delay=2ms both ways through the emulator", n)
	}
	if len(res.Broker) != 1 || res.Broker[0] != "10.211.0.1:1883" {
		t.Errorf("broker %v, want the emulator's broker namespace 10.211.0.1:1883", res.Broker)
	}
	for _, want := range []string{"through the packet emulator: broker namespace mqb-", "emulator up (client to broker):", "emulator CPU:"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	ns := r.stderr[strings.Index(r.stderr, "broker namespace ")+len("broker namespace "):]
	ns = strings.Fields(ns)[0]
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s is left after the run", ns)
	}
}

// TestBrokerPolicyDrops: a QoS 1 subscriber 10 ms of round trip away (the packet emulator)
// from Mosquitto with max_inflight_messages 1 and max_queued_messages 10 takes 100 msg/s;
// 500 msg/s are published to it, and the broker drops what its queue cannot hold. The lost
// copies are the broker's: broker_behaviour dropped_by_broker counts them from its $SYS
// counter, and the client, idle, is not called saturated (but for the host's cores being
// short, which other tests on the host cause).
func TestBrokerPolicyDrops(t *testing.T) {
	t.Parallel()
	netnstest.NeedRoot(t)
	bin := testbroker.Need(t)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	if err := os.WriteFile(conf, []byte("listener 1883\nallow_anonymous true\nmax_inflight_messages 1\nmax_queued_messages 10\nsys_interval 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp := quick("quick-fanin-100-1", "", sets("parameters.warmup_sec", "500ms", "parameters.drain_sec", "1s",
		"publishers.client_count", 10, "parameters.publish_rate", 50)...)
	sp.Net = &spec.Net{Profile: "delay=5ms", BrokerCmd: bin + " -c " + conf}
	sp.Watch.BrokerSys, sp.NoCheck, sp.Duration, sp.Outputs.Format = true, true, spec.Duration(3*time.Second), "json"
	r := doOK(t, sp) // the run goes on in a child process in the client namespace: its document on stdout
	checkDoc(t, r)
	var res result.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	m := res.Messages
	b := res.Behaviour("dropped_by_broker")
	t.Logf("published %d, received %d, lost %d; broker_behaviour %+v", m.Published, m.Received, m.Lost, res.BrokerBehaviour)
	if m.Lost < 500 || b == nil || b.Count != m.Lost || !strings.Contains(b.Evidence, "the broker's doing, not the client's") {
		t.Errorf("lost %d, dropped_by_broker %+v: want the broker's count of its drops beside the loss", m.Lost, b)
	}
	if saturated(&res) { // the host's cores short is the host's, not this run's doing
		t.Errorf("the client is called saturated: %v", res.Client.SaturationEvidence)
	}
}
