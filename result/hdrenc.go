package result

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// HdrHistogram's V2 encoding: the cookies of the plain payload and of its zlib-compressed
// form (word size 8), as HdrHistogram's other implementations write them.
const (
	v2Cookie           = hdrhistogram.V2EncodingCookieBase | 0x10
	v2CompressedCookie = hdrhistogram.V2CompressedEncodingCookieBase | 0x10
)

// encoder is what encodeV2 keeps between calls: a zlib compressor (about 1 MB at best
// compression, which hdrhistogram-go's Encode allocates anew on every call) and buffers.
type encoder struct {
	z    *zlib.Writer
	raw  []byte
	comp bytes.Buffer
}

// encoders keeps encoders between calls, not for the process's life: a collection lets
// them go (a kept one measured +75 B of client RSS per connection at 10,000 connections,
// its compressor's ~0.8 MB, in every worker process).
var encoders = sync.Pool{New: func() any {
	z, _ := zlib.NewWriterLevel(nil, zlib.BestCompression) // a valid level: no error
	return &encoder{z: z}
}}

// encodeV2 returns h in HdrHistogram's V2 compressed encoding, base64 ("HISTF..."), byte for
// byte what h.Encode(hdrhistogram.V2CompressedEncodingCookieBase) returns, without its
// garbage: a run packs every interval's histograms, each group's too, and Encode's
// compressor per call made most of a mixed run's allocations (217 MB in a 40 s run of
// 19,600 clients in four groups, 159 MB of it compressors).
func encodeV2(h *hdrhistogram.Histogram) []byte {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	s := h.Export()
	// The counts up to the largest value's bucket (the first alone when h is empty), zero
	// runs as their negated length, each a ZigZag LEB128-64b9B number.
	limit := 1
	for i := len(s.Counts) - 1; i > 0; i-- {
		if s.Counts[i] != 0 {
			limit = i + 1
			break
		}
	}
	ratio := s.IntegerToDoubleConversionRatio
	if ratio == 0 {
		ratio = 1
	}
	b := e.raw[:0]
	b = binary.BigEndian.AppendUint32(b, uint32(v2Cookie))
	b = binary.BigEndian.AppendUint32(b, 0) // the payload's length, below
	b = binary.BigEndian.AppendUint32(b, 0) // normalizing index offset: counts are not rotated
	b = binary.BigEndian.AppendUint32(b, uint32(s.SignificantFigures))
	b = binary.BigEndian.AppendUint64(b, uint64(s.LowestTrackableValue))
	b = binary.BigEndian.AppendUint64(b, uint64(s.HighestTrackableValue))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(ratio))
	for i := 0; i < limit; {
		c := s.Counts[i]
		i++
		if c == 0 {
			run := int64(1)
			for i < limit && s.Counts[i] == 0 {
				run++
				i++
			}
			if run > 1 {
				c = -run
			}
		}
		b = appendZigZag(b, c)
	}
	binary.BigEndian.PutUint32(b[4:8], uint32(len(b)-40))
	e.raw = b
	e.comp.Reset()
	e.comp.Write(make([]byte, 8)) // the compressed form's cookie and length, below
	e.z.Reset(&e.comp)
	_, _ = e.z.Write(b) // a bytes.Buffer takes everything
	_ = e.z.Close()
	out := e.comp.Bytes()
	binary.BigEndian.PutUint32(out[0:4], uint32(v2CompressedCookie))
	binary.BigEndian.PutUint32(out[4:8], uint32(len(out)-8))
	return base64.StdEncoding.AppendEncode(nil, out)
}

// appendZigZag appends v ZigZag-encoded as LEB128-64b9B: 7 bits a byte, low first, the
// ninth byte whole.
func appendZigZag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for k := 0; k < 8; k++ {
		if u < 0x80 {
			return append(b, byte(u))
		}
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}
