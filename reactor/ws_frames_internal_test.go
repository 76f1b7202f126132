package reactor

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/mqblast/mqblast/codec"
)

// maskRef is RFC 6455 section 5.3's masking, byte at a time: octet i of the payload XOR
// octet (i+off) mod 4 of the key (the key's octets in wire order are its little-endian
// bytes).
func maskRef(p []byte, key uint32, off int) []byte {
	out := make([]byte, len(p))
	for i := range p {
		out[i] = p[i] ^ byte(key>>(8*((i+off)%4)))
	}
	return out
}

// TestMaskCopy: maskCopy against the byte-at-a-time reference for every length from 0 to
// 4096, every key offset (a payload masked from octet off of the key is maskCopy with the
// key rotated), source and destination at every alignment to 8 bytes, and in place. The
// bytes after the destination are left alone.
func TestMaskCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 4096+8)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst := make([]byte, 4096+16)
	for n := 0; n <= 4096; n++ {
		for off := range 4 {
			key := r.Uint32()
			rot := key>>(8*off) | key<<(32-8*off)
			sa, da := n%8, (n/8+off)%8 // the alignments, varied with the length
			p := src[sa : sa+n]
			want := maskRef(p, key, off)
			for i := range dst {
				dst[i] = 0xa5
			}
			maskCopy(dst[da:da+n], p, rot)
			if !bytes.Equal(dst[da:da+n], want) {
				t.Fatalf("length %d, key offset %d, alignments %d/%d: masked bytes differ from the reference", n, off, sa, da)
			}
			if dst[da+n] != 0xa5 || (da > 0 && dst[da-1] != 0xa5) {
				t.Fatalf("length %d: maskCopy wrote outside its destination", n)
			}
			in := append([]byte(nil), p...)
			maskCopy(in, in, rot)
			if !bytes.Equal(in, want) {
				t.Fatalf("length %d, key offset %d: masking in place differs from the reference", n, off)
			}
		}
	}
}

// TestAppendFramesBatch: a write batch's packets (of 2 bytes up to longer than a frame
// holds) go out in masked final binary frames, each holding whole packets, as many as fit
// in wsFrameMax (a longer packet alone), each with a key of its own; unmasked byte at a
// time, their payloads are the batch.
func TestAppendFramesBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	keys := newMaskKeys()
	for round := range 200 {
		var batch []byte
		var ends []int // packet ends in batch
		for range 1 + r.IntN(400) {
			var p []byte
			switch k := r.IntN(20); {
			case k == 0:
				p = codec.AppendPingreq(nil)
			case k == 1 && round%4 == 0: // over a frame's worth
				p = codec.AppendPublish(nil, &codec.Publish{Topic: []byte("t"), Payload: make([]byte, wsFrameMax+r.IntN(3000))}, codec.V311)
			default:
				p = codec.AppendPublish(nil, &codec.Publish{Topic: []byte("bench/x"), Payload: make([]byte, r.IntN(300))}, codec.V311)
			}
			batch = append(batch, p...)
			ends = append(ends, len(batch))
		}
		wire := appendFrames([]byte("prefix"), batch, &keys)
		if string(wire[:6]) != "prefix" {
			t.Fatal("appendFrames overwrote what dst held")
		}
		wire = wire[6:]
		var got []byte
		seen := map[uint32]bool{}
		frames := 0
		for len(wire) > 0 {
			hlen, b0, plen, masked, ok := wsHeader(wire)
			if !ok || b0 != 0x80|wsBinary || !masked || uint64(len(wire)-hlen) < plen {
				t.Fatalf("round %d, frame %d: header % x is not a whole masked final binary frame", round, frames, wire[:min(len(wire), 14)])
			}
			key := uint32(wire[hlen-4]) | uint32(wire[hlen-3])<<8 | uint32(wire[hlen-2])<<16 | uint32(wire[hlen-1])<<24
			if seen[key] {
				t.Fatalf("round %d: masking key %#x drawn twice", round, key)
			}
			seen[key] = true
			start := len(got)
			got = append(got, maskRef(wire[hlen:hlen+int(plen)], key, 0)...)
			// Whole packets, and no more fitted: the next packet would pass wsFrameMax.
			i := indexOf(ends, len(got))
			if i < 0 || (start > 0 && indexOf(ends, start) < 0) {
				t.Fatalf("round %d, frame %d: bytes %d-%d cut a packet", round, frames, start, len(got))
			}
			if plen > wsFrameMax && i > 0 && ends[i-1] != start {
				t.Fatalf("round %d, frame %d: %d bytes, over %d with more than one packet", round, frames, plen, wsFrameMax)
			}
			if i+1 < len(ends) && ends[i+1]-start <= wsFrameMax {
				t.Fatalf("round %d, frame %d: ends at %d bytes where the next packet still fitted", round, frames, plen)
			}
			wire = wire[hlen+int(plen):]
			frames++
		}
		if !bytes.Equal(got, batch) {
			t.Fatalf("round %d: the frames' payloads (%d bytes) are not the batch (%d)", round, len(got), len(batch))
		}
		if round == 0 {
			t.Logf("%d packets, %d bytes: %d frames", len(ends), len(batch), frames)
		}
	}
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
