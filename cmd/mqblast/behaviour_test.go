package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// The tests of brokers that do not do what the plan asked: they refuse messages or
// subscriptions, end connections with a reason, lack a capability, speak another version,
// grant a lower QoS. Each run's document must add up (result.CheckDocument) and say what
// the broker did in broker_behaviour and the summary.

// checkDoc fails the test unless the document on r's stdout adds up.
func checkDoc(t *testing.T, r cliRun) {
	t.Helper()
	if err := result.CheckDocument([]byte(r.stdout)); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
	}
}

// quickP2P are the arguments of a short quick-p2p-100 run against addr at MQTT version v.
func quickP2P(addr, v string, more ...string) []string {
	return append([]string{"run", "quick-p2p-100", "--broker", addr, "--no-check", "--format", "json", "--duration", "2s",
		"--set", "parameters.warmup_sec=500ms", "--set", "parameters.drain_sec=500ms",
		"--set", "publishers.protocol_version=" + v, "--set", "subscribers.protocol_version=" + v}, more...)
}

// takeOver returns a during function that, after wait, connects as each of the n clients
// prefix0..prefix(n-1) with their session kept (Clean Session 0; at 5.0 a Session Expiry
// of 300 s), reads the CONNACK, holds the connection 300 ms acknowledging nothing the
// broker sends, and closes it: the broker ends the client's own connection (a session
// taken over), and the messages it sent the intruder stay unacknowledged in the session,
// for the client to get again when it reconnects.
func takeOver(prefix string, n int, v string, wait time.Duration) func(addr string) error {
	return func(addr string) error {
		time.Sleep(wait)
		ver := codec.V311
		if v == "5" {
			ver = codec.V5
		}
		var errs []error
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := intrude(addr, fmt.Sprintf("%s%d", prefix, i), ver); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

func intrude(addr, id string, v codec.Version) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck
	p := codec.Connect{ClientID: []byte(id), KeepAlive: 30}
	if v == codec.V5 {
		p.Props.Set(codec.PropSessionExpiry)
		p.Props.SessionExpiry = 300
	}
	if _, err := c.Write(codec.AppendConnect(nil, &p, v)); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return fmt.Errorf("%s: no CONNACK: %w", id, err)
	}
	if hdr[0] != 0x20 {
		return fmt.Errorf("%s: the answer to CONNECT is not a CONNACK: % x", id, hdr)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, _ = io.Copy(io.Discard, c) // what the session held, unacknowledged
	return nil
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
