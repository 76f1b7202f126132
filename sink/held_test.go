package sink_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/sink"
)

// TestHeldBudget: 50 clients, one after the other, each send a PUBLISH of 1,000,000 bytes
// cut after 900,000 and never the rest, to a sink process whose MaxHeld is 8 MiB. Nine cut
// packets fit; each later client is closed once its cut packet takes the bytes held past the
// budget, and counted (held_over), and what the sink had read of it is counted in bytes_in.
// The held bytes stay within the budget, and the sink's RSS grows by under three times what it
// holds (1.7 here; a cut packet looked at again at every read costs five); when the nine close,
// their bytes are counted in too. It runs in the timing tier, in a build without the race
// detector: the RSS is a figure of the sink's own build, as a CPU figure is.
func TestHeldBudget(t *testing.T) {
	tm := tier.Timing(t)
	const clients, whole, cut, budget = 50, 1_000_000, 900_000, 8 << 20
	p := startChild(t, 0, envChildMaxHeld+"="+strconv.Itoa(budget))
	before := p.stats(t)
	pub := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: make([]byte, whole-7)}, codec.V311)
	if len(pub) != whole {
		t.Fatalf("the PUBLISH is %d bytes, want %d", len(pub), whole)
	}
	connect := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("cut"), CleanStart: true}, codec.V311)
	fits := budget / cut
	var held []net.Conn
	for i := range clients {
		nc, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		var ack [4]byte
		if _, err := nc.Write(connect); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(nc, ack[:]); err != nil {
			t.Fatalf("client %d: no CONNACK: %v", i, err)
		}
		_, werr := nc.Write(pub[:cut]) // fails for a client the sink closes meanwhile
		if i < fits {
			if werr != nil {
				t.Fatalf("client %d of the %d that fit: %v", i, fits, werr)
			}
			held = append(held, nc)
			for deadline := time.Now().Add(10 * time.Second); p.stats(t).HeldBytes != int64((i+1)*cut); {
				if time.Now().After(deadline) {
					t.Fatalf("client %d: the sink holds %d bytes, want %d", i, p.stats(t).HeldBytes, (i+1)*cut)
				}
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		if c := (&raw{t: t, nc: nc, v: codec.V311}); !c.closed(10 * time.Second) {
			t.Fatalf("client %d, past the budget: its connection is still open after 10s", i)
		}
	}
	st := p.stats(t)
	t.Logf("held %d bytes in %d connections, %d closed over the budget, bytes in %d; RSS %.1f -> %.1f MiB",
		st.HeldBytes, st.Connections, st.HeldOver, st.BytesIn, float64(before.RSS)/(1<<20), float64(st.RSS)/(1<<20))
	if st.HeldBytes != int64(fits*cut) || st.Connections != int64(fits) || st.HeldOver != uint64(clients-fits) || st.ProtocolErrors != 0 {
		t.Errorf("held %d bytes, %d open, %d closed over the budget, %d protocol errors; want %d, %d, %d, 0",
			st.HeldBytes, st.Connections, st.HeldOver, st.ProtocolErrors, fits*cut, fits, clients-fits)
	}
	// Each closed client held more than the room the nine left when it was closed.
	if least := uint64(clients*len(connect) + (clients-fits)*(budget-fits*cut)); st.BytesIn < least {
		t.Errorf("bytes in %d, want at least %d: what the closed clients sent is not counted", st.BytesIn, least)
	}
	// Under the race detector (make race) the child is a race build, whose shadow memory
	// grows with every byte it touches: its RSS says nothing of the sink's, and tm only logs.
	if grew := st.RSS - before.RSS; grew > int64(3*fits*cut) {
		tm.Errorf("the sink's RSS grew by %.1f MiB holding %d cut packets of %d bytes, want under three times that",
			float64(grew)/(1<<20), fits, cut)
	}
	for _, nc := range held {
		_ = nc.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); p.stats(t).Connections > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if end := p.stats(t); end.Connections != 0 || end.HeldBytes != 0 || end.BytesIn != st.BytesIn+uint64(fits*cut) {
		t.Errorf("after the nine closed: %d open, %d bytes held, bytes in %d; want 0, 0, %d",
			end.Connections, end.HeldBytes, end.BytesIn, st.BytesIn+uint64(fits*cut))
	}
}

// TestCutPacketWhole: a QoS 1 PUBLISH of 900,000 bytes arriving in pieces (its fixed header
// cut too) is held while cut, then handled once whole: acknowledged, relayed, and nothing
// held any more.
func TestCutPacketWhole(t *testing.T) {
	srv := startSink(t, sink.Config{})
	sub := connect(t, srv, codec.V5, "sub")
	sub.subscribe(1, "big")
	pub := connect(t, srv, codec.V311, "pub")
	payload := strings.Repeat("x", 900_000)
	wire := codec.AppendPublish(nil, &codec.Publish{Topic: []byte("big"), QoS: 1, ID: 7, Payload: []byte(payload)}, codec.V311)
	held := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); srv.Stats().HeldBytes != int64(want); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the sink holds %d bytes, want %d", srv.Stats().HeldBytes, want)
			}
		}
	}
	sent := 0
	for _, n := range []int{1, 2, 1, 64 << 10, 300_000, 200_000} { // the header, its length, then the body
		pub.send(wire[sent : sent+n])
		sent += n
		held(sent)
	}
	pub.send(wire[sent:])
	pub.expectAck(codec.TypePuback, 7)
	sub.expectPublish("big", 1, payload)
	held(0)
}
