package reactor

import (
	"bytes"
	"encoding/binary"
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
	check("none", &codec.Publish{Topic: []byte("t"), Payload: []byte(`{"a":1}`)}, false)
	l.e.cfg.Marks = false
	check("a mark the run does not place", &codec.Publish{Topic: []byte("t"), Payload: appendMark([]byte(`{"m":"`), h)}, false)
}
