package run

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// The tests of QoS 1/2 messages whose acknowledgement never comes: every one written is
// acknowledged, refused or counted unacknowledged by the step that did not come, the
// document adds up, the summary says so, and a run the broker acknowledged nothing of
// fails.

// unackedRun runs 3 publishers at qos, 20 msg/s each for 1 s, against addr in procs
// processes: the summary on stdout, the document in a file, which must add up
// (result.CheckDocument).
func unackedRun(t *testing.T, addr string, qos int, procs spec.Procs) ran {
	t.Helper()
	out := filepath.Join(t.TempDir(), "res.json")
	sp := pubSpec(addr, "x/$clientindex", sets("publishers.client_count", 3, "publishers.qos", qos,
		"parameters.publish_rate", 20, "parameters.duration_sec", 1, "parameters.drain_sec", "300ms")...)
	sp.NoCheck, sp.Outputs.Format, sp.Outputs.Out, sp.Procs = true, "text", out, procs
	r := doSpec(t, sp)
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no document: %v\n%s", err, r.said())
	}
	if err := result.CheckDocument(doc); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
	}
	if r.res == nil {
		t.Fatalf("no result: %v\n%s", r.err, r.said())
	}
	return r
}

// TestBrokerNeverAcknowledges: a broker that answers CONNECT and never sends the PUBACK
// (QoS 1) or the PUBREC (QoS 2), or sends the PUBREC and never the PUBCOMP: every message
// published is counted unacknowledged by that step, in one process and added across two,
// the summary's UNACKNOWLEDGED line says it, and the run fails (no_acknowledgement, exit
// 1) rather than read as clean.
func TestBrokerNeverAcknowledges(t *testing.T) {
	t.Parallel()
	never := func(uint32, uint32) bool { return false }
	for _, c := range []struct {
		name  string
		qos   int
		sc    *testbroker.Script
		ack   func(pub, seq uint32) bool
		step  string
		procs spec.Procs
	}{
		{"qos1-no-puback", 1, nil, never, result.UnackedNoPuback, 1},
		{"qos1-no-puback-2procs", 1, nil, never, result.UnackedNoPuback, 2},
		{"qos2-no-pubrec", 2, nil, never, result.UnackedNoPubrec, 1},
		{"qos2-no-pubcomp", 2, &testbroker.Script{NoPubcomp: true}, nil, result.UnackedNoPubcomp, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rt := testbroker.StartScripted(t, c.sc, c.ack, nil)
			r := unackedRun(t, rt.Addr, c.qos, c.procs)
			m := r.res.Messages
			if m.Published < 30 || m.PublishedQoS12 != m.Published || m.Acked != 0 || m.RefusedTotal != 0 ||
				m.Unacknowledged != m.Published || m.UnacknowledgedBy[c.step] != m.Published {
				t.Errorf("published %d (QoS 1/2 %d): acked %d, refused %d, unacknowledged %d %v; want all %s",
					m.Published, m.PublishedQoS12, m.Acked, m.RefusedTotal, m.Unacknowledged, m.UnacknowledgedBy, c.step)
			}
			words := map[string]string{result.UnackedNoPuback: "got no PUBACK", result.UnackedNoPubrec: "got no PUBREC",
				result.UnackedNoPubcomp: "got a PUBREC and no PUBCOMP"}[c.step]
			head := fmt.Sprintf("%d of %d QoS 1/2 publishes never acknowledged (by the end of the run or of their session): %d %s",
				m.Published, m.Published, m.Published, words)
			if got := summaryLine(r.stdout, "UNACKNOWLEDGED"); got != head {
				t.Errorf("summary's UNACKNOWLEDGED line %q, want %q:\n%s", got, head, r.stdout)
			}
			if !r.failed() || !strings.Contains(r.said(), "no_acknowledgement: the broker acknowledged none: ") {
				t.Errorf("a run the broker acknowledged nothing of: err %v, want it failed with no_acknowledgement\n%s", r.err, r.said())
			}
		})
	}
}

// TestBrokerAcknowledgesSome: a broker that acknowledges the first 5 messages of each
// publisher and none after: the run ends (exit 0: the broker answered), and the rest are
// counted and said unacknowledged.
func TestBrokerAcknowledgesSome(t *testing.T) {
	t.Parallel()
	rt := testbroker.StartRouter(t, func(_, seq uint32) bool { return seq < 5 }, nil)
	r := unackedRun(t, rt.Addr, 1, 1)
	m := r.res.Messages
	if r.err != nil {
		t.Errorf("err %v: the broker acknowledged some\n%s", r.err, r.said())
	}
	if m.Acked != 15 || m.Unacknowledged != m.Published-15 || m.UnacknowledgedBy[result.UnackedNoPuback] != m.Unacknowledged {
		t.Errorf("published %d: acked %d (want 15), unacknowledged %d %v", m.Published, m.Acked, m.Unacknowledged, m.UnacknowledgedBy)
	}
	if !strings.HasPrefix(summaryLine(r.stdout, "UNACKNOWLEDGED"), fmt.Sprintf("%d of %d QoS 1/2 publishes never acknowledged", m.Unacknowledged, m.Published)) {
		t.Errorf("summary:\n%s", r.stdout)
	}
}

// TestMosquittoAcknowledgesAll: Mosquitto acknowledges every QoS 1 and 2 message: none is
// unacknowledged, and the summary has no UNACKNOWLEDGED line.
func TestMosquittoAcknowledgesAll(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, qos := range []int{1, 2} {
		r := unackedRun(t, m.Addr, qos, 1)
		msg := r.res.Messages
		if r.err != nil || msg.Published < 30 || msg.PublishedQoS12 != msg.Published || msg.Acked != msg.Published ||
			msg.Unacknowledged != 0 || len(msg.UnacknowledgedBy) != 0 || summaryLine(r.stdout, "UNACKNOWLEDGED") != "" {
			t.Errorf("QoS %d: err %v, published %d (QoS 1/2 %d), acked %d, unacknowledged %d %v\n%s",
				qos, r.err, msg.Published, msg.PublishedQoS12, msg.Acked, msg.Unacknowledged, msg.UnacknowledgedBy, r.stdout)
		}
	}
}
