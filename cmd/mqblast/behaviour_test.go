package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// The tests of brokers that do not do what the plan asked are run's (its behaviour_test.go),
// but for TestBrokerPolicyDrops: it runs behind the packet emulator, whose broker run.Do
// starts through a guard of this process's own executable (os.Executable, not IO.Exe), so
// in a test process it drives the binary.

// checkDoc fails the test unless the document on r's stdout adds up.
func checkDoc(t *testing.T, r cliRun) {
	t.Helper()
	if err := result.CheckDocument([]byte(r.stdout)); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
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
	needRoot(t)
	bin := testbroker.Need(t)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	if err := os.WriteFile(conf, []byte("listener 1883\nallow_anonymous true\nmax_inflight_messages 1\nmax_queued_messages 10\nsys_interval 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, "run", "quick-fanin-100-1", "--net", "delay=5ms", "--net-broker-cmd", bin+" -c "+conf, "--broker-sys",
		"--no-check", "--format", "json", "--duration", "3s", "--set", "parameters.warmup_sec=500ms", "--set", "parameters.drain_sec=1s",
		"--set", "publishers.client_count=10", "--set", "parameters.publish_rate=50")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	checkDoc(t, r)
	res := decodeResult(t, r)
	m := res.Messages
	b := res.Behaviour("dropped_by_broker")
	t.Logf("published %d, received %d, lost %d; broker_behaviour %+v", m.Published, m.Received, m.Lost, res.BrokerBehaviour)
	if m.Lost < 500 || b == nil || b.Count != m.Lost || !strings.Contains(b.Evidence, "the broker's doing, not the client's") {
		t.Errorf("lost %d, dropped_by_broker %+v: want the broker's count of its drops beside the loss", m.Lost, b)
	}
	if saturated(res) { // the host's cores short is the host's, not this run's doing
		t.Errorf("the client is called saturated: %v", res.Client.SaturationEvidence)
	}
}

// saturated reports whether the client called itself saturated for a cause of its own (not
// the host's cores being short, which other tests on the host make).
func saturated(res *result.Result) bool {
	if !res.Client.Saturated {
		return false
	}
	for _, ev := range res.Client.SaturationEvidence {
		if !strings.Contains(ev, "the host's cores are short") {
			return true
		}
	}
	return false
}
