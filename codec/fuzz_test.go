package codec_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/codec/codectest"
)

// maxFuzzInput caps fuzz inputs: larger ones teach nothing new and slow every execution.
const maxFuzzInput = 1 << 20

// seed adds every golden vector that fits the cap, with its version.
func seed(f *testing.F, add func(raw []byte, v codec.Version)) {
	f.Helper()
	for _, v := range codectest.Vectors {
		if len(v.Raw) <= maxFuzzInput {
			add(v.Raw, v.Version)
		}
	}
}

func fuzzVersion(b byte) codec.Version {
	if b%2 == 0 {
		return codec.V311
	}
	return codec.V5
}

// FuzzSplit frames arbitrary bytes. Invariants:
//  1. Split never panics.
//  2. Split never returns n > len(buf); a packet's n is its header plus its body, and the body
//     is the tail of buf[:n].
//  3. A need-more answer stays need-more for every shorter prefix... and an error stays the
//     same error when more bytes arrive (the verdict on a header never changes).
//  4. Cutting the input at a fuzzed offset and feeding both parts in turn yields the same
//     packets, and the same final error, as feeding it whole.
func FuzzSplit(f *testing.F) {
	seed(f, func(raw []byte, _ codec.Version) { f.Add(raw, uint16(len(raw)/2), uint32(0)) })
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0x7f}, uint16(2), uint32(100))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, maxSize uint32) {
		if len(data) > maxFuzzInput {
			return
		}
		limit := int(maxSize % (maxFuzzInput * 2))
		whole, wholeErr := splitAll(t, data, limit)
		// Feed data in two reads cut at the fuzzed offset, keeping the unsplit rest buffered.
		cutAt := int(at) % (len(data) + 1)
		var buf []byte
		var parts [][]byte
		var partErr error
		for _, chunk := range [][]byte{data[:cutAt], data[cutAt:]} {
			buf = append(buf, chunk...)
			got, err := splitAll(t, buf, limit)
			for _, p := range got {
				parts = append(parts, p)
				buf = buf[len(p):]
			}
			if err != nil {
				partErr = err
				break
			}
		}
		if partErr != wholeErr { //nolint:errorlint // sentinels, compared exactly
			t.Fatalf("error whole %v, in two reads %v", wholeErr, partErr)
		}
		if len(parts) != len(whole) {
			t.Fatalf("%d packets whole, %d in two reads", len(whole), len(parts))
		}
		for i := range whole {
			if !bytes.Equal(whole[i], parts[i]) {
				t.Fatalf("packet %d differs", i)
			}
		}
	})
}

// splitAll splits every complete packet off buf and returns them and the error that stopped it.
func splitAll(t *testing.T, buf []byte, limit int) ([][]byte, error) {
	var out [][]byte
	for {
		_, body, n, err := codec.Split(buf, limit)
		if n > len(buf) {
			t.Fatalf("n = %d > len(buf) = %d", n, len(buf))
		}
		if err != nil {
			if n != 0 {
				t.Fatalf("n = %d with error %v", n, err)
			}
			return out, err
		}
		if n == 0 {
			return out, nil
		}
		if len(body) > n-2 || (len(body) > 0 && &body[len(body)-1] != &buf[n-1]) {
			t.Fatalf("body of %d bytes is not the tail of the %d-byte packet", len(body), n)
		}
		out = append(out, buf[:n])
		buf = buf[n:]
	}
}

// FuzzDecode decodes arbitrary bytes as a stream of packets of one protocol version.
// Invariants:
//  1. Nothing panics on any input: Split, every decoder, Validate.
//  2. Decoding into reused structs (as a connection does) gives the same result as decoding
//     into fresh ones: no field survives from an earlier packet.
//  3. A packet that decodes passes Validate: the decoders accept nothing the encoders refuse.
func FuzzDecode(f *testing.F) {
	seed(f, func(raw []byte, v codec.Version) { f.Add(raw, byte(v)) })
	f.Fuzz(func(t *testing.T, data []byte, ver byte) {
		if len(data) > maxFuzzInput {
			return
		}
		v := fuzzVersion(ver)
		var reused structs
		for len(data) > 0 {
			h, body, n, err := codec.Split(data, 0)
			if err != nil || n == 0 {
				return
			}
			data = data[n:]
			fresh, errFresh := codectest.DecodeBody(h, body, v)
			again, errReused := reused.decode(h, body, v)
			if errFresh != errReused { //nolint:errorlint // sentinels, compared exactly
				t.Fatalf("%v: fresh err %v, reused err %v", h.Type, errFresh, errReused)
			}
			if errFresh != nil {
				continue
			}
			// DeepEqual first: both alias the same body, and cmp is ten times slower.
			if !reflect.DeepEqual(fresh.Packet, again) {
				if diff := cmp.Diff(fresh.Packet, again, equateEmpty); diff != "" {
					t.Fatalf("%v: reused struct differs (-fresh +reused):\n%s", h.Type, diff)
				}
			}
			if err := validate(h.Type, fresh.Packet, fresh.Version); err != nil {
				t.Fatalf("%v decodes but fails Validate: %v", h.Type, err)
			}
		}
	})
}

// FuzzRoundTrip decodes the first packet of arbitrary bytes. Invariants:
//  1. Nothing panics.
//  2. A packet that decodes also re-encodes, Size* matches the encoding, and the re-encoding
//     decodes to an equal struct (cmp.Diff).
//  3. Encoding is canonical: encoding that second struct gives the same bytes again.
func FuzzRoundTrip(f *testing.F) {
	seed(f, func(raw []byte, v codec.Version) { f.Add(raw, byte(v)) })
	f.Fuzz(func(t *testing.T, data []byte, ver byte) {
		if len(data) > maxFuzzInput {
			return
		}
		d, n, err := codectest.Decode(data, fuzzVersion(ver), 0)
		if err != nil || n == 0 {
			return
		}
		wire := codectest.Encode(nil, d.Header.Type, d.Packet, d.Version)
		if size := encodedSize(t, d.Header.Type, d.Packet, d.Version); size != len(wire) {
			t.Fatalf("%v: Size = %d, encoded %d bytes", d.Header.Type, size, len(wire))
		}
		d2, n2, err := codectest.Decode(wire, d.Version, 0)
		if err != nil || n2 != len(wire) {
			t.Fatalf("%v: re-encoding does not decode: n=%d/%d err=%v\n% x", d.Header.Type, n2, len(wire), err, head(wire))
		}
		if diff := cmp.Diff(d.Packet, d2.Packet, equateEmpty); diff != "" {
			t.Fatalf("%v: round trip differs (-first +second):\n%s", d.Header.Type, diff)
		}
		if wire2 := codectest.Encode(nil, d2.Header.Type, d2.Packet, d2.Version); !bytes.Equal(wire, wire2) {
			t.Fatalf("%v: encoding is not canonical:\n% x\n% x", d.Header.Type, head(wire), head(wire2))
		}
	})
}
