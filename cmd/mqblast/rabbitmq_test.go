package main

import (
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
)

// TestRabbitMQP2P: quick-p2p-100 at QoS 0 and 1 against a real rabbitmq (testbroker.StartRabbitMQ):
// every result's accounting holds, and the broker delivers. At QoS 2 it grants the
// subscriptions QoS 1 and answers QoS 2 PUBLISHes with PUBACK: the result says both, and
// counts nothing lost or duplicated.
func TestRabbitMQP2P(t *testing.T) {
	t.Parallel()
	mqblastBin(t) // first: under -race it skips before the broker starts
	f := testbroker.StartRabbitMQ(t)
	foreignP2P(t, f)

	args := quickP2P(f.Addr, "4", "--set", "publishers.qos=2", "--set", "subscribers.qos=2")
	r := runBin(t, args...)
	if r.code != 0 {
		t.Fatalf("QoS 2: exit %d\n%s", r.code, r.stderr)
	}
	checkDoc(t, r)
	res := decodeResult(t, r)
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
	text := runBin(t, append(args, "--format", "text")...)
	if !strings.Contains(text.stdout, "granted QoS 1 for 100 subscriptions that asked QoS 2") ||
		!strings.Contains(text.stdout, "QoS 2 messages with PUBACK, QoS 1's acknowledgement") {
		t.Errorf("QoS 2 summary:\n%s", text.stdout)
	}
}
