package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// TestRetainedAtResubscribe: ten sensors publish retained messages at QoS q to their own
// topics, once a second; ten apps subscribe to all of them, and a storm 2 s in reconnects
// half the apps with clean sessions. Mosquitto sends each of the five, at its new
// subscription, the ten topics' last messages with the RETAIN flag: 50 copies, counted
// as retained (those the app had: retained_again), never as duplicates or QoS 1
// re-deliveries, and not as kept by a session. The same run without retain has none.
func TestRetainedAtResubscribe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto for 4 s a cell")
	}
	for _, c := range []struct {
		qos    int
		retain bool
	}{{0, true}, {1, true}, {1, false}} {
		t.Run(fmt.Sprintf("qos%d/retain=%v", c.qos, c.retain), func(t *testing.T) {
			t.Parallel()
			m := testbroker.StartMosquitto(t, testbroker.Options{})
			res := runJSON(t, m.Addr, fmt.Sprintf(`{"name": "retained", "groups": [
				{"name": "sensors", "behaviours": "publish", "client_count": 10, "topics": "ret/$clientindex",
				 "qos": %[1]d, "retain": %[2]v, "publish_rate": 1},
				{"name": "apps", "behaviours": "subscribe", "client_count": 10, "filters": "ret/#", "qos": %[1]d,
				 "churn": {"fraction": 0.5, "at_sec": 2, "clean_session": true}}],
				"parameters": {"duration_sec": 4, "warmup_sec": 0, "connection_rate": 1000}}`, c.qos, c.retain), nil)
			msg := res.Messages
			checkAccounts(t, msg)
			if res.Connections.Reconnected != 5 {
				t.Fatalf("reconnected %d: want the storm's 5", res.Connections.Reconnected)
			}
			want := int64(0)
			if c.retain {
				want = 50
			}
			if msg.Retained != want || msg.RetainedAgain > msg.Retained || msg.Duplicated != 0 || msg.Redelivered != 0 ||
				msg.DeliveredOnReturn != 0 || msg.UnexpectedTotal != 0 {
				t.Errorf("retained %d (want %d), of them again %d; duplicated %d, redelivered %d, delivered on return %d, unexpected %v",
					msg.Retained, want, msg.RetainedAgain, msg.Duplicated, msg.Redelivered, msg.DeliveredOnReturn, msg.Unexpected)
			}
			t.Logf("expected %d received %d lost %d retained %d again %d", msg.Expected, msg.Received, msg.Lost, msg.Retained, msg.RetainedAgain)
		})
	}
}

// startMochi starts mochi-mqtt with retained messages available or not: without, it takes
// RETAIN and keeps nothing, silently at 3.1.1.
func startMochi(t *testing.T, retain bool) (*mqtt.Server, string) {
	t.Helper()
	caps := mqtt.NewDefaultServerCapabilities()
	if !retain {
		caps.RetainAvailable = 0
	}
	return testbroker.StartMochi(t, caps)
}

// TestRetainedNotDelivered: quick-p2p-100 with retaining publishers at 1 msg/s; 2.5 s in
// the broker ends every subscriber's connection, and each reconnects and subscribes again,
// after every publisher has published. mochi with retained messages answers each of those
// 100 late subscriptions with its topic's retained message; mochi with retain off keeps
// none, and the result says so (retained_not_delivered: the 100 less the copies due before
// a reconnect that came after it, which could have been retained copies without the flag)
// without a copy counted lost for it. Those copies are the ones in flight across a
// resubscription: a share of the publish interval as large as the publishers' lag behind
// their schedule, 0–2 of 100 at 1 msg/s on a quiet host, 18 with the race detector and
// three CPU hogs on its 2 cores; at 10 msg/s the race pass of CI once saw 55.
func TestRetainedNotDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("two 5 s runs")
	}
	for _, retain := range []bool{true, false} {
		t.Run(fmt.Sprintf("retain=%v", retain), func(t *testing.T) {
			t.Parallel()
			srv, addr := startMochi(t, retain)
			var kicked int
			res := runWith(t, addr, "quick-p2p-100", map[string]string{
				"publishers.retain": "true", "parameters.reconnect": "backoff", "parameters.publish_rate": "1",
				"parameters.duration_sec": "5s", "parameters.warmup_sec": "1s"}, func() {
				time.Sleep(2500 * time.Millisecond)
				for id, cl := range srv.Clients.GetAll() {
					if strings.HasPrefix(id, "quick-sub-") {
						cl.Stop(errors.New("kicked by the test"))
						kicked++
					}
				}
			})
			msg := res.Messages
			checkAccounts(t, msg)
			if kicked != 100 || res.Connections.Reconnected != 100 {
				t.Fatalf("kicked %d subscribers, %d reconnected: want 100", kicked, res.Connections.Reconnected)
			}
			b := res.Behaviour(result.BehaviourRetainedNotDelivered)
			t.Logf("late %d retained %d again %d duplicated %d redelivered %d delivered on return %d",
				msg.LateSubscribed, msg.Retained, msg.RetainedAgain, msg.Duplicated, msg.Redelivered, msg.DeliveredOnReturn)
			if msg.LateSubscribed != 100 {
				t.Errorf("late subscriptions %d, want the 100 resubscriptions", msg.LateSubscribed)
			}
			switch {
			case retain && (msg.Retained < 100 || b != nil):
				t.Errorf("retain on: retained %d (want at least 100), behaviour %+v", msg.Retained, b)
			case !retain && (msg.Retained != 0 || b == nil || b.Count != 100-(msg.Duplicated+msg.Redelivered+msg.DeliveredOnReturn) || b.Count < 50):
				t.Errorf("retain off: retained %d, behaviour %+v; want retained_not_delivered for 100 (duplicated %d, redelivered %d, delivered on return %d)",
					msg.Retained, res.BrokerBehaviour, msg.Duplicated, msg.Redelivered, msg.DeliveredOnReturn)
			case b != nil:
				t.Logf("%s: %s", b.What, b.Evidence)
			}
		})
	}
}
