package reactor

import (
	"bytes"
	"strings"
	"testing"
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
