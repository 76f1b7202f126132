package run

import (
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/run/spec"
)

// TestSharedWithheld: a broker whose 5.0 CONNACK says Shared Subscription Available 0
// gets no SUBSCRIBE for the shared filters: with accept_downgrade the run says mqblast
// withheld them, once (shared_unavailable), and counts no refusal of the broker's, no
// SUBACK reason code, no failed subscription.
func TestSharedWithheld(t *testing.T) {
	t.Parallel()
	sc := &testbroker.Script{Connack: func(_ string, v codec.Version) (codec.Connack, []byte) {
		ca := codec.Connack{}
		if v == codec.V5 {
			ca.Props.Set(codec.PropSharedSubAvailable) // and 0
		}
		return ca, nil
	}}
	rt := testbroker.StartScripted(t, sc, nil, nil)
	sp := quick("quick-sharedsub-100-5", rt.Addr, sets("parameters.warmup_sec", "500ms", "parameters.drain_sec", "500ms",
		"publishers.protocol_version", 5, "subscribers.protocol_version", 5)...)
	sp.NoCheck, sp.Duration, sp.AcceptDowngrade = true, spec.Duration(time.Second), true
	r := doSpec(t, sp)
	if r.res == nil {
		t.Fatalf("no result: %v\n%s", r.err, r.stderr)
	}
	res, said := r.res, r.stdout+r.said()
	if b := res.Behaviour("shared_unavailable"); b == nil || b.Count != 5 || !strings.Contains(b.Evidence, "mqblast withheld 5 filters") {
		t.Errorf("broker_behaviour %+v", res.BrokerBehaviour)
	}
	if len(res.BrokerBehaviour) != 1 || res.Messages.SubscribeFailed != 0 || len(res.Messages.SubscribeRefused) != 0 {
		t.Errorf("counted again: broker_behaviour %+v, subscribe_failed %d, subscribe_refused %v",
			res.BrokerBehaviour, res.Messages.SubscribeFailed, res.Messages.SubscribeRefused)
	}
	if strings.Contains(said, "refused") || strings.Contains(said, "0x9e") ||
		!strings.Contains(said, "mqblast withheld every subscription, as the broker's CONNACK said it does not take them") {
		t.Errorf("%v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
}
