package codec_test

import (
	"testing"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// TestPacketLen: for every valid vector, PacketLen gives its whole size from every prefix
// that holds its fixed header, and nothing from a shorter one.
func TestPacketLen(t *testing.T) {
	t.Parallel()
	for _, v := range codectest.Vectors {
		if v.Err != nil {
			continue
		}
		raw := v.Raw
		_, body, _, _ := codec.Split(raw, 0)
		header := len(raw) - len(body)
		for i := 0; i <= min(len(raw), header+2); i++ {
			n, ok := codec.PacketLen(raw[:i])
			if want := i >= header; ok != want || ok && n != len(raw) {
				t.Errorf("%s: PacketLen of %d bytes (header %d) = %d, %v; want %d, %v", v.Name, i, header, n, ok, len(raw), want)
			}
		}
	}
}
