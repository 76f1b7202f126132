package reactor

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
)

// TestMark: the text mark carries the measurement bytes whole, in letters and digits, and
// is found anywhere in a payload, past decoys; a payload without one is not measured.
func TestMark(t *testing.T) {
	t.Parallel()
	h := make([]byte, MeasuredSize)
	PutHeader(h, 1_765_000_000_123_456_789, 0xbeef, 0xabcdef, 4_000_000_000)
	for k := HeaderSize; k < MeasuredSize; k++ {
		h[k] = byte(k * 37)
	}
	mark := appendMark(nil, h)
	if len(mark) != markLen || strings.Trim(string(mark), "0123456789abcdefMQB") != "" {
		t.Fatalf("mark %q", mark)
	}
	for b := range 256 { // every byte value at every place, as encoding/hex writes it
		x := make([]byte, MeasuredSize)
		for k := range x {
			x[k] = byte(b + 7*k)
		}
		if got, want := string(appendMark([]byte("{"), x)), "{"+markPrefix+hex.EncodeToString(x); got != want {
			t.Fatalf("mark of %x: %s, want %s", x, got, want)
		}
	}
	var got [MeasuredSize]byte
	for _, pl := range []string{string(mark), `{"a":"MQB1zz","b":"MQB1` + strings.Repeat("0", 48) + `","m":"` + string(mark) + `"}`} {
		if !findMark([]byte(pl), &got) || !bytes.Equal(got[:], h) {
			t.Errorf("%s: found %x, want %x", pl, got, h)
		}
	}
	for _, pl := range []string{"", "MQB1", `{"m":"` + string(mark[:51]) + `"}`, strings.Replace(string(mark), "b7", "b8", 1)} {
		if findMark([]byte(pl), &got) {
			t.Errorf("%q: a mark found", pl)
		}
	}
}

// gotMessages keeps the messages a loop reports received.
type gotMessages struct {
	NopObserver
	got []Message
}

func (g *gotMessages) Received(_, _ int, m Message) { g.got = append(g.got, m) }

// TestReceivedCarriers: a receiver measures a copy by its carrier: the header, a text mark
// (when the run places them) or a property carrier's Correlation Data, even when the user's
// payload holds the header's magic byte at its place by chance (UTF-8 ·); a payload with
// none is unmeasured.
func TestReceivedCarriers(t *testing.T) {
	l, s, _ := testSession(t, 5)
	obs := &gotMessages{}
	l.e.cfg.Observer, l.e.cfg.Marks = obs, true
	l.e.realEpoch = l.e.epoch.UnixNano()
	due := time.Now().UnixNano()
	h := make([]byte, MeasuredSize)
	PutHeader(h, due, 0x1234, 77, 9)
	binary.BigEndian.PutUint64(h[16:24], uint64(due+5000))
	decoy := []byte(`{"ab":"·x"}`) // byte 8 is 0xb7
	if decoy[8] != headerMagic {
		t.Fatalf("decoy byte 8 %#x", decoy[8])
	}
	check := func(name string, pk *codec.Publish, measured bool) {
		t.Helper()
		obs.got, l.rxArrival = obs.got[:0], 0
		l.received(s, pk)
		if len(obs.got) != 1 {
			t.Fatalf("%s: %d messages", name, len(obs.got))
		}
		m := obs.got[0]
		if !measured {
			if !m.Unmeasured {
				t.Errorf("%s: measured %+v", name, m)
			}
			return
		}
		if m.Unmeasured || m.Due != due || m.Run != 0x1234 || m.Publisher != 77 || m.Seq != 9 || m.Sent != due+5000 {
			t.Errorf("%s: %+v", name, m)
		}
	}
	check("header", &codec.Publish{Topic: []byte("t"), Payload: h}, true)
	check("mark", &codec.Publish{Topic: []byte("t"), Payload: appendMark(append([]byte(nil), decoy[:len(decoy)-1]...), h)}, true)
	withCD := &codec.Publish{Topic: []byte("t"), Payload: decoy}
	withCD.Props.Set(codec.PropCorrelationData)
	withCD.Props.CorrelationData = h
	check("property", withCD, true)
	withUser := &codec.Publish{Topic: []byte("t"), Payload: decoy}
	withUser.Props.Set(codec.PropCorrelationData)
	withUser.Props.CorrelationData = []byte("the group's own")
	withUser.Props.User.Add("site", "north")
	withUser.Props.User.Add(markProperty, string(appendMark(nil, h)))
	check("user property", withUser, true)
	check("none", &codec.Publish{Topic: []byte("t"), Payload: []byte(`{"a":1}`)}, false)
	l.e.cfg.Marks = false
	check("a mark the run does not place", &codec.Publish{Topic: []byte("t"), Payload: appendMark([]byte(`{"m":"`), h)}, false)
}

// TestUserPropertyMark: a spec that sends a Correlation Data of its own carries each
// message's mark in a User Property beside its own pairs, the payload the rendering alone.
func TestUserPropertyMark(t *testing.T) {
	l, s, _ := testSession(t, 5)
	own := &codec.Properties{}
	own.Set(codec.PropCorrelationData)
	own.CorrelationData = []byte("own")
	own.User.Add("site", "north")
	sp := &PublishSpec{Topic: []byte("t"), Rate: 10, Receivers: 1, Measure: MeasureUserProperty, Props: own,
		Template: mustTemplate(t, `{"seq":{{seq}}}`)}
	sp.PayloadSize = sp.Template.MaxLen(0)
	l.startPublisher(s, sp, 0, 10, false)
	for seq := uint32(5); seq < 8; seq++ {
		pk := l.message(s.pub, seq, time.Now().UnixNano(), 0, false, l.e.now())
		wire := codec.AppendPublish(nil, pk, codec.V5)
		h, body, _, err := codec.Split(wire, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var got codec.Publish
		if err := codec.DecodePublish(h, body, codec.V5, &got); err != nil {
			t.Fatal(err)
		}
		var pairs []string
		var mark [MeasuredSize]byte
		for k, v := range got.Props.User.All() {
			pairs = append(pairs, string(k))
			if string(k) == markProperty && !findMark(v, &mark) {
				t.Errorf("seq %d: %s = %q is no mark", seq, k, v)
			}
		}
		_, _, gotSeq, ok := ReadHeader(mark[:])
		if string(got.Payload) != `{"seq":`+strconv.Itoa(int(seq))+`}` || string(got.Props.CorrelationData) != "own" ||
			strings.Join(pairs, ",") != "site,"+markProperty || !ok || gotSeq != seq {
			t.Errorf("seq %d: payload %s, correlation %q, user properties %v, mark seq %d %v", seq, got.Payload, got.Props.CorrelationData, pairs, gotSeq, ok)
		}
	}
	if own.User.Len() != 1 {
		t.Errorf("the spec's own properties changed: %d user properties", own.User.Len())
	}
}
