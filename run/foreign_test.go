package run

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// foreignP2P runs quick-p2p-100 for 3 s (1 s warm-up) at QoS 0 and at QoS 1 against f.
// Each run must succeed with one result document whose
// accounting identities hold (result.CheckDocument), and the broker must have delivered;
// what it did (received, lost, duplicated, errors) is logged either way, so that a
// broker's failure is reported with its figures, not hidden behind a skip.
func foreignP2P(t *testing.T, f *testbroker.Foreign) map[int]*result.Result {
	t.Helper()
	out := map[int]*result.Result{}
	for _, qos := range []int{0, 1} {
		q := fmt.Sprint(qos)
		sp := quick("quick-p2p-100", f.Addr, "parameters.warmup_sec=1", "publishers.qos="+q, "subscribers.qos="+q)
		sp.Duration, sp.NoCheck, sp.Outputs.Format = spec.Duration(3*time.Second), true, "json"
		r := doSpec(t, sp)
		if r.err != nil {
			t.Errorf("%s %s, QoS %d: %v\nstderr: %s", f.Kind, f.Version, qos, r.err, tailText(r.stderr, 3000))
		}
		if r.res == nil {
			continue
		}
		if err := result.CheckDocument([]byte(r.stdout)); err != nil {
			t.Errorf("%s %s, QoS %d: the result's accounting does not hold:\n%v", f.Kind, f.Version, qos, err)
		}
		res := r.res
		out[qos] = res
		m := res.Messages
		t.Logf("%s %s, QoS %d: published %d, acked %d, expected %d, received %d, lost %d, in flight at end %d, duplicated %d, out of order %d, unexpected %d; connections %d/%d; errors: %s",
			f.Kind, f.Version, qos, m.Published, m.Acked, m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.Duplicated, m.OutOfOrder,
			m.UnexpectedTotal, res.Connections.Established, res.Connections.Target, errorsText(res))
		if m.Received == 0 {
			t.Errorf("%s %s, QoS %d: nothing arrived of %d published\nstderr: %s", f.Kind, f.Version, qos, m.Published, tailText(r.stderr, 3000))
		}
	}
	return out
}

// errorsText lists a result's errors as kind=count, or "none".
func errorsText(res *result.Result) string {
	if len(res.Errors) == 0 {
		return "none"
	}
	var s []string
	for _, e := range res.Errors {
		s = append(s, fmt.Sprintf("%s=%d", e.Kind, e.Count))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// tailText is the last n bytes of s.
func tailText(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// TestAedesP2P: quick-p2p-100 at QoS 0 and 1 against a real aedes (testbroker.StartAedes):
// every result's accounting holds, and the broker delivers.
func TestAedesP2P(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t, "../cmd/mqblast") // first: under -race it skips before the broker starts
	f := testbroker.StartAedes(t)
	foreignP2P(t, f)
}

// TestGMQTTP2P: quick-p2p-100 at QoS 0 and 1 against a real gmqtt (testbroker.StartGMQTT):
// every result's accounting holds, and the broker delivers.
func TestGMQTTP2P(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t, "../cmd/mqblast") // first: under -race it skips before the broker starts
	f := testbroker.StartGMQTT(t)
	foreignP2P(t, f)
}

// TestRabbitMQP2P: quick-p2p-100 at QoS 0 and 1 against a real rabbitmq (testbroker.StartRabbitMQ):
// every result's accounting holds, and the broker delivers. At QoS 2 it grants the
// subscriptions QoS 1 and answers QoS 2 PUBLISHes with PUBACK: the result says both, and
// counts nothing lost or duplicated.
func TestRabbitMQP2P(t *testing.T) {
	t.Parallel()
	testbroker.Binary(t, "../cmd/mqblast") // first: under -race it skips before the broker starts
	f := testbroker.StartRabbitMQ(t)
	foreignP2P(t, f)

	r := doSpec(t, quickP2P(f.Addr, "4", "publishers.qos=2", "subscribers.qos=2"))
	if r.err != nil {
		t.Fatalf("QoS 2: %v\n%s", r.err, r.stderr)
	}
	res := checkDoc(t, r)
	m := res.Messages
	if m.Published < 1000 || m.Lost != 0 || m.Duplicated != 0 || m.Received != m.Expected || m.Acked != m.Published {
		t.Errorf("QoS 2: published %d, acked %d, expected %d, received %d, lost %d, duplicated %d",
			m.Published, m.Acked, m.Expected, m.Received, m.Lost, m.Duplicated)
	}
	if b := res.Behaviour("granted_qos_1_for_qos_2"); b == nil || b.Count != 100 {
		t.Errorf("QoS 2: broker_behaviour %+v, want granted_qos_1_for_qos_2 100", res.BrokerBehaviour)
	}
	if b := res.Behaviour("puback_for_qos_2"); b == nil || b.Count != m.Published {
		t.Errorf("QoS 2: broker_behaviour %+v, want puback_for_qos_2 %d", res.BrokerBehaviour, m.Published)
	}
	sp := quickP2P(f.Addr, "4", "publishers.qos=2", "subscribers.qos=2")
	sp.Outputs.Format = "text"
	text := doSpec(t, sp)
	if !strings.Contains(text.stdout, "granted QoS 1 for 100 subscriptions that asked QoS 2") ||
		!strings.Contains(text.stdout, "QoS 2 messages with PUBACK, QoS 1's acknowledgement") {
		t.Errorf("QoS 2 summary:\n%s", text.stdout)
	}
}
