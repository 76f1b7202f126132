package bench

import (
	"fmt"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
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
