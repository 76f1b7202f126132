package result

import (
	"fmt"
	"strings"
)

// The steps of a QoS 1/2 exchange that did not come (Messages.UnacknowledgedBy).
const (
	UnackedNoPuback  = "no_puback"  // QoS 1: written, no PUBACK
	UnackedNoPubrec  = "no_pubrec"  // QoS 2: written, no PUBREC
	UnackedNoPubcomp = "no_pubcomp" // QoS 2: PUBREC'd and PUBREL'd, no PUBCOMP
)

// ErrorNoAcknowledgement is the error kind (ErrorCount.Kind) of a run that published QoS
// 1/2 messages and got not one acknowledgement or refusal for them while no connection was
// lost: the broker kept the connections and answered none of their messages, and the run
// fails. (A broker that ended the connections instead is said by the drops.)
const ErrorNoAcknowledgement = "no_acknowledgement"

// UnacknowledgedWords says m's unacknowledged messages in words, by the step that never
// came: "161 of 161 QoS 1/2 publishes never acknowledged: 161 got no PUBACK"; "" when
// every one was answered.
func UnacknowledgedWords(m *Messages) string {
	if m.Unacknowledged == 0 {
		return ""
	}
	var steps []string
	for _, s := range []struct{ key, words string }{
		{UnackedNoPuback, "got no PUBACK"}, {UnackedNoPubrec, "got no PUBREC"},
		{UnackedNoPubcomp, "got a PUBREC and no PUBCOMP"},
	} {
		if n := m.UnacknowledgedBy[s.key]; n > 0 {
			steps = append(steps, fmt.Sprintf("%d %s", n, s.words))
		}
	}
	return fmt.Sprintf("%d of %d QoS 1/2 publishes never acknowledged (by the end of the run or of their session): %s",
		m.Unacknowledged, m.PublishedQoS12, strings.Join(steps, ", "))
}

// noAcknowledgement adds the error ErrorNoAcknowledgement when the run published QoS 1/2
// messages, the broker acknowledged and refused none of them, and no connection was lost.
func (r *Result) noAcknowledgement(total *Snapshot) {
	m := &r.Messages
	if total.PublishedQoS12 == 0 || total.Acked > 0 || total.PublishRefusedTotal() > 0 || m.Unacknowledged == 0 ||
		total.DroppedTotal() > 0 {
		return
	}
	r.Errors = append(r.Errors, ErrorCount{Kind: ErrorNoAcknowledgement, Count: m.Unacknowledged,
		Example: "the broker acknowledged none: " + UnacknowledgedWords(m)})
}
