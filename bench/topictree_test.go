package bench

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestTopicTreeWildcards: scenario/testdata/good/topic-tree.json against Mosquitto: 50
// devices each publish 40 messages at Poisson arrivals to their place in a tree of sites
// and lines (site/$clientindex%5/line/$clientindex%2/dev/$clientindex), and two more
// publish in bursts to topics no subscriber of the run takes: 2,080 messages, every
// expected copy received (expected = received, 0 lost), and each subscribing group
// received exactly its share: site 3's 10 devices (400 copies), line 1's 25 devices for
// each of 2 clients (2,000), the whole tree (2,000), device 14 (40).
func TestTopicTreeWildcards(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	data, err := os.ReadFile("../scenario/testdata/good/topic-tree.json")
	if err != nil {
		t.Fatal(err)
	}
	res := runJSON(t, m.Addr, string(data), nil)
	msg := res.Messages
	if msg.Published != 2080 || msg.Expected != 4440 || msg.Received != msg.Expected || msg.Lost != 0 || msg.Duplicated != 0 {
		t.Errorf("published %d expected %d received %d lost %d duplicated %d; want 2080, 4440, all received",
			msg.Published, msg.Expected, msg.Received, msg.Lost, msg.Duplicated)
	}
	want := map[string]int64{"site3": 400, "line1": 2000, "all": 2000, "one": 40}
	for _, g := range res.Groups {
		if w, ok := want[g.Name]; ok && g.Delivered != w {
			t.Errorf("group %s: %d copies delivered, want %d", g.Name, g.Delivered, w)
		}
		for k, n := range g.Messages.Unexpected {
			if n != 0 {
				t.Errorf("group %s: %d unexpected %s", g.Name, n, k)
			}
		}
		t.Logf("group %s: delivered %d", g.Name, g.Delivered)
	}
}

// topicCycleRun: 6 devices each cycle over three topics of their own (a range); the run's
// subscribers take whole devices: one subscriber per device (cyc/$clientindex/+) and one
// of everything.
const topicCycleRun = `{
  "name": "cycle",
  "groups": [
    {"name": "devices", "behaviours": "publish", "client_count": 6, "qos": 1, "topics": "cyc/$clientindex/ch{1..3}"},
    {"name": "each", "behaviours": "subscribe", "client_count": 6, "qos": 1, "filters": "cyc/$clientindex/+"},
    {"name": "all", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "cyc/#"}
  ],
  "parameters": {"publish_rate": 30, "duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 2, "message_count": 45}
}`

// TestTopicCycle: a publisher cycles over its topics by sequence number (a subscriber
// outside the run sees message n on ch(n mod 3 + 1)), and the run's wildcard subscribers
// receive every expected copy: 6 x 45 messages, 2 copies each, 0 lost.
func TestTopicCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	outside := arrivalCollector(t, m.Addr, "cyc/#")
	res := runJSON(t, m.Addr, topicCycleRun, nil)
	msg := res.Messages
	if msg.Published != 270 || msg.Expected != 540 || msg.Received != msg.Expected || msg.Lost != 0 {
		t.Errorf("published %d expected %d received %d lost %d; want 270, 540, all received", msg.Published, msg.Expected, msg.Received, msg.Lost)
	}
	var seen map[uint32][]arrivalSeen
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if seen = outside(); len(seen) == 6 && len(seen[5]) == 45 || time.Now().After(deadline) {
			break
		}
	}
	n := 0
	for pub, v := range seen {
		for _, a := range v {
			n++
			if want := fmt.Sprintf("cyc/%d/ch%d", pub, a.seq%3+1); a.topic != want {
				t.Errorf("publisher %d's message %d on %q, want %q", pub, a.seq, a.topic, want)
			}
		}
	}
	if n != 270 {
		t.Errorf("the outside subscriber saw %d messages, want 270", n)
	}
}
