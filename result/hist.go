package result

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 1 h at 3 significant digits (a group's: 2). Values are in µs.
const (
	histLowest  = 1
	histHighest = int64(3600 * 1e6)
	histDigits  = 3
	// groupDigits are the significant digits of a client group's histograms
	// (NewGroupSnapshot): values within 1 %, in 25 KB of counts instead of 184 KB. A
	// mixed run's worker holds each kind once per group beside the run's own, so that at 3
	// digits a million clients over 51 workers cost 1.4 MiB more per worker than a run
	// without groups (client RSS per connection 394 B against 320 B).
	groupDigits = 2
)

// Hist is an HdrHistogram of microseconds that encodes to JSON as its HdrHistogram V2
// compressed form (the base64 text hdrhistogram-go's Encode and HdrHistogram's own tools
// write, "HISTF..."), so shards merge exactly; an empty one encodes as null. Its counts
// (about 190 KB at 1 µs..1 h and 3 digits) are allocated at the first value, so the
// histograms a run does not use cost nothing to keep, merge or stream. Pack keeps only the
// compressed form (a few hundred bytes) of a histogram that will not change, as a run's
// intervals are; reading a packed one decodes it for the call, and changing it unpacks it.
// Record is not safe for concurrent use. A nil *Hist reads as empty. Its first fewMax values
// are kept as they are, without counts (a group's histogram in a worker that holds a few of
// its clients: 1 KB, not 25 KB, in each of the worker's copies); the next one moves them
// into counts, as does any read that needs counts.
type Hist struct {
	h       *hdrhistogram.Histogram
	packed  []byte   // the V2 compressed form when h is nil (Pack, UnmarshalJSON)
	n       int64    // the packed form's count
	few     []uint32 // values recorded while h and packed are nil (at most fewMax)
	clamped int64    // values outside the range, recorded at the nearest bound
	digits  int8     // significant digits of new counts (0: histDigits)
}

// fewMax is how many values a histogram keeps before it takes counts. Values fit in 32
// bits: the range ends at histHighest, below 2^32 µs.
const fewMax = 256

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{} }

// newGroupHist returns an empty histogram of groupDigits significant digits.
func newGroupHist() *Hist { return &Hist{digits: groupDigits} }

func newHDR(digits int8) *hdrhistogram.Histogram {
	if digits == 0 {
		digits = histDigits
	}
	if c, ok := countsPool(digits).Get().(*hdrhistogram.Histogram); ok {
		c.Reset()
		return c
	}
	return hdrhistogram.New(histLowest, histHighest, int(digits))
}

// spareCounts hold the counts arrays that Pack let go, by precision (group, run), for the
// next histogram to change: a run packs its interval's histograms at every interval, and
// allocating their counts anew each time (184 KB, a group's 25 KB) was most of what a
// mixed run allocated once the encoder's garbage was gone.
var spareCounts [2]sync.Pool

func countsPool(digits int8) *sync.Pool {
	if digits == groupDigits {
		return &spareCounts[0]
	}
	return &spareCounts[1]
}

// release gives counts c back to their pool, when they are of a precision and range a new
// histogram takes (a decoded foreign one may not be).
func release(c *hdrhistogram.Histogram) {
	d := int8(c.SignificantFigures())
	if (d == groupDigits || d == histDigits) && c.LowestTrackableValue() == histLowest && c.HighestTrackableValue() == histHighest {
		countsPool(d).Put(c)
	}
}

// own makes h's counts its own to change: decoded from the packed form, or new, with the
// few values kept so far moved into them.
func (h *Hist) own() {
	if h.packed != nil {
		if d, err := hdrhistogram.Decode(h.packed); err == nil {
			h.h = d
		}
		h.packed, h.n = nil, 0
	}
	if h.h == nil {
		h.h = newHDR(h.digits)
	}
	for _, v := range h.few {
		_ = h.h.RecordValue(int64(v))
	}
	h.few = h.few[:0] // kept for after a Reset: filling it anew would allocate
}

// encoded returns h's V2 compressed form and count, h unchanged: its few values are encoded
// through counts taken from the pool and given back.
func (h *Hist) encoded() ([]byte, int64) {
	switch {
	case h.h != nil:
		return encodeV2(h.h), h.h.TotalCount()
	case h.packed != nil:
		return h.packed, h.n
	}
	c := newHDR(h.digits)
	for _, v := range h.few {
		_ = c.RecordValue(int64(v))
	}
	b := encodeV2(c)
	release(c)
	return b, int64(len(h.few))
}

// spill moves the few values kept so far into counts.
func (h *Hist) spill() {
	if len(h.few) > 0 {
		h.own()
	}
}

// HDR returns h's counts as an hdrhistogram-go histogram for reading, nil when empty: h's
// own (not to be changed, nor kept past h's next change) or, when h is packed, decoded for
// the call.
func (h *Hist) HDR() *hdrhistogram.Histogram {
	if h.Count() == 0 {
		return nil
	}
	return h.read()
}

// read returns h's counts for reading (decoded for the call when packed; the few values
// kept so far moved into counts), or nil when empty.
func (h *Hist) read() *hdrhistogram.Histogram {
	if h == nil {
		return nil
	}
	h.spill()
	if h.h != nil || h.packed == nil {
		return h.h
	}
	d, err := hdrhistogram.Decode(h.packed)
	if err != nil {
		return nil
	}
	return d
}

// Record adds one value in µs, clamping (and counting) values outside the range.
func (h *Hist) Record(us int64) {
	switch {
	case us < histLowest:
		if us < 0 { // a clock step; below 1 µs is just below the resolution
			h.clamped++
		}
		us = histLowest
	case us > histHighest:
		us = histHighest
		h.clamped++
	}
	if h.h == nil {
		if h.packed == nil && len(h.few) < fewMax {
			h.few = append(h.few, uint32(us))
			return
		}
		h.own()
	}
	_ = h.h.RecordValue(us) // cannot fail: us is in range
}

// Merge adds o into h.
func (h *Hist) Merge(o *Hist) {
	if o.Count() == 0 {
		return
	}
	if o.h == nil && o.packed == nil { // o has its few values only
		for _, v := range o.few {
			h.Record(int64(v))
		}
		h.clamped += o.clamped
		return
	}
	if h.h == nil {
		h.own()
	}
	h.h.Merge(o.read())
	h.clamped += o.clamped
}

// Reset empties h. A histogram that took more than fewMax values since its last Reset keeps
// its counts array, emptied, for the next as many (a loop's, at every collection of a run
// that publishes); one that took fewer gives it back to the pool, for the next histogram of
// its precision to change, and holds no counts while its values stay few (a worker that has
// dialled its part and holds: 184 KB and a group's 25 KB less in each of its loop's and
// its collection's copy).
func (h *Hist) Reset() {
	if h.h != nil {
		if h.h.TotalCount() > fewMax {
			h.h.Reset()
		} else {
			release(h.h)
			h.h = nil
		}
	}
	h.packed, h.n, h.few, h.clamped = nil, 0, h.few[:0], 0
}

// Pack drops h's counts array and keeps its compressed form, for a histogram that is kept
// but no longer changes (an interval's).
func (h *Hist) Pack() {
	if h == nil {
		return
	}
	if h.packed == nil && h.Count() > 0 {
		h.packed, h.n = h.encoded()
	}
	if h.h != nil {
		release(h.h)
		h.h = nil
	}
	h.few = nil
}

// packedCopy returns a packed copy of h (nil when h is empty), made without copying its
// counts.
func (h *Hist) packedCopy() *Hist {
	if h.Count() == 0 {
		return nil
	}
	c := &Hist{clamped: h.clamped, digits: h.digits}
	c.packed, c.n = h.encoded()
	return c
}

// Count returns the number of values recorded.
func (h *Hist) Count() int64 {
	switch {
	case h == nil:
		return 0
	case h.h != nil:
		return h.h.TotalCount()
	case h.packed != nil:
		return h.n
	default:
		return int64(len(h.few))
	}
}

// Summary returns the usual percentiles.
func (h *Hist) Summary() Percentiles {
	d := h.read()
	if d == nil || d.TotalCount() == 0 {
		return Percentiles{}
	}
	v := d.ValueAtPercentiles([]float64{50, 90, 99, 99.9})
	return Percentiles{
		Count: d.TotalCount(), Mean: d.Mean(), P50: v[50], P90: v[90], P99: v[99], P999: v[99.9],
		Max: d.Max(), Clamped: h.clamped,
	}
}

// ValueAtPercentile returns the value at percentile p (0 to 100) as HdrHistogram computes
// it from the counts, exactly: the highest value equivalent to the smallest recorded value
// that at least p percent of the values are at or below (at p 0, the lowest value
// equivalent to the minimum). It returns 0 when h is empty. For reports (boxplots,
// percentile spectra); not for the hot path.
func (h *Hist) ValueAtPercentile(p float64) int64 {
	d := h.read()
	if d == nil || d.TotalCount() == 0 {
		return 0
	}
	return d.ValueAtPercentile(p)
}

// Min returns the lowest value equivalent to the smallest recorded value, 0 when empty.
func (h *Hist) Min() int64 {
	d := h.read()
	if d == nil || d.TotalCount() == 0 {
		return 0
	}
	return d.Min()
}

// Max returns the highest value equivalent to the largest recorded value, 0 when empty.
func (h *Hist) Max() int64 {
	d := h.read()
	if d == nil || d.TotalCount() == 0 {
		return 0
	}
	return d.Max()
}

// MarshalJSON writes the V2 compressed form ("HISTF..."), or null when h is empty.
func (h *Hist) MarshalJSON() ([]byte, error) {
	if h.Count() == 0 {
		return []byte("null"), nil
	}
	b, _ := h.encoded()
	return json.Marshal(string(b))
}

// UnmarshalJSON reads what MarshalJSON writes, and the base64 of it that documents written
// before 2026-12 hold. The histogram stays packed until it is changed.
func (h *Hist) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*h = Hist{}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	b := []byte(s)
	if !strings.HasPrefix(s, "HIST") { // the older, doubly encoded form
		inner, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("histogram: not an HdrHistogram V2 compressed form: %w", err)
		}
		b = inner
	}
	d, err := hdrhistogram.Decode(b)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	*h = Hist{packed: b, n: d.TotalCount()}
	if h.n == 0 {
		h.packed = nil
	}
	return nil
}

// Percentiles summarises a histogram, in µs.
type Percentiles struct {
	Count   int64   `json:"count"`
	Mean    float64 `json:"mean"`
	P50     int64   `json:"p50"`
	P90     int64   `json:"p90"`
	P99     int64   `json:"p99"`
	P999    int64   `json:"p999"`
	Max     int64   `json:"max"`
	Clamped int64   `json:"clamped,omitempty"`
}
