package bench

import (
	"os"
	"testing"

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
