//go:build !race

package reactor

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// serverFrame is one unmasked binary frame, as a broker sends it.
func serverFrame(p []byte) []byte {
	f := []byte{0x82}
	switch n := len(p); {
	case n < 126:
		f = append(f, byte(n))
	default:
		f = append(f, 126, byte(n>>8), byte(n))
	}
	return append(f, p...)
}

// TestWSReceiveAllocs: reading 50 QoS 1 PUBLISH packets in WebSocket frames (a frame cut
// by each read), handling them and writing their PUBACKs, in one masked frame, allocates
// nothing.
func TestWSReceiveAllocs(t *testing.T) {
	l, s, peer := testSession(t, 4)
	l.setTransport(s, &transport{ws: true})
	payload := make([]byte, HeaderSize)
	PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
	p := codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: payload}, codec.V311)
	f := serverFrame(p)
	batch := append([]byte(nil), f[5:]...)
	for range 49 {
		batch = append(batch, f...)
	}
	batch = append(batch, f[:5]...)
	if _, err := unix.Write(peer, f[:5]); err != nil {
		t.Fatal(err)
	}
	l.read(s)
	drain := make([]byte, 64<<10)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := unix.Write(peer, batch); err != nil {
			t.Fatal(err)
		}
		l.read(s)
		if n, err := unix.Read(peer, drain); err != nil || n != 8+50*4 { // 50 PUBACKs of 4 bytes in one frame (2+2+4 bytes of header)
			t.Fatalf("read %d bytes of the PUBACKs' frame, want 208: %v", n, err)
		}
	})
	if s.state != stConnected {
		t.Fatalf("session state %d after the reads", s.state)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per read of 50 PUBLISH over WebSocket", allocs)
	}
}

// TestWSPublishAllocs: a publish pass over WebSocket (its PUBLISH packets in one frame)
// allocates nothing.
func TestWSPublishAllocs(t *testing.T) {
	l, s, peer := testSession(t, 5)
	l.setTransport(s, &transport{ws: true})
	sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 32, Receivers: 1}
	l.e.pubStart.Store(1)
	l.startPublisher(s, sp, 0, 10, false)
	drain := make([]byte, 1<<20)
	// The passes' clock starts at the publisher's next due time, not at the engine's clock
	// read after startPublisher: a host that stalled the test between the two made the
	// first pass send all that fell due meanwhile, more than the socket holds (back
	// pressure, then nothing to read after the next pass: EAGAIN).
	now := s.pub.nextDue
	allocs := testing.AllocsPerRun(100, func() {
		now += int64(50 * time.Microsecond)
		l.publishDue(now)
		if _, err := unix.Read(peer, drain); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per publish pass over WebSocket", allocs)
	}
}

// TestTLSAllocs measures the allocations of the established TLS data path: a read of 50
// QoS 1 PUBLISH with the write of their PUBACKs, and a publish pass. The broker's side is
// raw bytes on the socket (records its tls.Conn sealed before the measurement), so that
// only the client's allocations count. crypto/tls allocates in its read (an atLeastReader
// per record read, conn.go readFromUntil); the loop's code around it allocates nothing.
func TestTLSAllocs(t *testing.T) {
	recv, pub := tlsAllocs(t, RecordLayerTLSConn)
	t.Logf("allocations over TLS: %v per read of 50 PUBLISH (with the PUBACKs' write), %v per publish pass", recv, pub)
	if recv > 4 || pub > 0 {
		t.Errorf("%v allocations per TLS read, %v per TLS publish pass; want <= 4 (crypto/tls's) and 0", recv, pub)
	}
}

// TestTLSLoopAllocs: on the loop's record layer the same read and publish pass allocate
// nothing: records opened into the loop's plaintext scratch, the PUBACKs of a read sealed
// in one record, a publish pass's messages in one record.
func TestTLSLoopAllocs(t *testing.T) {
	recv, pub := tlsAllocs(t, RecordLayerLoop)
	t.Logf("allocations over the loop's TLS: %v per read of 50 PUBLISH (with the PUBACKs' write), %v per publish pass", recv, pub)
	if recv != 0 || pub != 0 {
		t.Errorf("%v allocations per TLS read, %v per TLS publish pass on the loop's record layer; want 0", recv, pub)
	}
}

// tlsAllocs measures the allocations of a read of 50 QoS 1 PUBLISH with the write of their
// PUBACKs, and of a publish pass, over TLS on record layer layer.
func tlsAllocs(t *testing.T, layer string) (recv, pub float64) {
	l, s, srv, peer := tlsPairOn(t, 4, layer)
	payload := make([]byte, HeaderSize)
	PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
	p := codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: payload}, codec.V311)
	var batch []byte
	for range 50 {
		batch = append(batch, p...)
	}
	const batches = 60
	go func() {
		for range batches {
			_, _ = srv.Write(batch)
		}
	}()
	// Record the records, then give them back to the client a batch's worth at a time.
	var cipher []byte
	raw := make([]byte, 64<<10)
	quiet := time.Now()
	for time.Since(quiet) < 200*time.Millisecond {
		n, err := unix.Read(int(s.fd), raw)
		if err == nil {
			cipher = append(cipher, raw[:n]...)
			quiet = time.Now()
			continue
		}
		time.Sleep(time.Millisecond)
	}
	var chunks [][]byte
	for start, i := 0, 0; i+5 <= len(cipher); {
		i += 5 + (int(cipher[i+3])<<8 | int(cipher[i+4]))
		if i-start >= len(batch) || i >= len(cipher) {
			chunks = append(chunks, cipher[start:i])
			start = i
		}
	}
	if len(chunks) < batches-2 {
		t.Fatalf("%d chunks of records from %d bytes", len(chunks), len(cipher))
	}
	drain := make([]byte, 1<<20)
	next := 0
	feed := func() {
		if _, err := unix.Write(peer, chunks[next]); err != nil {
			t.Fatal(err)
		}
		next++
		l.read(s)
		_, _ = unix.Read(peer, drain)
	}
	for range 5 { // settle: the tickets, the buffers grown
		feed()
	}
	recv = testing.AllocsPerRun(min(40, len(chunks)-next-1), feed)
	if s.state != stConnected {
		t.Fatalf("session state %d", s.state)
	}
	sp := &PublishSpec{Topic: []byte("bench/x"), QoS: 0, Rate: 1e6, PayloadSize: 32, Receivers: 1}
	l.e.pubStart.Store(1)
	l.startPublisher(s, sp, 0, 10, false)
	// The passes' clock starts at the publisher's next due time, not at the engine's clock
	// read after startPublisher: a host that stalled the test between the two made the
	// first pass send all that fell due meanwhile, more than the socket holds (back
	// pressure, then nothing to read after the next pass: EAGAIN).
	now := s.pub.nextDue
	pub = testing.AllocsPerRun(100, func() {
		now += int64(50 * time.Microsecond)
		l.publishDue(now)
		if _, err := unix.Read(peer, drain); err != nil {
			t.Fatal(err)
		}
	})
	return recv, pub
}
