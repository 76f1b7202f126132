//go:build !race

package sink

import (
	"bytes"
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tlsrec"
)

// inConn is a fakeConn that also holds inbound bytes, as gnet's buffer would.
type inConn struct {
	fakeConn
	in []byte
}

func (c *inConn) Peek(int) ([]byte, error) { return c.in, nil }
func (c *inConn) Discard(n int) (int, error) {
	c.in = c.in[n:]
	return n, nil
}

// capConn is a fakeConn that keeps what it is given, in a buffer grown beforehand.
type capConn struct {
	fakeConn
	got []byte
}

func (c *capConn) Write(b []byte) (int, error) { c.got = append(c.got, b...); return len(b), nil }

// TestTLSRelayAllocs: over TLS, a QoS 0 and a QoS 1 PUBLISH opened from one record by the
// loop, relayed to 50 subscribers and sealed to each in the flush, allocate nothing once
// the buffers and cipher states have been built; every subscriber can open what it got.
func TestTLSRelayAllocs(t *testing.T) {
	const suite = 0x1301 // TLS_AES_128_GCM_SHA256
	cs, ss := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	server := func() *tlsrec.Conn {
		c, err := tlsrec.New(suite, tlsrec.Server, cs, ss)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cfg := Config{}
	cfg.fill()
	h := newHandler(&cfg)
	var subs []*session
	for i := range 50 {
		s := connected(h, []codec.Version{codec.V311, codec.V5}[i%2])
		s.tls = &tlsState{rec: server()}
		if !h.t.add(s, []byte("fan/#"), byte(i%2), false) {
			t.Fatal("subscribe")
		}
		subs = append(subs, s)
	}
	first := &capConn{got: make([]byte, 0, 1<<20)}
	subs[0].c = first
	pc := &inConn{}
	pub := &session{c: pc, v: codec.V5, connected: true, recvMax: 65535, tls: &tlsState{rec: server()}}
	client, err := tlsrec.New(suite, tlsrec.Client, cs, ss)
	if err != nil {
		t.Fatal(err)
	}
	var wire, sealed []byte
	for q := range 2 {
		p := codec.Publish{Topic: []byte("fan/x"), QoS: codec.QoS(q), ID: 7, Payload: []byte("0123456789abcdef")}
		wire = codec.AppendPublish(wire, &p, codec.V5)
	}
	relayRuns(t, h, subs, "the TLS relay to 50 subscribers", func() {
		sealed = client.Seal(sealed[:0], wire)
		pc.in = sealed
		h.flushPending = true // no event loop here: relayRuns's flush is the one it would run
		if act := h.tlsRecords(pc, pub); act != 0 {
			t.Fatalf("action %v", act)
		}
	})
	st := h.c.stats()
	// Per run the QoS 0 message goes to all 50 at QoS 0, the QoS 1 one at QoS 1 to the 25
	// granted QoS 1 and at QoS 0 to the others; 202 runs (one, the warm-up and 200).
	if want := [3]uint64{202 * 75, 202 * 25, 0}; st.Relayed != want || st.PublishIn != [3]uint64{202, 202, 0} || len(pc.in) != 0 {
		t.Errorf("relayed %v (want %v), publish in %v, %d bytes left", st.Relayed, want, st.PublishIn, len(pc.in))
	}
	if pc.written == 0 {
		t.Errorf("the publisher's PUBACKs were not written")
	}
	// The first subscriber (3.1.1, granted QoS 0) opens its records: two copies per run.
	reader, err := tlsrec.New(suite, tlsrec.Client, cs, ss)
	if err != nil {
		t.Fatal(err)
	}
	plain, n, err := reader.Open(nil, first.got)
	if err != nil || n != len(first.got) {
		t.Fatalf("the subscriber opened %d of %d bytes: %v", n, len(first.got), err)
	}
	if copies := relayedCopies(t, plain); copies != 2*202 {
		t.Errorf("the subscriber got %d copies, want %d", copies, 2*202)
	}
}

// relayedCopies checks that b is whole 3.1.1 PUBLISH packets of the relay tests' payload
// and returns how many.
func relayedCopies(t *testing.T, b []byte) int {
	t.Helper()
	copies := 0
	for len(b) > 0 {
		hd, body, m, err := codec.Split(b, 0)
		if err != nil || m == 0 {
			t.Fatalf("split: %v", err)
		}
		var p codec.Publish
		if err := codec.DecodePublish(hd, body, codec.V311, &p); err != nil || string(p.Payload) != "0123456789abcdef" {
			t.Fatalf("copy %d: %q %v", copies, p.Payload, err)
		}
		copies++
		b = b[m:]
	}
	return copies
}
