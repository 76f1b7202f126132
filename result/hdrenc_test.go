package result

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestEncodeV2MatchesLibrary: encodeV2 writes byte for byte what hdrhistogram-go's own
// V2 compressed encoding writes, for histograms of both precisions, empty, of one value,
// of values across the range (zero runs, counts of one to nine LEB128 bytes), and decodes.
func TestEncodeV2MatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, digits := range []int8{groupDigits, histDigits} {
		for k, fill := range []func(h *hdrhistogram.Histogram){
			func(*hdrhistogram.Histogram) {},
			func(h *hdrhistogram.Histogram) { _ = h.RecordValue(1) },
			func(h *hdrhistogram.Histogram) { _ = h.RecordValue(histHighest) },
			func(h *hdrhistogram.Histogram) {
				for range 10000 {
					_ = h.RecordValue(1 + r.Int64N(5000))
				}
			},
			func(h *hdrhistogram.Histogram) {
				for range 5000 {
					_ = h.RecordValue(int64(r.ExpFloat64()*2000) + 1)
				}
				_ = h.RecordValues(777, 1<<40)
				_ = h.RecordValues(90_000_000, 1<<62)
			},
		} {
			h := newHDR(digits)
			fill(h)
			want, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				t.Fatal(err)
			}
			got := encodeV2(h)
			if !bytes.Equal(got, want) {
				t.Errorf("digits %d, histogram %d: encodeV2 %q, the library %q", digits, k, got, want)
				continue
			}
			d, err := hdrhistogram.Decode(got)
			if err != nil || !d.Equals(h) {
				t.Errorf("digits %d, histogram %d: decoded %v (%v)", digits, k, d, err)
			}
		}
	}
	if got := appendZigZag(nil, -1); !bytes.Equal(got, []byte{1}) {
		t.Errorf("zigzag(-1) = %x", got)
	}
}

// BenchmarkPack: what packing an interval's group histogram costs, with the library's
// encoding and with encodeV2.
func BenchmarkPack(b *testing.B) {
	h := newHDR(groupDigits)
	for i := range 2000 {
		_ = h.RecordValue(int64(100 + i*7))
	}
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		}
	})
	b.Run("encodeV2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encodeV2(h)
		}
	})
}
