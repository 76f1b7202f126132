package report

import (
	"math"

	"github.com/mqblast/mqblast/result"
)

// SpectrumTicks is the number of spectrum points per decade of 1/(1−p).
const SpectrumTicks = 10

// SpectrumX returns the x positions of a percentile spectrum over count values: 1/(1−p) at
// SpectrumTicks points per decade, from 1 (p 0) to the first point past count (where p is
// the last value's rank, the max). A spectrum of fewer values has a prefix of this grid, so
// several results' spectra share one x axis.
func SpectrumX(count int64) []float64 {
	if count <= 0 {
		return nil
	}
	var xs []float64
	for k := 0; ; k++ {
		x := math.Pow(10, float64(k)/SpectrumTicks)
		xs = append(xs, x)
		if x >= float64(count) || k >= 12*SpectrumTicks {
			return xs
		}
	}
}

// Spectrum returns the values (µs) of h at the percentiles of SpectrumX(h.Count()): the
// percentile spectrum that HdrHistogram's plotter and wrk2 draw, exact from the counts. The
// last point is the max.
func Spectrum(h *result.Hist) (xs []float64, values []float64) {
	xs = SpectrumX(h.Count())
	values = make([]float64, len(xs))
	for i, x := range xs {
		values[i] = float64(h.ValueAtPercentile(100 * (1 - 1/x)))
	}
	if n := len(values); n > 0 {
		values[n-1] = float64(h.Max())
	}
	return xs, values
}
