package bench

import (
	"bytes"
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/broker"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/report"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
	"github.com/mqblast/mqblast/watch"
)

// builtin returns a built-in scenario with overrides.
func builtin(t *testing.T, name string, sets map[string]string) *scenario.Scenario {
	t.Helper()
	s, ok := scenario.Builtin(name)
	if !ok {
		t.Fatalf("no built-in %q", name)
	}
	for k, v := range sets {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// runPlanned runs s against broker while during (a fault to inject, or nil) runs beside
// it, and returns the result.
func runPlanned(t *testing.T, broker string, s *scenario.Scenario, during func()) *result.Result {
	t.Helper()
	return runFull(t, broker, s, during, nil)
}

// runWatched runs s against broker with the host and broker watched by w.
func runWatched(t *testing.T, broker string, s *scenario.Scenario, w *watch.Watch) *result.Result {
	t.Helper()
	return runFull(t, broker, s, nil, w)
}

// testRunner prepares the run of s against broker.
func testRunner(t *testing.T, broker string, s *scenario.Scenario) *Runner {
	t.Helper()
	if err := s.SetBrokers([]string{broker}); err != nil {
		t.Fatal(err)
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(p, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runFull runs s against broker, with during beside it and watched by w (both optional).
func runFull(t *testing.T, broker string, s *scenario.Scenario, during func(), w *watch.Watch) *result.Result {
	t.Helper()
	r := testRunner(t, broker, s)
	r.Watch = w
	return runRunner(t, r, during)
}

// runRunner runs r with during beside it (optional) and returns the result.
func runRunner(t *testing.T, r *Runner, during func()) *result.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if during != nil {
			during()
		}
	}()
	res, err := r.Run(ctx)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	audited(t, res)
	return res
}

// audited fails t when res's document breaks an accounting identity (report.Audit, which
// the binary runs on every document it writes).
func audited(t *testing.T, res *result.Result) {
	t.Helper()
	var doc, warn bytes.Buffer
	if err := res.WriteJSON(&doc); err != nil {
		t.Error(err)
		return
	}
	if err := report.Audit(&warn, doc.Bytes(), "bench."+t.Name()); err != nil {
		t.Errorf("the result breaks an accounting identity:\n%v", err)
	}
}

// runScenario runs a built-in scenario with overrides against broker.
func runScenario(t *testing.T, broker, name string, sets map[string]string) *result.Result {
	t.Helper()
	return runPlanned(t, broker, builtin(t, name, sets), nil)
}

// runWith runs a built-in scenario with overrides against broker while during runs.
func runWith(t *testing.T, broker, name string, sets map[string]string, during func()) *result.Result {
	t.Helper()
	return runPlanned(t, broker, builtin(t, name, sets), during)
}

// runJSON runs the scenario in data against broker while during runs beside it.
func runJSON(t *testing.T, broker, data string, during func()) *result.Result {
	t.Helper()
	s, err := scenario.Parse("test.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return runPlanned(t, broker, s, during)
}

// twoBrokers starts a Mosquitto and the embedded broker for the test, in that order.
func twoBrokers(t *testing.T) []struct{ name, addr string } {
	t.Helper()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	emb, err := broker.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	return []struct{ name, addr string }{{"mosquitto", m.Addr}, {"embedded", emb.Addr()}}
}

// TestMessagingExactCounts runs every messaging type at QoS 0, 1 and 2 at modest rates
// against Mosquitto and the embedded broker: every message is accounted for, and at QoS 1
// and 2 every expected copy arrives exactly once and every publish is acknowledged.
func TestMessagingExactCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against two brokers for ~60 s")
	}
	for _, b := range twoBrokers(t) {
		bname, addr := b.name, b.addr
		t.Run(bname, func(t *testing.T) {
			t.Parallel() // the two brokers' runs at once: their clients and topics do not meet
			for _, name := range []string{"quick-p2p-100", "quick-fanin-100-1", "quick-fanout-1-100", "quick-sharedsub-100-5", "quick-roundtrip-10"} {
				for _, qos := range []int{0, 1, 2} {
					t.Run(fmt.Sprintf("%s/qos%d", name, qos), func(t *testing.T) {
						q := fmt.Sprint(qos)
						sets := map[string]string{"publishers.qos": q, "subscribers.qos": q,
							"parameters.duration_sec": "1500ms", "parameters.warmup_sec": "500ms"}
						if name == "quick-roundtrip-10" { // one group: each client subscribes to its own topic
							delete(sets, "subscribers.qos")
						}
						res := runScenario(t, addr, name, sets)
						msg := res.Messages
						if msg.Published == 0 || msg.Expected == 0 || msg.Subscribed == 0 || msg.SubscribeFailed != 0 {
							t.Fatalf("nothing happened: %+v", msg)
						}
						// Every message is accounted for: received once, or lost.
						if msg.Received-msg.Duplicated+msg.Lost != msg.Expected {
							t.Errorf("received %d - duplicated %d + lost %d != expected %d", msg.Received, msg.Duplicated, msg.Lost, msg.Expected)
						}
						if qos > 0 {
							if msg.Received != msg.Expected || msg.Lost != 0 || msg.Duplicated != 0 || msg.OutOfOrder != 0 {
								t.Errorf("QoS %d: %+v", qos, msg)
							}
							if msg.Acked != msg.Published {
								t.Errorf("acked %d of %d published", msg.Acked, msg.Published)
							}
						}
						if res.LatencyUS.Count == 0 || res.Throughput.ReceivePerS == 0 {
							t.Errorf("no measured messages: latency %+v throughput %+v", res.LatencyUS, res.Throughput)
						}
					})
				}
			}
		})
	}
}

// TestMessagingV5 runs P2P and Fan-In over MQTT 5.0 at QoS 1 with CONNECT and PUBLISH
// properties from the scenario: the publishers use topic alias 1 after their first message
// (Mosquitto allows 10), and every copy still arrives.
func TestMessagingV5(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, name := range []string{"quick-p2p-100", "quick-fanin-100-1"} {
		t.Run(name, func(t *testing.T) {
			res := runScenario(t, m.Addr, name, map[string]string{
				"publishers.protocol_version": "5", "subscribers.protocol_version": "5",
				"publishers.qos": "1", "subscribers.qos": "1",
				"parameters.duration_sec": "1500ms", "parameters.warmup_sec": "500ms",
				"publishers.publish_properties": `[{"name":"message_expiry_interval","value":60},` +
					`{"name":"user_property","key":"run","value":"v5"}]`,
				"publishers.connect_properties": `[{"name":"session_expiry_interval","value":0},` +
					`{"name":"receive_maximum","value":100}]`,
			})
			if msg := res.Messages; msg.Received != msg.Expected || msg.Lost != 0 || msg.Acked != msg.Published {
				t.Fatalf("messages %+v", msg)
			}
		})
	}
}

// TestCoordinatedOmission stops the broker (SIGSTOP) for 500 ms during a 1,000 msg/s run:
// latency from the due time must show the stall, and the publishers keep their schedule
// (they send late, they do not skip).
func TestCoordinatedOmission(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("runs against Mosquitto for ~4 s")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	go func() {
		time.Sleep(2 * time.Second) // connect, subscribe, warm-up, then into the measure window
		_ = m.Cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(500 * time.Millisecond)
		_ = m.Cmd.Process.Signal(syscall.SIGCONT)
	}()
	res := runScenario(t, m.Addr, "quick-p2p-100", map[string]string{
		"publishers.qos": "1", "subscribers.qos": "1", "parameters.duration_sec": "3s",
		"parameters.warmup_sec": "500ms", "parameters.payload_size": "32",
	})
	lat, raw := res.LatencyUS, res.LatencyRaw
	t.Logf("latency %+v\nraw %+v\nthroughput %+v", lat, raw, res.Throughput)
	if lat.P99 < 250_000 {
		t.Errorf("corrected p99 %d µs does not show the 500 ms stall", lat.P99)
	}
	if got := res.Throughput.PublishPerS; got < 900 || got > 1100 {
		tm.Errorf("publish rate %.0f/s over the window: the schedule of 1000/s was not kept", got)
	}
	if res.Messages.Lost != 0 || res.Messages.Received != res.Messages.Expected {
		t.Errorf("messages %+v", res.Messages)
	}
	if raw.Count == 0 {
		t.Error("no raw latency with a 32-byte payload")
	}
	// The windows (the default in-flight limit) outlast the stall and the sockets take what
	// falls due, so the client keeps its own schedule: no lateness of the stall's size.
	if lag := res.Client.ScheduleLagUS; lag.Max > 200_000 {
		tm.Errorf("schedule lag %+v: the client fell behind with the broker", lag)
	}
}

// TestRoundTrip64K: the small-VM ping test (each client publishes 64 KiB to its own topic
// and receives it back) works end to end.
func TestRoundTrip64K(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	res := runScenario(t, m.Addr, "roundtrip-200-64K", map[string]string{
		"parameters.duration_sec": "3s", "parameters.warmup_sec": "1s", "parameters.connection_rate": "1000",
	})
	msg := res.Messages
	t.Logf("messages %+v latency %+v", msg, res.LatencyUS)
	if msg.Published < 400 || msg.Received != msg.Expected || msg.Expected != msg.Published || msg.Lost != 0 {
		t.Fatalf("messages %+v", msg)
	}
	if res.LatencyRaw.Count == 0 || res.LatencyUS.Count == 0 {
		t.Errorf("latency %+v raw %+v", res.LatencyUS, res.LatencyRaw)
	}
}
