package reactor

import (
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"golang.org/x/sys/unix"
)

// endObserver counts the acknowledgements and the messages reported in flight at the end.
type endObserver struct {
	NopObserver
	acked, inFlight int
}

func (o *endObserver) Acked(int, int)                         { o.acked++ }
func (o *endObserver) PublisherEnd(_, _ int, e *PublisherEnd) { o.inFlight += len(e.InFlight) }

// TestAckAfterFinishNotCounted: a PUBACK that comes after the end of publishing reported a
// message in flight (finishPublishing, after the drain) is not counted acknowledged as well:
// the message was counted once, unacknowledged, and published_qos12 = acked + refused +
// unacknowledged holds. Before, the message stayed in the publisher's window and the late
// PUBACK counted it a second time (the audit of make test saw 1,037 published, 1,037 acked
// and 1 unacknowledged).
func TestAckAfterFinishNotCounted(t *testing.T) {
	l, s, peer := testSession(t, 4)
	obs := &endObserver{}
	l.e.cfg.Observer = obs
	l.e.pubStart.Store(1)
	l.startPublisher(s, &PublishSpec{Topic: []byte("t"), QoS: 1, Rate: 1000, PayloadSize: 32, Receivers: 1, MaxInflight: 100}, 0, 10, false)
	s.pub.qos = 1 // as the CONNACK sets it
	now := s.pub.nextDue + int64(5*time.Millisecond)
	l.publishDue(now)
	drain := make([]byte, 1<<16)
	if _, err := unix.Read(peer, drain); err != nil {
		t.Fatal(err)
	}
	written := int(s.pub.seq)
	l.acked(s, 1, codec.ReasonSuccess) // one acknowledged in time
	l.e.StopPublishing()
	l.finishPublishing(false)
	for pid := uint16(2); pid <= uint16(written); pid++ {
		l.acked(s, pid, codec.ReasonSuccess) // too late: counted in flight at the end
	}
	if written < 3 || obs.acked != 1 || obs.inFlight != written-1 {
		t.Errorf("%d written: %d acknowledged, %d in flight at the end; want 1 and %d", written, obs.acked, obs.inFlight, written-1)
	}
}
