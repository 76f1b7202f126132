package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// TestFailedCountsClientsNotAttempts: Mosquitto takes about 90 of 100 clients
// (max_connections 90: it closes the others before their CONNACK), is killed once they are
// connected and restarted 1.5 s later, the clients reconnecting with backoff.
// connections.failed is the clients that never connected (target - established), however
// many reconnect attempts the outage refused;
// those are counted apart (connections.reconnect_failed, by cause), and the summary says
// both.
func TestFailedCountsClientsNotAttempts(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"max_connections 90"}})
	out := filepath.Join(t.TempDir(), "res.json")
	sp := quick("quick-conn-100", m.Addr, sets("parameters.reconnect", "backoff")...)
	sp.NoCheck, sp.Duration, sp.Outputs.Out = true, spec.Duration(8*time.Second), out
	testbroker.Binary(t, "../cmd/mqblast")
	g := goSpec(context.Background(), t, sp)
	time.Sleep(2500 * time.Millisecond) // the connect phase (1 s at 100/s), then held
	m.Kill(t)
	time.Sleep(1500 * time.Millisecond) // the first reconnect attempts come 0.5-1 s after the drop
	m.Restart(t)
	r := g.wait()
	if r.err != nil || r.res == nil {
		t.Fatalf("%v\n%s", r.err, r.said())
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.CheckDocument(doc); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
	}
	c := r.res.Connections
	var failed int64
	for _, n := range c.FailedBy {
		failed += n
	}
	for _, n := range c.Refused {
		failed += n
	}
	if c.Established < 80 || c.Established == 100 || c.Failed != 100-c.Established || failed != c.Failed || c.Dropped != c.Established {
		t.Errorf("established %d, failed %d (refused %v, by cause %v), dropped %d: want failed = the clients that never connected, every one established dropped",
			c.Established, c.Failed, c.Refused, c.FailedBy, c.Dropped)
	}
	if c.ReconnectFailed < c.Dropped/2 || c.ReconnectFailedBy["refused"] == 0 || c.Reconnected == 0 {
		t.Errorf("reconnect_failed %d %v, reconnected %d: the outage refused no reconnect attempt, or none came back",
			c.ReconnectFailed, c.ReconnectFailedBy, c.Reconnected)
	}
	var ivFailed int64
	for _, iv := range r.res.Intervals {
		ivFailed += iv.Failed
	}
	if ivFailed != c.Failed {
		t.Errorf("the intervals' failed add to %d, the run's is %d", ivFailed, c.Failed)
	}
	if got, want := summaryLine(r.stdout, "connections"), fmt.Sprintf("%d of 100 established, %d failed, %d dropped while held", c.Established, 100-c.Established, c.Dropped); got != want {
		t.Errorf("summary's connections line %q, want %q", got, want)
	}
	if got, want := summaryLine(r.stdout, "reconnected"), fmt.Sprintf("; %d reconnect attempts failed", c.ReconnectFailed); !strings.Contains(got, want) {
		t.Errorf("summary's reconnected line %q, want it to say %q", got, want)
	}
	t.Logf("%d reconnected, %d reconnect attempts failed %v", c.Reconnected, c.ReconnectFailed, c.ReconnectFailedBy)
}

// summaryLine is the text of the summary's line labelled label, "" without one.
func summaryLine(summary, label string) string {
	for l := range strings.Lines(summary) {
		if rest, ok := strings.CutPrefix(l, label+"  "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
