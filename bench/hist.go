package bench

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 1 h at 3 significant digits (DESIGN.md §3). Values are in µs.
const (
	histLowest  = 1
	histHighest = int64(3600 * 1e6)
	histDigits  = 3
)

// Hist is an HdrHistogram of microseconds that encodes to JSON as the base64 of its
// HdrHistogram V2 compressed form, so shards merge exactly; an empty one encodes as null.
// Its counts (about 190 KB at 1 µs..1 h and 3 digits) are allocated at the first value, so
// the histograms a run does not use cost nothing to keep, merge or stream. Record is not safe
// for concurrent use. A nil *Hist reads as empty.
type Hist struct {
	h       *hdrhistogram.Histogram
	clamped int64 // values outside the range, recorded at the nearest bound
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{} }

func newHDR() *hdrhistogram.Histogram { return hdrhistogram.New(histLowest, histHighest, histDigits) }

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
		h.h = newHDR()
	}
	_ = h.h.RecordValue(us) // cannot fail: us is in range
}

// Merge adds o into h.
func (h *Hist) Merge(o *Hist) {
	if o.Count() == 0 {
		return
	}
	if h.h == nil {
		h.h = newHDR()
	}
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Reset empties h, keeping its counts array for reuse.
func (h *Hist) Reset() {
	if h.h != nil {
		h.h.Reset()
	}
	h.clamped = 0
}

// Count returns the number of values recorded.
func (h *Hist) Count() int64 {
	if h == nil || h.h == nil {
		return 0
	}
	return h.h.TotalCount()
}

// Summary returns the usual percentiles.
func (h *Hist) Summary() Percentiles {
	if h.Count() == 0 {
		return Percentiles{}
	}
	v := h.h.ValueAtPercentiles([]float64{50, 90, 99, 99.9})
	return Percentiles{
		Count: h.Count(), Mean: h.h.Mean(), P50: v[50], P90: v[90], P99: v[99], P999: v[99.9],
		Max: h.h.Max(), Clamped: h.clamped,
	}
}

// ValueAtPercentile returns the value at percentile p (0 to 100) as HdrHistogram computes
// it from the counts, exactly: the highest value equivalent to the smallest recorded value
// that at least p percent of the values are at or below (at p 0, the lowest value
// equivalent to the minimum). It returns 0 when h is empty. For reports (boxplots,
// percentile spectra); not for the hot path.
func (h *Hist) ValueAtPercentile(p float64) int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.ValueAtPercentile(p)
}

// Min returns the lowest value equivalent to the smallest recorded value, 0 when empty.
func (h *Hist) Min() int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Min()
}

// Max returns the highest value equivalent to the largest recorded value, 0 when empty.
func (h *Hist) Max() int64 {
	if h.Count() == 0 {
		return 0
	}
	return h.h.Max()
}

// MarshalJSON encodes the V2 compressed form in base64, or null when h is empty.
func (h *Hist) MarshalJSON() ([]byte, error) {
	if h.Count() == 0 {
		return []byte("null"), nil
	}
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("cannot encode a histogram: %w", err)
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (h *Hist) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*h = Hist{}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("histogram: not base64: %w", err)
	}
	d, err := hdrhistogram.Decode(b)
	if err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	h.h = d
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
