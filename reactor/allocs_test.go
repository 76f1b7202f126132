//go:build !race

package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/payloadtpl"
)

// TestReceiveAllocs: reading a batch of QoS 1 PUBLISH packets from the socket, handling
// them and writing their PUBACKs allocates nothing.
func TestReceiveAllocs(t *testing.T) {
	payload := make([]byte, HeaderSize)
	PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
	receiveAllocs(t, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: payload}, 4, false)
}

// TestReceiveMarkAllocs: so does finding the text mark of payloads without the header (a
// JSON template's, measured by mark), a decoy before it.
func TestReceiveMarkAllocs(t *testing.T) {
	h := make([]byte, MeasuredSize)
	PutHeader(h, time.Now().UnixNano(), 0, 0, 0)
	payload := appendMark([]byte(`{"note":"MQB1 is not a mark","temp":21.5,"m":"`), h)
	receiveAllocs(t, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: append(payload, `"}`...)}, 4, true)
	// 5.0: the mark in a User Property after another pair, the group's own Correlation Data.
	pk := &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: []byte(`{"temp":21.5}`)}
	pk.Props.Set(codec.PropCorrelationData)
	pk.Props.CorrelationData = []byte("own")
	pk.Props.User.Add("site", "north")
	pk.Props.User.Add(markProperty, string(appendMark(nil, h)))
	receiveAllocs(t, pk, 5, true)
}

// receiveAllocs reads batches of 50 copies of QoS 1 PUBLISH pk on a session of version
// (marks: the loop looks for text marks) and fails t if a read allocates.
func receiveAllocs(t *testing.T, pk *codec.Publish, version byte, marks bool) {
	t.Helper()
	l, s, peer := testSession(t, version)
	l.e.cfg.Marks = marks
	// The stream is one packet over and over; each read takes the tail of a packet cut by
	// the previous read, 49 whole ones and the head of the next.
	p := codec.AppendPublish(nil, pk, codec.Version(version))
	batch := append([]byte(nil), p[10:]...)
	for range 49 {
		batch = append(batch, p...)
	}
	batch = append(batch, p[:10]...)
	if _, err := unix.Write(peer, p[:10]); err != nil {
		t.Fatal(err)
	}
	l.read(s)
	drain := make([]byte, 64<<10)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := unix.Write(peer, batch); err != nil {
			t.Fatal(err)
		}
		l.read(s)
		if n, err := unix.Read(peer, drain); err != nil || n != 50*4 { // 50 PUBACKs of 4 bytes
			t.Fatalf("read %d bytes of PUBACKs, want 200: %v", n, err)
		}
	})
	if s.state != stConnected {
		t.Fatalf("session state %d after the reads", s.state)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per read of 50 PUBLISH", allocs)
	}
}

// TestPublishAllocs: a publish pass that encodes and writes a publisher's due messages
// allocates nothing.
func TestPublishAllocs(t *testing.T) {
	publishPassAllocs(t, &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 32, Receivers: 1})
}

// TestPublishSizesAllocs: so does drawing each message's size from a weighted list or a
// range.
func TestPublishSizesAllocs(t *testing.T) {
	for _, d := range []*SizeDraw{{Sizes: []int{16, 100, 1000}, Cum: []uint32{5, 5, 10}}, {Lo: 16, Hi: 2000}} {
		publishPassAllocs(t, &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 2000, Receivers: 1, Sizes: d})
	}
}

// TestPublishFileAllocs: so does rendering payloads of a payload file, in turn or at random.
func TestPublishFileAllocs(t *testing.T) {
	ts := []*payloadtpl.Template{mustTemplate(t, `{"a":1}`), mustTemplate(t, benchTemplate), mustTemplate(t, "plain text")}
	for _, random := range []bool{false, true} {
		sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, Receivers: 1, Measure: MeasureMark,
			Templates: ts, RandomOrder: random, ClientID: []byte("mqblast-pub-17"), ClientIndex: 17}
		sp.PayloadSize = MeasuredSize + ts[1].MaxLen(len(sp.ClientID))
		publishPassAllocs(t, sp)
	}
}

// publishPassAllocs runs publish passes of 50 messages of publisher sp over a socket pair
// and fails t if one allocates or fewer than the schedule's messages went out.
func publishPassAllocs(t *testing.T, sp *PublishSpec) {
	t.Helper()
	l, s, peer := testSession(t, 5)
	l.e.pubStart.Store(1)
	l.startPublisher(s, sp, 0, 10, false)
	drain := make([]byte, 1<<20)
	// The passes' clock starts at the publisher's next due time, not at the engine's clock
	// read after startPublisher: a host that stalled the test between the two made the
	// first pass send all that fell due meanwhile, more than the socket holds (back
	// pressure, then nothing to read after the next pass: EAGAIN).
	now := s.pub.nextDue
	allocs := testing.AllocsPerRun(100, func() {
		now += int64(50 * time.Microsecond) // 50 messages due per pass
		l.publishDue(now)
		if _, err := unix.Read(peer, drain); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per publish pass", allocs)
	}
	if s.pub.seq < 5000 {
		t.Errorf("published %d messages, want the schedule's 5,000 or more", s.pub.seq)
	}
}

// TestWheelAllocs: the wheel looking at idle sessions whose keepalive moved on (each put
// back for its new deadline) allocates nothing once its buckets have grown (each the first
// time it holds that many: once round the wheel).
func TestWheelAllocs(t *testing.T) {
	l := testLoop(t)
	const n = 100
	now := l.e.now()
	var ss []*session
	for i := range n {
		s := &session{fd: -1, version: 4, state: stConnected, flags: sfVerdict, keepalive: 1, lastWrite: now + int64(i)*int64(time.Millisecond)}
		l.add(s)
		ss = append(ss, s)
	}
	at := now
	round := func() {
		at += int64(time.Second)
		for _, s := range ss {
			s.lastWrite = at + int64(500*time.Millisecond) // written since: put back, not pinged
		}
		for t := 0; t < 12; t++ {
			l.scan(at + int64(t)*int64(scanInterval))
		}
	}
	for range wheelSlots/2 + 10 { // a round moves 10 ticks: 512 rounds use every bucket they will
		round()
	}
	if allocs := testing.AllocsPerRun(20, round); allocs != 0 {
		t.Errorf("%.1f allocations a round of %d sessions, want 0", allocs, n)
	}
	for _, s := range ss {
		if s.state != stConnected || s.pingSent != 0 || s.wheelAt <= l.wh.tick {
			t.Fatalf("a session was pinged or left the wheel (state %d, wheel tick %d, now %d)", s.state, s.wheelAt, l.wh.tick)
		}
	}
	if l.wh.n < n || l.wh.n > 2*n {
		t.Errorf("%d entries in the wheel for %d sessions", l.wh.n, n)
	}
}

// TestPublishTemplateAllocs: a publish pass that renders every placeholder of a payload
// template (the per-client ones and the text mark included) allocates nothing, whichever
// carrier measures it (on a 5.0 session: the property carrier's Correlation Data too).
func TestPublishTemplateAllocs(t *testing.T) {
	own := &codec.Properties{}
	own.Set(codec.PropCorrelationData)
	own.CorrelationData = []byte("the group's own")
	own.User.Add("site", "north")
	for _, m := range []byte{MeasureHeader, MeasureMark, MeasureProperty, MeasureNone, MeasureUserProperty} {
		sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, Receivers: 1, Measure: m,
			Template: mustTemplate(t, benchTemplate), ClientID: []byte("mqblast-pub-17"), ClientIndex: 17}
		if m == MeasureUserProperty {
			sp.Props = own
		}
		sp.PayloadSize = MeasuredSize + sp.Template.MaxLen(len(sp.ClientID))
		publishPassAllocs(t, sp)
	}
}
