//go:build !race

package sink

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tlsrec"
)

// clientFrames appends p to dst in masked binary frames of at most n bytes, as a client
// sends them.
func clientFrames(dst, p []byte, n int, key uint32) []byte {
	for i := 0; i < len(p); i += n {
		chunk := p[i:min(len(p), i+n)]
		op := byte(wsBinary)
		if i > 0 {
			op = wsContinuation
		}
		if i+len(chunk) == len(p) {
			op |= 0x80
		}
		dst = append(dst, op, 0x80|byte(len(chunk)))
		dst = binary.LittleEndian.AppendUint32(dst, key)
		j := len(dst)
		dst = append(dst, chunk...)
		unmask(dst[j:], key)
	}
	return dst
}

// TestWSRelayAllocs: over WebSocket (ws and wss), a QoS 0 and a QoS 1 PUBLISH in frames of
// at most 20 bytes (the packets cut across frames), unmasked by the loop, relayed to 50
// subscribers and framed (and sealed) to each in the flush, allocate nothing once the
// buffers (and cipher states) have been built; the first subscriber reads its copies whole.
func TestWSRelayAllocs(t *testing.T) {
	for _, wss := range []bool{false, true} {
		const suite = 0x1301 // TLS_AES_128_GCM_SHA256
		cs, ss := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
		server := func() *tlsState {
			if !wss {
				return nil
			}
			c, err := tlsrec.New(suite, tlsrec.Server, cs, ss)
			if err != nil {
				t.Fatal(err)
			}
			return &tlsState{rec: c}
		}
		cfg := Config{WS: true}
		cfg.fill()
		h := newHandler(&cfg)
		var subs []*session
		for i := range 50 {
			s := connected(h, []codec.Version{codec.V311, codec.V5}[i%2])
			s.tls, s.ws = server(), &wsState{open: true}
			if !h.t.add(s, []byte("fan/#"), byte(i%2), false) {
				t.Fatal("subscribe")
			}
			subs = append(subs, s)
		}
		first := &capConn{got: make([]byte, 0, 1<<20)}
		subs[0].c = first
		pc := &inConn{}
		pub := &session{c: pc, v: codec.V5, connected: true, recvMax: 65535, tls: server(), ws: &wsState{open: true}}
		client, err := tlsrec.New(suite, tlsrec.Client, cs, ss)
		if err != nil {
			t.Fatal(err)
		}
		var packets []byte
		for q := range 2 {
			p := codec.Publish{Topic: []byte("fan/x"), QoS: codec.QoS(q), ID: 7, Payload: []byte("0123456789abcdef")}
			packets = append(packets, clientFrames(nil, codec.AppendPublish(nil, &p, codec.V5), 20, 0x5a3c9671)...)
		}
		var sealed []byte
		relayRuns(t, h, subs, "the WebSocket relay to 50 subscribers", func() {
			h.flushPending = true // no event loop here: relayRuns's flush is the one it would run
			var act int
			if wss {
				sealed = client.Seal(sealed[:0], packets)
				pc.in = sealed
				act = int(h.tlsRecords(pc, pub))
			} else {
				pc.in = packets
				act = int(h.wsTraffic(pc, pub))
			}
			if act != 0 {
				t.Fatalf("action %v", act)
			}
		})
		st := h.c.stats()
		if want := [3]uint64{202 * 75, 202 * 25, 0}; st.Relayed != want || st.PublishIn != [3]uint64{202, 202, 0} || len(pc.in) != 0 || st.HeldBytes != 0 {
			t.Errorf("wss %v: relayed %v (want %v), publish in %v, %d bytes left, %d held", wss, st.Relayed, want, st.PublishIn, len(pc.in), st.HeldBytes)
		}
		// The first subscriber (3.1.1, granted QoS 0): one unmasked binary frame per flush,
		// two copies in each.
		got := first.got
		if wss {
			reader, err := tlsrec.New(suite, tlsrec.Client, cs, ss)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if got, n, err = reader.Open(nil, first.got); err != nil || n != len(first.got) {
				t.Fatalf("the subscriber opened %d of %d bytes: %v", n, len(first.got), err)
			}
		}
		copies := 0
		for len(got) > 0 {
			if got[0] != 0x82 || got[1]&0x80 != 0 || int(got[1]) > len(got)-2 {
				t.Fatalf("wss %v: frame header %x", wss, got[:2])
			}
			copies += relayedCopies(t, got[2:2+int(got[1])])
			got = got[2+int(got[1]):]
		}
		if copies != 2*202 {
			t.Errorf("wss %v: the subscriber got %d copies, want %d", wss, copies, 2*202)
		}
	}
}

// BenchmarkLayerRelay is the loop's own CPU per message (no syscalls: the connections are
// fakes) for one read bringing one QoS 0 PUBLISH of 64 bytes, relayed to one subscriber
// and flushed: over TCP, WebSocket, TLS and WebSocket over TLS. What a layer adds per
// message is the difference from tcp.
func BenchmarkLayerRelay(b *testing.B) {
	const suite = 0x1301
	cs, ss := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	for _, layer := range []string{"tcp", "ws", "tls", "wss"} {
		b.Run(layer, func(b *testing.B) {
			ws, tls := layer == "ws" || layer == "wss", layer == "tls" || layer == "wss"
			state := func() (*tlsState, *wsState) {
				var t *tlsState
				if tls {
					c, err := tlsrec.New(suite, tlsrec.Server, cs, ss)
					if err != nil {
						b.Fatal(err)
					}
					t = &tlsState{rec: c}
				}
				if ws {
					return t, &wsState{open: true}
				}
				return t, nil
			}
			cfg := Config{WS: ws}
			cfg.fill()
			h := newHandler(&cfg)
			sub := connected(h, codec.V311)
			sub.tls, sub.ws = state()
			h.t.add(sub, []byte("t"), 0, false)
			pc := &inConn{}
			pub := &session{c: pc, v: codec.V311, connected: true, recvMax: 65535}
			pub.tls, pub.ws = state()
			wire := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: bytes.Repeat([]byte{'x'}, 64)}, codec.V311)
			if ws {
				wire = clientFrames(nil, wire, len(wire), 0x5a3c9671)
			}
			// Over TLS, ring records sealed in order, one a read; after the last the publisher's
			// record layer starts again at sequence number 0 (a new one, every ring reads).
			const ring = 4096
			var in []byte
			if tls {
				client, err := tlsrec.New(suite, tlsrec.Client, cs, ss)
				if err != nil {
					b.Fatal(err)
				}
				for range ring {
					in = client.Seal(in, wire)
				}
			}
			rec := len(in) / ring
			var conn gnet.Conn = ctxConn{pc, pub}
			b.ResetTimer()
			for i := range b.N + 1 {
				if i == 1 {
					b.ResetTimer() // the first builds the buffers and cipher states
				}
				h.flushPending = true
				pc.in = wire
				if tls {
					if k := i % ring; k > 0 || i == 0 {
						pc.in = in[k*rec : (k+1)*rec]
					} else {
						pub.tls, _ = state()
						pc.in = in[:rec]
					}
				}
				h.OnTraffic(conn)
				h.flush()
			}
			b.StopTimer()
			if st := h.c.stats(); st.Relayed[0] != uint64(b.N+1) {
				b.Fatalf("relayed %d, want %d", st.Relayed[0], b.N+1)
			}
		})
	}
}

// ctxConn is an inConn whose Context is its session, as gnet's conn's is.
type ctxConn struct {
	*inConn
	s *session
}

func (c ctxConn) Context() any { return c.s }

func (c ctxConn) InboundBuffered() int { return len(c.in) }
