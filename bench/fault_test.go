package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
)

// checkAccounts asserts the identities every result holds: every scheduled message is
// published or unsent, every QoS 1/2 message written acknowledged, refused or
// unacknowledged, every expected copy received, lost or in flight at the end.
func checkAccounts(t *testing.T, m result.Messages) {
	t.Helper()
	var unsent int64
	for _, n := range m.Unsent {
		unsent += n
	}
	if m.Scheduled == 0 || m.Scheduled != m.Published+m.UnsentTotal || unsent != m.UnsentTotal {
		t.Errorf("scheduled %d != published %d + unsent %d %v", m.Scheduled, m.Published, m.UnsentTotal, m.Unsent)
	}
	if m.PublishedQoS12 != m.Acked+m.RefusedTotal+m.Unacknowledged || m.Unacknowledged < m.InFlightDropped {
		t.Errorf("QoS 1/2: published %d != acked %d + refused %d + unacknowledged %d %v (in flight dropped %d of them)",
			m.PublishedQoS12, m.Acked, m.RefusedTotal, m.Unacknowledged, m.UnacknowledgedBy, m.InFlightDropped)
	}
	if m.Expected != m.Received+m.Lost+m.OwedAtEnd+m.InFlightAtEnd+m.InFlightLost {
		t.Errorf("expected %d != received %d + lost %d + owed at the end %d + in flight at the end %d + in flight when a session ended %d",
			m.Expected, m.Received, m.Lost, m.OwedAtEnd, m.InFlightAtEnd, m.InFlightLost)
	}
}

// TestBrokerKilledAndRestarted: Mosquitto SIGKILLed 2 s into a 9 s P2P run and restarted
// 1 s later, clients reconnecting with backoff. Every scheduled message is accounted for
// (for P2P, one copy each: scheduled = received + lost + in flight at the end + unsent),
// what fell due while the publishers were disconnected is unsent as such, the broker is
// reported as having stalled them, and the client is not called saturated.
func TestBrokerKilledAndRestarted(t *testing.T) {
	tier.Timing(t)
	if testing.Short() {
		t.Skip("kills and restarts Mosquitto during a 9 s run")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, qos := range []string{"0", "1"} {
		t.Run("qos"+qos, func(t *testing.T) {
			res := runWith(t, m.Addr, "quick-p2p-100", map[string]string{
				"publishers.qos": qos, "subscribers.qos": qos, "parameters.reconnect": "backoff",
				"parameters.duration_sec": "9s", "parameters.warmup_sec": "1s",
			}, func() {
				time.Sleep(2500 * time.Millisecond) // connect phase, then 2 s of publishing
				m.Kill(t)
				time.Sleep(time.Second)
				m.Restart(t)
			})
			msg := res.Messages
			checkAccounts(t, msg)
			if msg.Scheduled != msg.Received+msg.Lost+msg.InFlightAtEnd+msg.InFlightLost+msg.UnsentTotal {
				t.Errorf("P2P: scheduled %d != received %d + lost %d + in flight %d + %d + unsent %d",
					msg.Scheduled, msg.Received, msg.Lost, msg.InFlightAtEnd, msg.InFlightLost, msg.UnsentTotal)
			}
			if qos == "1" && msg.Acked+msg.InFlightDropped != msg.Published {
				// Every QoS 1 message written was acknowledged, or was in flight when the
				// kill ended its session: lost counts only what the broker acknowledged
				// and then lost with its queues (Mosquitto has no persistence here).
				t.Errorf("QoS 1: acked %d + unacknowledged when the session ended %d != published %d",
					msg.Acked, msg.InFlightDropped, msg.Published)
			}
			if res.Connections.Dropped == 0 || res.Connections.Reconnected == 0 {
				t.Errorf("dropped %d, reconnected %d: the kill did not reach the clients", res.Connections.Dropped, res.Connections.Reconnected)
			}
			if msg.Unsent["disconnected"] < 100 {
				t.Errorf("unsent %v: the outage left no disconnected publishers' messages", msg.Unsent)
			}
			if saturatedByItself(t, res) {
				tier.Assert(t).Errorf("saturated: %v", res.Client.SaturationEvidence)
			}
			b := res.BrokerStalled
			if !b.Stalled || b.HeldS["disconnected"] < 50 || b.Publishers < 100 {
				t.Errorf("broker_stalled %+v: want 100 publishers held for about 1-3 s each", b)
			}
			if msg.UnexpectedTotal != 0 || msg.Unmeasured != 0 {
				t.Errorf("unexpected %v, unmeasured %d", msg.Unexpected, msg.Unmeasured)
			}
			t.Logf("scheduled %d published %d unsent %v received %d lost %d in flight %d/%d (dropped %d); held %v",
				msg.Scheduled, msg.Published, msg.Unsent, msg.Received, msg.Lost, msg.InFlightAtEnd, msg.InFlightLost, msg.InFlightDropped, b.HeldS)
		})
	}
}

// TestPersistentSessionsAcrossRestart: QoS 1 with clean session 0 on both sides, Mosquitto
// with persistence, stopped and restarted 2 s into the run: the broker keeps the sessions,
// the publishers re-send what was in flight, the subscribers get what was queued for them,
// and nothing is lost.
func TestPersistentSessionsAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts Mosquitto during an 8 s run")
	}
	dir := t.TempDir()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{
		"persistence true", "persistence_location " + dir + "/", "autosave_interval 1"}})
	res := runWith(t, m.Addr, "quick-p2p-100", map[string]string{
		"publishers.clean_session": "false", "subscribers.clean_session": "false",
		"parameters.reconnect": "backoff", "parameters.duration_sec": "8s", "parameters.warmup_sec": "1s",
		"parameters.drain_sec": "5s",
	}, func() {
		time.Sleep(2500 * time.Millisecond)
		m.Stop(t)
		m.Restart(t)
	})
	msg := res.Messages
	checkAccounts(t, msg)
	if res.Connections.Reconnected < 200 {
		t.Errorf("reconnected %d of 200 clients", res.Connections.Reconnected)
	}
	if msg.Lost != 0 || msg.InFlightAtEnd != 0 || msg.InFlightDropped != 0 {
		t.Errorf("lost %d, in flight at the end %d, in-flight dropped %d: the sessions did not carry them",
			msg.Lost, msg.InFlightAtEnd, msg.InFlightDropped)
	}
	if b := res.Behaviour(result.BehaviourSessionNotKept); b != nil {
		t.Errorf("broker_behaviour %+v: Mosquitto kept every session", *b)
	}
	t.Logf("scheduled %d published %d unsent %v received %d duplicated %d out of order %d",
		msg.Scheduled, msg.Published, msg.Unsent, msg.Received, msg.Duplicated, msg.OutOfOrder)
}

// TestSessionNotKeptAcrossRestart: clean session 0 on both sides, Mosquitto without
// persistence stopped and restarted 2 s into the run: every client's reconnect is answered
// with Session Present 0, and the result says the broker did not keep 200 sessions. At 5.0
// with a Session Expiry of 300 s the same; with none (0: the session ends with the
// connection) nothing is said, the broker did as asked.
func TestSessionNotKeptAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts Mosquitto during 4 s runs")
	}
	for _, c := range []struct {
		name  string
		sets  map[string]string
		count int64
	}{
		{"v4", nil, 200},
		{"v5-expiry-300", map[string]string{"publishers.protocol_version": "5", "subscribers.protocol_version": "5",
			"publishers.connect_properties":  `[{"name":"session_expiry_interval","value":300}]`,
			"subscribers.connect_properties": `[{"name":"session_expiry_interval","value":300}]`}, 200},
		{"v5-expiry-0", map[string]string{"publishers.protocol_version": "5", "subscribers.protocol_version": "5"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := testbroker.StartMosquitto(t, testbroker.Options{})
			sets := map[string]string{"publishers.clean_session": "false", "subscribers.clean_session": "false",
				"publishers.qos": "1", "subscribers.qos": "1",
				"parameters.reconnect": "backoff", "parameters.duration_sec": "4s", "parameters.warmup_sec": "1s"}
			for k, v := range c.sets {
				sets[k] = v
			}
			res := runWith(t, m.Addr, "quick-p2p-100", sets, func() {
				time.Sleep(2 * time.Second)
				m.Stop(t)
				m.Restart(t)
			})
			checkAccounts(t, res.Messages)
			if res.Connections.Reconnected < 200 {
				t.Fatalf("reconnected %d of 200 clients", res.Connections.Reconnected)
			}
			b := res.Behaviour(result.BehaviourSessionNotKept)
			switch {
			case c.count == 0 && b != nil:
				t.Errorf("broker_behaviour %+v: sessions without an expiry end with their connection", *b)
			case c.count > 0 && (b == nil || b.Count != c.count):
				t.Errorf("broker_behaviour %+v: want session_not_kept for %d clients", res.BrokerBehaviour, c.count)
			case b != nil:
				t.Logf("%s: %s", b.What, b.Evidence)
			}
		})
	}
}

// TestForeignPublisher: text messages from mosquitto_pub on a subscribed topic during a
// P2P run are unmeasured, never duplicates, and hide no loss.
func TestForeignPublisher(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	pub, err := exec.LookPath("mosquitto_pub")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_pub is not installed; .ci/run installs it (apt-get install -y mosquitto-clients)")
		}
		t.Skip("no mosquitto_pub (apt-get install -y mosquitto-clients)")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	host, port, _ := strings.Cut(m.Addr, ":")
	lines := strings.Repeat("hello from another client, message number 12345\n", 42)
	res := runWith(t, m.Addr, "quick-p2p-100", map[string]string{
		"parameters.duration_sec": "3s", "parameters.warmup_sec": "1s"}, func() {
		time.Sleep(1500 * time.Millisecond)
		c := exec.Command(pub, "-h", host, "-p", port, "-q", "1", "-t", "quick/p2p/3", "-l")
		c.Stdin = strings.NewReader(lines)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("mosquitto_pub: %v: %s", err, out)
		}
	})
	msg := res.Messages
	checkAccounts(t, msg)
	if msg.Unmeasured != 42 || msg.Duplicated != 0 || msg.Lost != 0 || msg.Received != msg.Expected {
		t.Errorf("unmeasured %d (want 42), duplicated %d, lost %d, received %d of %d",
			msg.Unmeasured, msg.Duplicated, msg.Lost, msg.Received, msg.Expected)
	}
}

// TestLiarBrokerLosesEverything: a server that acknowledges every PUBLISH, delivers none
// and sends 8 strays from an unknown publisher to each subscriber: every expected copy is
// lost, the strays are unexpected, and none offsets a loss.
func TestLiarBrokerLosesEverything(t *testing.T) {
	l := testbroker.StartLiar(t, 8, time.Second) // strays while publishing
	res := runWith(t, l.Addr, "quick-p2p-100", map[string]string{
		"parameters.duration_sec": "1500ms", "parameters.warmup_sec": "500ms", "parameters.drain_sec": "300ms"}, nil)
	msg := res.Messages
	checkAccounts(t, msg)
	if msg.Received != 0 || msg.Lost != msg.Expected || msg.Expected == 0 || msg.Acked != msg.Published {
		t.Errorf("received %d, lost %d of %d expected, acked %d of %d", msg.Received, msg.Lost, msg.Expected, msg.Acked, msg.Published)
	}
	if msg.Unexpected["unknown_publisher"] != 800 || msg.Duplicated != 0 {
		t.Errorf("unexpected %v (want 800 unknown_publisher), duplicated %d", msg.Unexpected, msg.Duplicated)
	}
	if err := res.EvaluateThresholds([]string{"messages.lost==0"}); err != nil || len(res.FailedThresholds()) != 1 {
		t.Errorf("threshold messages.lost==0 on a run that lost everything: %v %+v", err, res.Thresholds)
	}
}
