//go:build !race

package sink

import (
	"testing"

	"github.com/panjf2000/gnet/v2"

	"github.com/mqblast/mqblast/codec"
)

// fakeConn is the part of a gnet.Conn the relay uses: the bytes it was given.
type fakeConn struct {
	gnet.Conn
	written int
}

func (f *fakeConn) OutboundBuffered() int                       { return 0 }
func (f *fakeConn) Write(b []byte) (int, error)                 { f.written += len(b); return len(b), nil }
func (f *fakeConn) AsyncWrite([]byte, gnet.AsyncCallback) error { return nil }

// connected returns a connected session of version v on a fake connection.
func connected(h *handler, v codec.Version) *session {
	return &session{c: &fakeConn{}, v: v, connected: true, recvMax: 65535}
}

// TestRelayAllocs: a QoS 0 and a QoS 1 PUBLISH relayed to 100 subscribers (3.1.1 and 5.0,
// exact, "+" and "#" filters, one shared group), then the flush of their output, allocate
// nothing once the buffers have grown.
func TestRelayAllocs(t *testing.T) {
	cfg := Config{}
	cfg.fill()
	h := newHandler(&cfg)
	var subs []*session
	for i := range 100 {
		s := connected(h, []codec.Version{codec.V311, codec.V5}[i%2])
		filter := []string{"fan/x", "fan/+", "fan/#", "$share/g/fan/x"}[i%4]
		if !h.t.add(s, []byte(filter), byte(i%2), false) {
			t.Fatal(filter)
		}
		subs = append(subs, s)
	}
	pub := connected(h, codec.V5)
	var wire []byte
	for q := range 2 {
		p := codec.Publish{Topic: []byte("fan/x"), QoS: codec.QoS(q), ID: 7, Payload: []byte("0123456789abcdef")}
		wire = codec.AppendPublish(wire, &p, codec.V5)
	}
	relayRuns(t, h, subs, "relay to 100 subscribers", func() {
		for in := wire; len(in) > 0; {
			hd, body, n, err := codec.Split(in, 0)
			if err != nil || n == 0 {
				t.Fatalf("split: %v", err)
			}
			if err := h.packet(pub, hd, body); err != nil {
				t.Fatal(err)
			}
			in = in[n:]
		}
	})
	st := h.c.stats()
	// Per run: 75 plain subscriptions and one shared member match; the QoS 0 message goes to
	// all 76 at QoS 0, the QoS 1 one at QoS 1 to the 26 granted QoS 1. 202 runs: one, then
	// AllocsPerRun's warm-up and 200.
	if want := [3]uint64{202 * 126, 202 * 26, 0}; st.Relayed != want || st.Dropped.Total() != 0 {
		t.Errorf("relayed %v (want %v), dropped %+v", st.Relayed, want, st.Dropped)
	}
	if got := subs[0].c.(*fakeConn).written; got == 0 {
		t.Errorf("subscriber 0 was written nothing")
	}
}

// relayRuns runs handle (which hands h two publishes) then the flush, once and then 201
// times under AllocsPerRun (its warm-up and 200), and fails t if a run allocates.
func relayRuns(t *testing.T, h *handler, subs []*session, what string, handle func()) {
	t.Helper()
	run := func() {
		handle()
		h.flush()
		h.out = h.out[:0]
		for _, s := range subs {
			s.inflight = 0 // as if acknowledged
		}
	}
	run()
	if allocs := testing.AllocsPerRun(200, run); allocs != 0 {
		t.Errorf("%s allocates %v times per 2 publishes, want 0", what, allocs)
	}
}
