package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// TestSeqSet: a set of sequence numbers as ranges: in order, gaps, late arrivals filling
// them, and duplicates anywhere.
func TestSeqSet(t *testing.T) {
	t.Parallel()
	var s seqSet
	add := func(seq uint32, dup, late bool) {
		t.Helper()
		d, l := s.add(seq)
		if d != dup || l != late {
			t.Errorf("add(%d) = dup %v late %v, want %v %v (ranges %v)", seq, d, l, dup, late, s.r)
		}
	}
	for i := range uint32(5) {
		add(i, false, false)
	}
	add(4, true, false)  // the last again
	add(8, false, false) // a gap: 5-7 missing
	add(2, true, false)  // an old one again
	add(6, false, true)  // fills part of the gap, late
	add(6, true, false)
	add(5, false, true)
	add(7, false, true) // the gap is closed: one range again
	if len(s.r) != 1 || s.r[0] != (result.SeqRange{Lo: 0, Hi: 9}) || s.n != 9 {
		t.Fatalf("ranges %v n %d, want [0,9) 9", s.r, s.n)
	}
	add(20, false, false)
	if !s.r.Has(20) || s.r.Has(19) || !s.r.Has(0) || s.r.Has(21) || s.r.Len() != s.n {
		t.Errorf("ranges %v n %d", s.r, s.n)
	}
}

// p2pRecorder returns a recorder for the streams of a 2-pair P2P plan (clients 0, 1
// subscribe, 2 and 3 publish as publishers 0 and 1), publishing begun now.
func p2pRecorder(t *testing.T, loops int) (*Recorder, int64) {
	t.Helper()
	s, ok := scenario.Builtin("quick-p2p-100")
	if !ok {
		t.Fatal("no quick-p2p-100")
	}
	for k, v := range map[string]string{"publishers.client_count": "2", "subscribers.client_count": "2"} {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	p, err := scenario.NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(loops)
	rec.Stream = p.Stream
	now := time.Now().UnixNano()
	rec.SetStart(now - int64(time.Millisecond))
	rec.SetWindow(now-int64(time.Millisecond), now+int64(time.Hour))
	return rec, now
}

// TestRecorderStreams: only copies on expected streams count as received; the others
// are unexpected by kind, foreign and implausible payloads unmeasured, an earlier run's
// messages stale, another run's (its tag in the header) other_run; none of them offsets a
// loss or counts as a duplicate.
func TestRecorderStreams(t *testing.T) {
	t.Parallel()
	rec, now := p2pRecorder(t, 1)
	msg := func(pub, seq uint32) reactor.Message {
		return reactor.Message{Due: now, Now: now + 1000, Publisher: pub, Seq: seq}
	}
	rec.Received(0, 0, msg(0, 0)) // subscriber 0 from publisher 0: expected
	rec.Received(0, 0, msg(0, 1)) // expected
	rec.Received(0, 0, msg(0, 1)) // duplicate
	rec.Received(0, 0, msg(1, 0)) // subscriber 0 should not get publisher 1
	rec.Received(0, 1, msg(1, 0)) // subscriber 1 from publisher 1: expected
	rec.Received(0, 1, msg(7, 0)) // no publisher 7 in the plan
	rec.Received(0, 2, msg(0, 0)) // client 2 is a publisher: never subscribed
	rec.Received(0, 1, reactor.Message{Unmeasured: true})
	stale := msg(1, 1)
	stale.Due = now - int64(time.Minute) // an earlier run's
	rec.Received(0, 1, stale)
	future := msg(1, 2)
	future.Due = now + int64(time.Hour) // not a due time of ours: foreign bytes
	rec.Received(0, 1, future)
	for _, seq := range []uint32{0, 1, 1, 5} { // another run's copies on subscriber 0's stream: never received, duplicated or lost
		other := msg(0, seq)
		other.Run = 0x5eed
		rec.Received(0, 0, other)
	}
	rec.Published(0, 2, 1, 0, now, now, 0)
	rec.Published(0, 2, 1, 0, now, now, 0)
	rec.Published(0, 3, 1, 0, now, now, 0)
	rec.Published(0, 3, 1, 0, now, now, 0)
	s := result.NewSnapshot()
	rec.Take(0, s)
	s.Add(finished(t, rec))
	if s.Received != 3 || s.Duplicated != 1 || s.Unmeasured != 2 {
		t.Errorf("received %d duplicated %d unmeasured %d, want 3 1 2", s.Received, s.Duplicated, s.Unmeasured)
	}
	want := map[string]int64{"not_expected": 1, "unknown_publisher": 1, "not_subscribed": 1, "stale": 1, "other_run": 4}
	for k, v := range want {
		if s.Unexpected[k] != v {
			t.Errorf("unexpected %v, want %v", s.Unexpected, want)
			break
		}
	}
	var r result.Result
	r.SetTotal(s)
	if r.Messages.Lost != 1 || r.Messages.Expected != 4 {
		t.Errorf("lost %d of %d expected, want 1 of 4 (the strays hide nothing)", r.Messages.Lost, r.Messages.Expected)
	}
}

// TestRecorderDuplicatesByQoS: a second copy is a re-delivery at QoS 1 when DUP is set or
// its subscriber has reconnected since; at QoS 2 it is always duplicated, and one after a
// reconnect is the broker's breach of exactly once, reported as a behaviour with its
// example. A reconnect of another client changes nothing for this one.
func TestRecorderDuplicatesByQoS(t *testing.T) {
	t.Parallel()
	rec, now := p2pRecorder(t, 1)
	msg := func(seq uint32, qos byte, dup bool) reactor.Message {
		return reactor.Message{Due: now, Now: now + 1000, Publisher: 0, Seq: seq, QoS: qos, Dup: dup}
	}
	for seq := range uint32(6) {
		rec.Received(0, 0, msg(seq, 2, false))
	}
	rec.Received(0, 0, msg(0, 1, true))  // QoS 1 with DUP: redelivered
	rec.Received(0, 0, msg(1, 1, false)) // QoS 1 without DUP, no reconnect: duplicated
	rec.Received(0, 0, msg(2, 2, true))  // QoS 2 before any reconnect: duplicated
	rec.Reconnected(0, 1, 1, time.Millisecond)
	rec.Received(0, 0, msg(3, 2, false)) // client 1 reconnected, not 0: duplicated
	rec.Reconnected(0, 0, 1, time.Millisecond)
	rec.Received(0, 0, msg(4, 1, false)) // QoS 1 after the reconnect: redelivered
	rec.Received(0, 0, msg(5, 2, false)) // QoS 2 after it: duplicated, the broker's doing
	rec.Received(0, 0, msg(6, 2, false)) // new
	s := result.NewSnapshot()
	rec.Take(0, s)
	if s.Received != 7 || s.Redelivered != 2 || s.Duplicated != 4 || s.Behaviour[result.BehaviourQoS2Again] != 1 {
		t.Fatalf("received %d, redelivered %d, duplicated %d, behaviour %v; want 7 2 4 and 1 %s",
			s.Received, s.Redelivered, s.Duplicated, s.Behaviour, result.BehaviourQoS2Again)
	}
	var r result.Result
	r.SetTotal(s)
	if len(r.BrokerBehaviour) != 1 || !strings.Contains(r.BrokerBehaviour[0].Evidence,
		"client 0 got publisher 0's message 5 again after it reconnected (DUP 0)") {
		t.Errorf("broker_behaviour %+v", r.BrokerBehaviour)
	}
}

// TestRecorderAnyRun: a recorder told to accept every run's copies (a Subscribe run not
// given its publishers' run identity) takes them as its own; one that is not counts them
// other_run, also without a plan of its streams.
func TestRecorderAnyRun(t *testing.T) {
	t.Parallel()
	now := time.Now().UnixNano()
	for _, anyRun := range []bool{true, false} {
		rec := NewRecorder(1)
		rec.RunTag, rec.AnyRun = 0x0101, anyRun
		rec.SetStart(now - int64(time.Millisecond))
		for seq := range uint32(3) {
			rec.Received(0, 0, reactor.Message{Due: now, Now: now + 1000, Publisher: 2, Seq: seq, Run: 0x0202})
		}
		s := result.NewSnapshot()
		rec.Take(0, s)
		if anyRun && (s.Received != 3 || s.UnexpectedTotal() != 0) || !anyRun && (s.Received != 0 || s.Unexpected["other_run"] != 3) {
			t.Errorf("any run %v: received %d, unexpected %v", anyRun, s.Received, s.Unexpected)
		}
	}
}

// TestRecorderInFlightAtEnd: of the messages in flight at the end, the copies that arrived
// count as received, the others as in_flight_at_end; those dropped with a session as
// in_flight_lost; neither is lost.
func TestRecorderInFlightAtEnd(t *testing.T) {
	t.Parallel()
	rec, now := p2pRecorder(t, 2)
	for seq := range uint32(10) {
		rec.Published(1, 2, 1, 0, now, now, 0)
		if seq != 8 && seq != 9 && seq != 3 {
			rec.Received(0, 0, reactor.Message{Due: now, Now: now, Publisher: 0, Seq: seq})
		}
	}
	rec.InFlightDropped(1, 2, &reactor.PublisherEnd{Number: 0, Receivers: 1, InFlight: []uint32{2, 3}})
	rec.PublisherEnd(1, 2, &reactor.PublisherEnd{Number: 0, Receivers: 1, Scheduled: 12, InFlight: []uint32{7, 8, 9}})
	rec.Unsent(1, 2, reactor.UnsentFlowControl, 2)
	s := result.NewSnapshot()
	rec.Take(0, s)
	rec.Take(1, s)
	s.Add(finished(t, rec))
	var r result.Result
	r.SetTotal(s)
	m := r.Messages
	if m.Received != 7 || m.InFlightAtEnd != 2 || m.InFlightLost != 1 || m.Lost != 0 || m.InFlightDropped != 2 {
		t.Errorf("received %d, in flight at the end %d, in flight lost %d (of %d dropped), lost %d; want 7 2 1 2 0",
			m.Received, m.InFlightAtEnd, m.InFlightLost, m.InFlightDropped, m.Lost)
	}
	if m.Scheduled != 12 || m.Scheduled != m.Published+m.UnsentTotal {
		t.Errorf("scheduled %d, published %d, unsent %v", m.Scheduled, m.Published, m.Unsent)
	}
}

// TestRecorderShareGroupAcrossLoops: the members of one share group in two loops make one
// stream: a copy both received is a duplicate of the group's.
func TestRecorderShareGroupAcrossLoops(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(2)
	rec.Stream = func(int, uint32) (scenario.StreamKind, int) { return scenario.StreamExpected, 0 }
	now := time.Now().UnixNano()
	rec.SetStart(now)
	for _, x := range []struct {
		loop, client int
		seq          uint32
	}{{0, 0, 0}, {1, 1, 1}, {0, 0, 2}, {1, 1, 2}, {1, 1, 3}} {
		rec.Received(x.loop, x.client, reactor.Message{Due: now, Now: now, Seq: x.seq})
	}
	s := result.NewSnapshot()
	rec.Take(0, s)
	rec.Take(1, s)
	s.Add(finished(t, rec))
	if s.Received != 4 || s.Duplicated != 1 {
		t.Errorf("received %d, duplicated %d; want 4 and 1 (seq 2 reached both members)", s.Received, s.Duplicated)
	}
}

// TestRecorderShareGroupOrder: order is a member's own. Two members of one group in one
// loop, read in the other order than the broker sent to them, are not out of order; a
// member that receives 5 after 6 is, and a copy both members got is a duplicate.
func TestRecorderShareGroupOrder(t *testing.T) {
	t.Parallel()
	rec := NewRecorder(1)
	rec.Stream = func(int, uint32) (scenario.StreamKind, int) { return scenario.StreamExpected, 0 }
	now := time.Now().UnixNano()
	rec.SetStart(now)
	for _, x := range []struct {
		client int
		seq    uint32
	}{{1, 1}, {0, 0}, {1, 3}, {0, 2}, {0, 6}, {0, 5}, {1, 6}} {
		rec.Received(0, x.client, reactor.Message{Due: now, Now: now, Seq: x.seq})
	}
	s := result.NewSnapshot()
	rec.Take(0, s)
	s.Add(finished(t, rec))
	if s.Received != 6 || s.OutOfOrder != 1 || s.Duplicated != 1 {
		t.Errorf("received %d, out of order %d, duplicated %d; want 6, 1 (5 after 6 at member 0), 1 (6 at both)",
			s.Received, s.OutOfOrder, s.Duplicated)
	}
}

// TestRecorderGroupsCopiesAgain: in a mixed run a group's copies that came again count
// as the run's do: a share group's copies to a second member (in its loop or another) are
// duplicated when the broker shares, not_expected when it gave (nearly) every copy to
// several members; a QoS 1 copy again after its subscriber reconnected is redelivered, a
// QoS 0 one duplicated. The groups add up to the run.
func TestRecorderGroupsCopiesAgain(t *testing.T) {
	t.Parallel()
	type copyAt struct {
		loop, client int
		seq          uint32
	}
	for _, c := range []struct {
		name               string
		copies             []copyAt
		duplicated, notExp int64
	}{
		{name: "not sharing", duplicated: 1, notExp: 20},
		{name: "sharing", duplicated: 3, notExp: 0, copies: []copyAt{{0, 0, 0}, {0, 0, 2}, {0, 0, 4}, {0, 0, 6}, {0, 0, 8},
			{0, 1, 1}, {0, 1, 2}, {1, 3, 3}, {1, 3, 5}, {1, 3, 7}, {1, 3, 9}, {1, 3, 4}}},
	} {
		if c.copies == nil { // every member has every copy: 10 more in loop 0, 10 in loop 1
			for seq := range uint32(10) {
				c.copies = append(c.copies, copyAt{0, 0, seq}, copyAt{0, 1, seq}, copyAt{1, 3, seq})
			}
		}
		rec := NewRecorder(2)
		rec.Stream = func(client int, _ uint32) (scenario.StreamKind, int) {
			if client == 2 {
				return scenario.StreamExpected, -1
			}
			return scenario.StreamExpected, 0 // clients 0, 1, 3: members of share group 0
		}
		// Publisher 0 is group 0's; every client is group 1's, which receives through share 0.
		rec.SetGroups(2, scenario.RunsOf([]uint8{1, 1, 1, 1}), scenario.RunsOf([]uint8{0}), []uint8{1})
		now := time.Now().UnixNano()
		rec.SetStart(now)
		for _, x := range c.copies {
			rec.Received(x.loop, x.client, reactor.Message{Due: now, Now: now, Seq: x.seq})
		}
		for seq := range uint32(5) {
			rec.Received(0, 2, reactor.Message{Due: now, Now: now, Seq: seq, QoS: 1})
		}
		rec.Reconnected(0, 2, 1, time.Millisecond)
		rec.Received(0, 2, reactor.Message{Due: now, Now: now, Seq: 3, QoS: 1}) // again without DUP: redelivered
		rec.Received(0, 2, reactor.Message{Due: now, Now: now, Seq: 4})         // again at QoS 0: duplicated
		rec.Received(0, 2, reactor.Message{Due: now, Now: now, Seq: 5, QoS: 1}) // kept while it was away
		s := result.NewSnapshot()
		rec.Take(0, s)
		rec.Take(1, s)
		s.Add(finished(t, rec))
		pub, recv := s.Groups[0], s.Groups[1]
		for _, x := range []*result.Snapshot{s, pub} {
			if x.Received != 16 || x.Duplicated != c.duplicated || x.Redelivered != 1 || x.Unexpected["not_expected"] != c.notExp {
				t.Errorf("%s: received %d duplicated %d redelivered %d not_expected %d; want 16 %d 1 %d", c.name,
					x.Received, x.Duplicated, x.Redelivered, x.Unexpected["not_expected"], c.duplicated, c.notExp)
			}
		}
		if recv.Delivered != 16 || recv.DeliveredOnReturn != 1 || recv.Received != 0 || recv.UnexpectedTotal() != 0 {
			t.Errorf("%s: receiving group delivered %d (on return %d), received %d, unexpected %v; want 16 (1), 0, none", c.name,
				recv.Delivered, recv.DeliveredOnReturn, recv.Received, recv.Unexpected)
		}
	}
}

// finished returns rec's Finish corrections, for a recorder of a whole run (no join).
func finished(t *testing.T, rec *Recorder) *result.Snapshot {
	t.Helper()
	fix, join := rec.Finish()
	if join != nil {
		t.Errorf("a whole run's recorder left a join: %+v", join)
	}
	return fix
}
