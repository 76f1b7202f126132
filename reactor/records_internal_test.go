package reactor

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mqblast/mqblast/codec"
)

// TestTLSLoopReadPath: on the loop's record layer, with crypto/tls as the broker, the QoS 1
// PUBLISH packets of the broker's records (a packet cut across two records, the session
// tickets first) are handled whatever the reads cut, one byte or a few at a time, a
// record kept until its rest comes; their PUBACKs, sealed by the loop, are read by the
// broker's tls.Conn. Between the reads the sweep releases the cipher state, which the
// next record rebuilds; the buffer of a cut record goes with it once no record is cut.
func TestTLSLoopReadPath(t *testing.T) {
	l, s, srv, peer := tlsPairOn(t, 4, RecordLayerLoop)
	tr := l.transportOf(s).sec
	if tr.tls != nil || tr.rec == nil {
		t.Fatalf("transport keeps tls.Conn %v, record layer %v", tr.tls != nil, tr.rec != nil)
	}
	payload := make([]byte, HeaderSize)
	PutHeader(payload, time.Now().UnixNano(), 0, 0, 0)
	p := codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 7, Topic: []byte("bench/x"), Payload: payload}, codec.V311)
	const n = 60
	go func() {
		for range n {
			_, _ = srv.Write(p[:10]) // a packet cut across two records
			_, _ = srv.Write(p[10:])
		}
	}()
	cipher := rawRecords(t, int(s.fd), n*len(p)) // the broker's records as they reach the client's socket
	acks := make(chan int, 1)
	go func() {
		got, buf := 0, make([]byte, 4096)
		for got < n*4 {
			_ = srv.SetReadDeadline(time.Now().Add(10 * time.Second))
			k, err := srv.Read(buf)
			if err != nil {
				break
			}
			if !bytes.Equal(buf[:4], []byte{0x40, 2, 0, 7}) {
				t.Errorf("the broker read % x, want PUBACKs of id 7", buf[:min(k, 8)])
			}
			got += k
		}
		acks <- got
	}()
	now := l.e.now()
	for i, cut := 0, 1; i < len(cipher); cut = cut%7 + 1 { // reads of 1 to 7 bytes
		k := min(cut, len(cipher)-i)
		if _, err := unix.Write(peer, cipher[i:i+k]); err != nil {
			t.Fatal(err)
		}
		i += k
		l.read(s)
		if s.state != stConnected {
			t.Fatalf("session state %d after %d of %d bytes", s.state, i, len(cipher))
		}
		if i%97 < 7 { // two sweeps: the first sees it used, the second releases it
			now += int64(coldAfter)
			l.sweep(now)
			now += int64(coldAfter)
			l.sweep(now)
			if tr.warm || (len(tr.part) == 0 && tr.part != nil) {
				t.Fatalf("after two idle sweeps: warm %v, cut record buffer %d/%d bytes", tr.warm, len(tr.part), cap(tr.part))
			}
		}
	}
	if got := <-acks; got != n*4 {
		t.Fatalf("the broker read %d bytes of PUBACK, want %d", got, n*4)
	}
	if st := tr.rec.Stats(); st.Tickets == 0 {
		t.Errorf("record layer stats %+v: the broker's session tickets not seen", st)
	}
	if len(tr.part) != 0 {
		t.Errorf("%d bytes of a cut record left", len(tr.part))
	}
}

// TestTLSTicketHandOver: on the loop's record layer the handshake's tls.Conn reads along
// only until it has kept the broker's session ticket in the client's slot of the engine's
// cache: from the read that brought the ticket on, the loop's record layer opens the
// records alone (the broker's later records, a PUBLISH, are not decrypted twice), and the
// session kept is one a reconnect can resume.
func TestTLSTicketHandOver(t *testing.T) {
	l, s, srv, peer := tlsPairKeeping(t, 4, RecordLayerLoop, true)
	tr := l.transportOf(s).sec
	if tr.rec == nil {
		t.Fatal("no record layer")
	}
	if l.e.tlsSess.session(int(s.client)) == nil { // the ticket came after the handshake's reads: the first read brings it
		cipher := rawRecords(t, int(s.fd), 1)
		if _, err := unix.Write(peer, cipher); err != nil {
			t.Fatal(err)
		}
		l.read(s)
	}
	if tr.tls != nil || s.state != stConnected {
		t.Fatalf("after the broker's ticket: tls.Conn kept %v, session state %d", tr.tls != nil, s.state)
	}
	if cs := l.e.tlsSess.session(int(s.client)); cs == nil {
		t.Fatal("no session kept in the client's slot")
	}
	p := codec.AppendPublish(nil, &codec.Publish{QoS: 1, ID: 9, Topic: []byte("t"), Payload: []byte("x")}, codec.V311)
	go func() { _, _ = srv.Write(p) }()
	cipher := rawRecords(t, int(s.fd), 1)
	if _, err := unix.Write(peer, cipher); err != nil {
		t.Fatal(err)
	}
	l.read(s)
	if tickets := tr.rec.Stats().Tickets; s.state != stConnected || tickets == 0 {
		t.Fatalf("session state %d after a PUBLISH record; tickets counted %d", s.state, tickets)
	}
	buf := make([]byte, 64)
	_ = srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := srv.Read(buf); err != nil || !bytes.Equal(buf[:n], []byte{0x40, 2, 0, 9}) {
		t.Fatalf("the broker read % x (%v), want the PUBACK of id 9", buf[:n], err)
	}
}
