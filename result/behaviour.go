package result

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// BrokerBehaviour is one thing the broker did differently from what the plan asked, with
// how often and what it said. What names it, in snake_case:
//
//   - "publish_refused:REASON": messages it refused (a 5.0 PUBACK or PUBREC reason code of
//     0x80 and up, e.g. publish_refused:not_authorized), counted in messages;
//   - "subscribe_refused:REASON": filters its SUBACK refused (3.1.1's 0x80 is
//     unspecified_error);
//   - "disconnect:REASON": connections it ended with a 5.0 DISCONNECT (e.g.
//     disconnect:qos_not_supported), counted in connections; Example has its reason string;
//   - "max_qos_G_for_qos_A": publishers of QoS A whose 5.0 CONNACK said Maximum QoS G;
//   - "retain_unavailable": retaining publishers whose 5.0 CONNACK said Retain Available 0;
//   - "shared_unavailable", "wildcard_unavailable": filters mqblast did not subscribe to
//     (no SUBSCRIBE sent, so none refused) because a 5.0 CONNACK said the broker does not
//     take shared ("$share/") or wildcard ('+', '#') filters: those of every SUBSCRIBE with
//     such a filter, each counted once;
//   - "granted_qos_G_for_qos_A": filters that asked QoS A and were granted QoS G;
//   - "closed_qos2_publisher": 3.1.1 publishers of QoS 2 the broker closed without a word
//     while their messages were in flight (what a broker whose maximum QoS is 1 does);
//   - "answered_as_3_1_1": 5.0 CONNECTs answered by a 3.1.1 CONNACK (the broker does not
//     speak 5.0);
//   - "puback_for_qos_2": QoS 2 messages the broker acknowledged with a PUBACK (it took
//     them at QoS 1), counted as acked;
//   - "pubcomp_id_not_found": QoS 2 exchanges a PUBCOMP 0x92 ended after a PUBREC had
//     accepted the message, counted as acked;
//   - "dropped_by_broker": messages the broker says it dropped by its own policy (its
//     $SYS counter, broker_sys publish_dropped) in a run that lost copies;
//   - "delivered_to_every_member": copies on "$share/" filters a broker gave to more than
//     one member of their group, at least every other one (it does not share), counted
//     as unexpected not_expected;
//   - "qos2_sent_again_after_reconnect": QoS 2 copies a subscriber got a second time, in a
//     new exchange, after it reconnected to its kept session (the broker sent a message
//     again that it had delivered, or had released with PUBREL), counted in duplicated;
//   - "session_not_kept": clients with Clean Session 0 (5.0: Clean Start 0 and a Session
//     Expiry not run out) whose reconnect the broker answered with Session Present 0: it
//     did not keep their sessions (a restart without persistence), counted in clients;
//   - "retained_not_delivered": subscriptions made after every publisher had published a
//     retained message on their topics that got none, counted in subscriptions (at least:
//     those less the copies that came again or late, which a broker that clears RETAIN
//     sends instead);
//   - "not_shared": "$share/" filters of 3.1.1 subscribers the broker granted and delivered
//     nothing to (it does not share), counted in messages.not_shared_copies.
//
// Evidence says it in words; Example is one instance as the client saw it (a reason code,
// a reason string: text from the broker, shown through termtext).
type BrokerBehaviour struct {
	What     string `json:"what"`
	Count    int64  `json:"count"`
	Evidence string `json:"evidence"`
	Example  string `json:"example,omitempty"`
}

// Behaviour returns the entry of r's broker_behaviour named what (nil: none).
func (r *Result) Behaviour(what string) *BrokerBehaviour {
	for i := range r.BrokerBehaviour {
		if r.BrokerBehaviour[i].What == what {
			return &r.BrokerBehaviour[i]
		}
	}
	return nil
}

// The prefixes of BrokerBehaviour.What; the counts of publish refusals and DISCONNECTs
// live in other fields of the document (messages.refused, connections.dropped_by_cause).
const (
	behPublishRefused   = "publish_refused:"
	behSubscribeRefused = "subscribe_refused:"
	behDisconnect       = "disconnect:"
)

// SubscribeRefusedBehaviour is the Snapshot.Behaviour key of filters refused for reason.
func SubscribeRefusedBehaviour(reason string) string { return behSubscribeRefused + reason }

// DisconnectCause is the prefix of a dropped_by_cause key (and a behaviour's What) for a
// connection the broker ended with a 5.0 DISCONNECT, followed by its reason's name.
const DisconnectCause = behDisconnect

// behaviour fills BrokerBehaviour from the run's refusals, DISCONNECTs and behaviours.
func (r *Result) behaviour(total *Snapshot) {
	r.BrokerBehaviour = nil
	add := func(what string, n int64) {
		if n <= 0 {
			return
		}
		ex := total.Examples["behaviour:"+what]
		r.BrokerBehaviour = append(r.BrokerBehaviour, BrokerBehaviour{What: what, Count: n,
			Evidence: behaviourWords(what, n, ex), Example: ex})
	}
	for _, k := range sortedKeys(total.PublishRefused) {
		add(behPublishRefused+k, total.PublishRefused[k])
	}
	for _, k := range sortedKeys(total.Dropped) {
		if strings.HasPrefix(k, behDisconnect) {
			add(k, total.Dropped[k])
		}
	}
	for _, k := range sortedKeys(total.Behaviour) {
		add(k, total.Behaviour[k])
	}
	// A broker that clears RETAIN on a retained copy (gmqtt) sends one per late
	// subscription all the same: a copy again, or one due before a reconnect that came
	// after it. Fewer of those than half the subscriptions: at least the rest got none.
	if late := total.LateSubscribed; late > 0 && total.Retained == 0 && total.Behaviour["retain_unavailable"] == 0 {
		if n := late - (total.Duplicated + total.Redelivered + total.DeliveredOnReturn); 2*n >= late {
			r.BrokerBehaviour = append(r.BrokerBehaviour, BrokerBehaviour{What: BehaviourRetainedNotDelivered, Count: n,
				Evidence: fmt.Sprintf("the broker sent no retained message to at least %d of %d subscriptions made after every publisher "+
					"had published with RETAIN set on their topics: none came with the RETAIN flag, and fewer copies came again or late "+
					"than there were subscriptions; it does not keep retained messages for late subscribers (retain disabled?). "+
					"Nothing of the run is counted lost for it", n, late)})
		}
	}
	r.NoteBrokerDrops()
	if n := r.Messages.NotSharedCopies; n > 0 {
		r.BrokerBehaviour = append(r.BrokerBehaviour, BrokerBehaviour{What: behNotShared, Count: total.Subscribed,
			Evidence: fmt.Sprintf("the broker does not share: it granted %d $share/ filters of 3.1.1 subscribers and delivered "+
				"none of the %d copies expected on them (it takes such a filter as a topic filter, which matches nothing): "+
				"counted as not_shared_copies, not lost", total.Subscribed, n)})
	}
}

// behDropped is the BrokerBehaviour of messages the broker dropped by its own policy.
const behDropped = "dropped_by_broker"

// NoteBrokerDrops puts into BrokerBehaviour (anew) the messages the broker says it dropped
// by its own policy (broker_sys publish_dropped: Mosquitto's $SYS counter of messages a
// subscriber's full queue refused, max_queued_messages or max_queued_bytes) when copies
// were lost: the loss is the broker's, with its count as the evidence. Call it after
// BrokerSys is set.
func (r *Result) NoteBrokerDrops() {
	r.BrokerBehaviour = slices.DeleteFunc(r.BrokerBehaviour, func(b BrokerBehaviour) bool { return b.What == behDropped })
	if r.BrokerSys == nil || r.Messages.Lost == 0 {
		return
	}
	d, ok := r.BrokerSys.Total(SysPublishDropped)
	if !ok || d <= 0 {
		return
	}
	r.BrokerBehaviour = append(r.BrokerBehaviour, BrokerBehaviour{What: behDropped, Count: d,
		Evidence: fmt.Sprintf("the broker dropped %d messages by its own policy ($SYS publish dropped: a subscriber's queue was full, "+
			"e.g. Mosquitto's max_queued_messages or max_queued_bytes): of the %d copies lost, those are the broker's doing, not the client's",
			d, r.Messages.Lost)})
}

// BehaviourEveryMember is the BrokerBehaviour of a broker that gave the copies on
// "$share/" filters to several members of their group (at least every other one): it
// does not share; the extra copies are unexpected not_expected, not duplicated.
const BehaviourEveryMember = "delivered_to_every_member"

// BehaviourQoS2Again is the BrokerBehaviour of QoS 2 copies a subscriber got twice, the
// second in a new exchange after it reconnected to its kept session: exactly once broken
// by the broker (aedes 1.x does it when a session is taken over while PUBRELs are on their
// way). They count in duplicated too.
const BehaviourQoS2Again = "qos2_sent_again_after_reconnect"

// BehaviourRetainedNotDelivered is the BrokerBehaviour of a broker that answered
// subscriptions made after every publisher had published a retained message on their
// topics with no retained message (Snapshot.LateSubscribed, none retained, and fewer copies
// again or late than half of them): it does not deliver retained messages to late
// subscribers.
const BehaviourRetainedNotDelivered = "retained_not_delivered"

// BehaviourSessionNotKept is the BrokerBehaviour of clients whose persistent session the
// broker did not keep across their reconnect (its CONNACK said Session Present 0).
const BehaviourSessionNotKept = "session_not_kept"

// behNotShared is the BrokerBehaviour of a broker that does not share (notShared).
const behNotShared = "not_shared"

// notShared reports whether the run is one of 3.1.1 subscribers on "$share/" filters
// (a Shared-Subscription scenario) that the broker granted and that received nothing of
// the copies the plan expected of what the broker took, no connection lost: the broker
// does not share (3.1.1
// has no shared subscriptions; RabbitMQ 3.10 and aedes 1.x take the filter as a topic
// filter), and what did not arrive is not a loss.
func (r *Result) notShared(total *Snapshot) bool {
	if r.Messages.ExpectedUnknown || total.Received != 0 || total.Subscribed == 0 || r.Messages.Lost == 0 ||
		total.UnexpectedTotal() != 0 || total.DroppedTotal() != 0 { // a broker that went away lost them
		return false
	}
	var sc struct {
		Type        string `json:"type"`
		Subscribers *struct {
			ProtocolVersion json.RawMessage `json:"protocol_version"`
		} `json:"subscribers"`
	}
	if json.Unmarshal(r.Scenario, &sc) != nil || sc.Type != "Shared-Subscription" || sc.Subscribers == nil {
		return false
	}
	return string(sc.Subscribers.ProtocolVersion) != "5"
}

// behaviourSnapshot puts back into s, the snapshot of a document read back, the behaviour
// counts and examples that only BrokerBehaviour keeps.
func (r *Result) behaviourSnapshot(s *Snapshot) {
	for _, b := range r.BrokerBehaviour {
		if b.Example != "" {
			s.Examples["behaviour:"+b.What] = b.Example
		}
		if strings.HasPrefix(b.What, behPublishRefused) || strings.HasPrefix(b.What, behDisconnect) || b.What == behNotShared || b.What == behDropped {
			continue // counted in their own fields
		}
		if s.Behaviour == nil {
			s.Behaviour = map[string]int64{}
		}
		s.Behaviour[b.What] += b.Count
	}
}

// Error kinds (ErrorCount.Kind) of a run that ended because of what the broker did.
const (
	// ErrorBrokerLacks: the broker's CONNACKs said it lacks what the plan needs, and the
	// run was not told to run at what it grants.
	ErrorBrokerLacks = "broker_lacks"
	// ErrorNoSubscription: the plan has subscribers and not one subscription was made.
	ErrorNoSubscription = "no_subscription"
)

// Failure returns the error that makes the run failed by the broker's doing
// (ErrorBrokerLacks, ErrorNoSubscription, ErrorNoAcknowledgement), or nil.
func (r *Result) Failure() error {
	for _, e := range r.Errors {
		if e.Kind == ErrorBrokerLacks || e.Kind == ErrorNoSubscription || e.Kind == ErrorNoAcknowledgement {
			return fmt.Errorf("%s: %s", e.Kind, e.Example)
		}
	}
	return nil
}

// IsCapability reports whether what (a BrokerBehaviour.What) is a capability a 5.0
// CONNACK said the broker lacks.
func IsCapability(what string) bool {
	var g, a int
	switch what {
	case "retain_unavailable", "shared_unavailable", "wildcard_unavailable":
		return true
	}
	return scan(what, "max_qos_%d_for_qos_%d", &g, &a)
}

// BehaviourEvidence says behaviour what of count n in words; ex is its example (from the
// broker: a printer escapes it).
func BehaviourEvidence(what string, n int64, ex string) string { return behaviourWords(what, n, ex) }

// behaviourWords says a behaviour of n in words; ex is its example (from the broker: the
// printers escape it).
func behaviourWords(what string, n int64, ex string) string {
	var g, a int
	switch {
	case strings.HasPrefix(what, behPublishRefused):
		return fmt.Sprintf("the broker refused %d messages: %s (%s)", n, strings.TrimPrefix(what, behPublishRefused), ex)
	case strings.HasPrefix(what, behSubscribeRefused):
		return fmt.Sprintf("the broker refused %d subscriptions: %s", n, strings.TrimPrefix(what, behSubscribeRefused))
	case strings.HasPrefix(what, behDisconnect):
		return fmt.Sprintf("the broker ended %d connections with a DISCONNECT: %s (%s)", n, strings.TrimPrefix(what, behDisconnect), ex)
	case scan(what, "max_qos_%d_for_qos_%d", &g, &a):
		return fmt.Sprintf("the broker's CONNACK says Maximum QoS %d: %d publishers of QoS %d publish at QoS %d at most", g, n, a, g)
	case scan(what, "granted_qos_%d_for_qos_%d", &g, &a):
		return fmt.Sprintf("granted QoS %d for %d subscriptions that asked QoS %d", g, n, a)
	}
	switch what {
	case "retain_unavailable":
		return fmt.Sprintf("the broker's CONNACK says Retain Available 0: %d retaining publishers publish without retain", n)
	case "shared_unavailable":
		return fmt.Sprintf("the broker's CONNACK says Shared Subscription Available 0: mqblast withheld %d filters "+
			"(SUBSCRIBEs with shared filters, not sent: no refusal of the broker's)", n)
	case "wildcard_unavailable":
		return fmt.Sprintf("the broker's CONNACK says Wildcard Subscription Available 0: mqblast withheld %d filters "+
			"(SUBSCRIBEs with wildcard filters, not sent: no refusal of the broker's)", n)
	case "closed_qos2_publisher":
		return fmt.Sprintf("the broker closed %d QoS 2 publishers (max_qos 1?)", n)
	case BehaviourEveryMember:
		return fmt.Sprintf("the broker does not share: it gave %d copies on $share/ filters to a second member of their group "+
			"(it delivers to every member): counted as unexpected not_expected, not duplicated", n)
	case "pubcomp_id_not_found":
		return fmt.Sprintf("the broker ended %d QoS 2 exchanges with PUBCOMP 0x92 (packet identifier not found) after accepting the message at PUBREC: counted as acknowledged", n)
	case BehaviourQoS2Again:
		return fmt.Sprintf("the broker sent %d QoS 2 messages again, in new exchanges, to subscribers that had them and reconnected to "+
			"their kept sessions: exactly once broken by the broker (%s); counted as duplicated", n, ex)
	case "puback_for_qos_2":
		return fmt.Sprintf("the broker answered %d QoS 2 messages with PUBACK, QoS 1's acknowledgement: it took them at QoS 1 (at least once), not exactly once", n)
	case BehaviourSessionNotKept:
		return fmt.Sprintf("the broker did not keep the sessions of %d clients across a reconnect: they connected with Clean Session 0 "+
			"(5.0: Clean Start 0 and a Session Expiry that had not run out) and its CONNACK said Session Present 0 (a restart without "+
			"persistence does that): what it had queued for them, and their messages in flight, are lost by the broker", n)
	case "answered_as_3_1_1":
		return fmt.Sprintf("the broker does not support MQTT 5.0 (it answered as 3.1.1: %s), %d connections", ex, n)
	}
	return fmt.Sprintf("%s: %d", what, n)
}

// scan reports whether s is exactly format (with %d verbs) filled in.
func scan(s, format string, args ...any) bool {
	n, err := fmt.Sscanf(s, format, args...)
	return err == nil && n == len(args) && fmt.Sprintf(format, derefs(args)...) == s
}

func derefs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = *a.(*int)
	}
	return out
}
