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
// HdrHistogram V2 compressed form, so shards merge exactly. Record is not safe for
// concurrent use.
type Hist struct {
	h       *hdrhistogram.Histogram
	clamped int64 // values outside the range, recorded at the nearest bound
}

// NewHist returns an empty histogram.
func NewHist() *Hist { return &Hist{h: hdrhistogram.New(histLowest, histHighest, histDigits)} }

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
	_ = h.h.RecordValue(us) // cannot fail: us is in range
}

// Merge adds o into h.
func (h *Hist) Merge(o *Hist) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Reset empties h.
func (h *Hist) Reset() { h.h.Reset(); h.clamped = 0 }

// Count returns the number of values recorded.
func (h *Hist) Count() int64 { return h.h.TotalCount() }

// Quantile returns the value at quantile q (0..100) in µs.
func (h *Hist) Quantile(q float64) int64 { return h.h.ValueAtQuantile(q) }

// Clone returns a copy of h.
func (h *Hist) Clone() *Hist { return &Hist{h: h.h.Clone(), clamped: h.clamped} }

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

// MarshalJSON encodes the V2 compressed form in base64.
func (h *Hist) MarshalJSON() ([]byte, error) {
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("cannot encode a histogram: %w", err)
	}
	return json.Marshal(base64.StdEncoding.EncodeToString(b))
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (h *Hist) UnmarshalJSON(data []byte) error {
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
