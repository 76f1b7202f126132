package sink

import (
	"bytes"
	"testing"
)

// TestHandshakeReadStopsAtRecord: the handshake's conn never returns bytes past the end of
// the current record, whatever the reader asks for and however the bytes arrived, so that
// crypto/tls leaves the records after the handshake's last one to the loop.
func TestHandshakeReadStopsAtRecord(t *testing.T) {
	rec := func(typ byte, n int) []byte {
		return append([]byte{typ, 3, 3, byte(n >> 8), byte(n)}, bytes.Repeat([]byte{typ}, n)...)
	}
	first, second := rec(22, 300), rec(23, 40)
	p := &hsConn{wake: make(chan struct{}, 1)}
	p.feed(first[:3])                                      // a cut header: nothing is served until it is whole
	go p.feed(append(append(first[3:], second...), 23, 3)) // the rest, the next record, a cut header
	var got []byte
	buf := make([]byte, 64<<10)
	for len(got) < len(first) {
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, first) {
		t.Fatalf("read %d bytes, want the first record's %d exactly", len(got), len(first))
	}
	p.mu.Lock()
	left := append([]byte(nil), p.in...)
	p.mu.Unlock()
	if want := append(append([]byte(nil), second...), 23, 3); !bytes.Equal(left, want) {
		t.Fatalf("left %d bytes for the loop, want the next record and a cut header (%d)", len(left), len(want))
	}
	small := make([]byte, 7)
	n, err := p.Read(small)
	if err != nil || n != 7 || !bytes.Equal(small, second[:7]) {
		t.Fatalf("a short read: %d %v", n, err)
	}
	_ = p.Close()
	if _, err := p.Read(buf); err == nil {
		t.Fatal("a read after Close: no error")
	}
}
