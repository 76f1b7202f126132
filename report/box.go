package report

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/mqblast/mqblast/result"
)

// BoxStats are the box statistics of a distribution in µs, computed exactly from an
// HdrHistogram's counts (3 significant digits): each figure is the bucket bound HdrHistogram
// reports for that rank (result.Hist.ValueAtPercentile), never an average of percentiles.
type BoxStats struct {
	Count int64 `json:"count"`
	Min   int64 `json:"min"`
	P1    int64 `json:"p1"`
	P25   int64 `json:"p25"`
	P50   int64 `json:"p50"` // the median
	P75   int64 `json:"p75"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
}

// Box returns the box statistics of h; all zero when h is nil or empty.
func Box(h *result.Hist) BoxStats {
	if h.Count() == 0 {
		return BoxStats{}
	}
	return BoxStats{Count: h.Count(), Min: h.Min(), P1: h.ValueAtPercentile(1),
		P25: h.ValueAtPercentile(25), P50: h.ValueAtPercentile(50), P75: h.ValueAtPercentile(75),
		P99: h.ValueAtPercentile(99), Max: h.Max()}
}

// BoxItem is one box of a boxplot: a label (a result, a broker) and its statistics.
type BoxItem struct {
	Label string
	Box   BoxStats
}

// BoxplotOptions shape a boxplot. Zero values take the defaults.
type BoxplotOptions struct {
	Title  string // drawn above the plot; empty: none
	Linear bool   // a linear value axis; the default is logarithmic (latencies span decades)
	Width  int    // in px; default 760
}

// BoxLegend states what a box shows; BoxplotSVG draws it under the plot.
const BoxLegend = "box p25–p75, bar the median, whiskers p1 and p99, dots min and max; " +
	"exact from the HdrHistograms (3 significant digits)"

// palette are the series colours (Tableau 10), readable on a light and a dark background.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Color returns the colour of series i, the same in the SVG boxplots and the charts.
func Color(i int) string { return palette[i%len(palette)] }

// BoxplotSVG returns a standalone SVG (an <svg> element: inline it into HTML or write it to
// a .svg file) of one horizontal box per item, in µs on a shared value axis. Text and axes
// use currentColor, so the plot follows the page's theme when inlined. An item with no
// values gets its row with "no data". The element carries data-boxes (the boxes drawn) for
// tests.
func BoxplotSVG(items []BoxItem, o BoxplotOptions) string {
	w := o.Width
	if w <= 0 {
		w = 760
	}
	const rowH, top0, axisH, legendH = 34, 8, 34, 22
	labelW := 40
	for _, it := range items {
		labelW = max(labelW, min(7*len([]rune(it.Label))+12, 280))
	}
	top := top0
	if o.Title != "" {
		top += 22
	}
	plotL, plotR := labelW, w-28 // room for the last tick label
	h := top + rowH*len(items) + axisH + legendH
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, it := range items {
		if it.Box.Count > 0 {
			lo, hi = min(lo, max(it.Box.Min, 1)), max(hi, it.Box.Max)
		}
	}
	var b strings.Builder
	drawn := 0
	for _, it := range items {
		if it.Box.Count > 0 {
			drawn++
		}
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="mqb-boxplot" data-boxes="%d" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="12" role="img">`,
		drawn, w, h, w, h)
	if o.Title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="600" fill="currentColor">%s</text>`, 4, html.EscapeString(o.Title))
	}
	if drawn == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="currentColor">no values recorded</text></svg>`, plotL, top+rowH/2)
		return b.String()
	}
	sc := newScale(lo, hi, !o.Linear, float64(plotL), float64(plotR))
	axisY := top + rowH*len(items)
	// Every tick gets a grid line; past 3 decades only the powers of ten get a label, so
	// that the labels do not run into each other.
	labelAll := !sc.log || sc.hi-sc.lo <= 3
	for _, t := range sc.ticks() {
		x := sc.pos(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="currentColor" stroke-opacity="0.15"/>`, x, top, x, axisY)
		if labelAll || isPow10(t) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="currentColor">%s</text>`, x, axisY+16, FormatUS(t))
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor"/>`, plotL, axisY, plotR, axisY)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="currentColor" fill-opacity="0.8">latency%s</text>`, plotR, axisY+30, map[bool]string{true: " (log)", false: ""}[!o.Linear])
	for i, it := range items {
		cy := float64(top + rowH*i + rowH/2)
		label := it.Label
		if r := []rune(label); len(r) > 38 {
			label = string(r[:37]) + "…"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle" fill="currentColor"><title>%s</title>%s</text>`,
			plotL-8, cy, html.EscapeString(it.Label), html.EscapeString(label))
		s := it.Box
		if s.Count == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle" fill="currentColor" fill-opacity="0.7">no data</text>`, plotL+6, cy)
			continue
		}
		c := Color(i)
		x1, x25, x50, x75, x99 := sc.pos(s.P1), sc.pos(s.P25), sc.pos(s.P50), sc.pos(s.P75), sc.pos(s.P99)
		fmt.Fprintf(&b, `<g class="box-item" stroke="%s"><title>%s: %d values; min %s, p1 %s, p25 %s, median %s, p75 %s, p99 %s, max %s</title>`,
			c, html.EscapeString(it.Label), s.Count, FormatUS(s.Min), FormatUS(s.P1), FormatUS(s.P25), FormatUS(s.P50), FormatUS(s.P75), FormatUS(s.P99), FormatUS(s.Max))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x1, cy, x25, cy, x75, cy, x99, cy)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x1, cy-6, x1, cy+6, x99, cy-6, x99, cy+6)
		fmt.Fprintf(&b, `<rect class="box" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" fill-opacity="0.35" stroke-width="1.5"/>`,
			x25, cy-10, math.Max(x75-x25, 1), 20, c)
		fmt.Fprintf(&b, `<line class="median" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke-width="3"/>`, x50, cy-10, x50, cy+10)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="none"/><circle cx="%.1f" cy="%.1f" r="2.5" fill="none"/></g>`,
			sc.pos(max(s.Min, 1)), cy, sc.pos(s.Max), cy)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="currentColor" fill-opacity="0.8" font-size="11">%s</text>`, 4, h-6, html.EscapeString(BoxLegend))
	b.WriteString(`</svg>`)
	return b.String()
}

// scale maps µs values to px, logarithmically or linearly.
type scale struct {
	log        bool
	lo, hi     float64 // in value space (log10 when log)
	pxLo, pxHi float64
}

func newScale(lo, hi int64, log bool, pxLo, pxHi float64) scale {
	s := scale{log: log, pxLo: pxLo, pxHi: pxHi}
	if log {
		s.lo = math.Floor(math.Log10(float64(max(lo, 1))))
		s.hi = math.Ceil(math.Log10(float64(max(hi, 1))))
		if s.hi <= s.lo {
			s.hi = s.lo + 1
		}
		return s
	}
	step := niceStep(float64(hi) / 5)
	s.lo, s.hi = 0, math.Ceil(float64(hi)/step)*step
	if s.hi == 0 {
		s.hi = 1
	}
	return s
}

func (s scale) pos(v int64) float64 {
	f := float64(v)
	if s.log {
		f = math.Log10(math.Max(f, 1))
	}
	return s.pxLo + (f-s.lo)/(s.hi-s.lo)*(s.pxHi-s.pxLo)
}

// ticks returns the axis ticks: 1-2-5 per decade on a log axis (1 per decade past 4 decades).
func (s scale) ticks() []int64 {
	var t []int64
	if s.log {
		mults := []float64{1, 2, 5}
		if s.hi-s.lo > 5 {
			mults = []float64{1}
		}
		for e := s.lo; e <= s.hi; e++ {
			for _, m := range mults {
				if v := m * math.Pow(10, e); math.Log10(v) <= s.hi+1e-9 {
					t = append(t, int64(math.Round(v)))
				}
			}
		}
		return t
	}
	step := niceStep(s.hi / 5)
	for v := 0.0; v <= s.hi+step/2; v += step {
		t = append(t, int64(v))
	}
	return t
}

// isPow10 reports whether v is a power of ten.
func isPow10(v int64) bool {
	for v >= 10 && v%10 == 0 {
		v /= 10
	}
	return v == 1
}

// niceStep returns a 1-2-5 step of about x.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	switch f := x / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	}
	return 10 * p
}

// FormatUS formats a duration in µs for people: 850µs, 1.2ms, 3.40s.
func FormatUS(v int64) string {
	switch a := max(v, -v); {
	case a >= 10_000_000:
		return fmt.Sprintf("%.0fs", float64(v)/1e6)
	case a >= 1_000_000:
		return fmt.Sprintf("%.2fs", float64(v)/1e6)
	case a >= 1000:
		return fmt.Sprintf("%.3gms", float64(v)/1e3)
	}
	return fmt.Sprintf("%dµs", v)
}
