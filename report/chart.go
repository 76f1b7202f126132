package report

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Chart is one chart of a page: a shared x axis and series of y values, drawn by the page's
// script (uPlot). A chart with nothing to draw has Empty set, and the page says that instead
// of drawing an empty frame.
type Chart struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	X     []float64 `json:"x"`
	// XKind is "time" (seconds into the run), "spectrum" (1/(1−p) on a log axis, labelled
	// with the percentile) or "offered" (a search's offered rate, msg/s, on a log axis).
	XKind string `json:"x_kind"`
	// YUnit is "us" (latency in µs), "per_s", "count", "percent" (100 = one core) or "bytes".
	YUnit  string   `json:"y_unit"`
	YLog   bool     `json:"y_log"`
	Series []Series `json:"series"`
	// SpanGaps joins a series over its gaps (overlays of runs with different interval times).
	SpanGaps bool   `json:"span_gaps,omitempty"`
	Note     string `json:"note,omitempty"`  // a line under the chart
	Empty    string `json:"empty,omitempty"` // why there is no chart
	// Marks are vertical lines across a time chart: the start of each stage of a staged
	// run, and the end of its last.
	Marks []Mark `json:"marks,omitempty"`
}

// Mark is a vertical line across a chart at X, with a label.
type Mark struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
}

// Series is one line of a chart; NaN values are gaps.
type Series struct {
	Label  string `json:"label"`
	Color  string `json:"color"`
	Dash   bool   `json:"dash,omitempty"`
	Values Values `json:"values"`
}

// Values are a series' y values; NaN encodes as null (a gap).
type Values []float64

// MarshalJSON writes the values with null for NaN and infinities.
func (v Values) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, f := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// Points returns the number of values the chart draws (not NaN), over all its series.
func (c *Chart) Points() int {
	n := 0
	for _, s := range c.Series {
		for _, f := range s.Values {
			if !math.IsNaN(f) {
				n++
			}
		}
	}
	return n
}

// finish drops the series without a value, and those that are 0 throughout when another
// series has more (named in the note instead: a line hidden under another's says nothing);
// it sets Empty when no series is left.
func (c *Chart) finish(empty string) Chart {
	kept := c.Series[:0]
	var zero []string
	for _, s := range c.Series {
		switch n, nonzero := s.counts(); {
		case n == 0:
		case nonzero == 0:
			zero = append(zero, s.Label)
			kept = append(kept, s)
		default:
			kept = append(kept, s)
		}
	}
	c.Series = kept
	if len(zero) > 0 && len(zero) < len(kept) {
		kept = c.Series[:0]
		for _, s := range c.Series {
			if _, nonzero := s.counts(); nonzero > 0 {
				kept = append(kept, s)
			}
		}
		c.Series = kept
		note := strings.Join(zero, ", ") + ": 0 in every interval."
		c.Note = strings.TrimSpace(c.Note + " " + note)
	}
	if c.Points() == 0 {
		c.Empty = empty
		c.X, c.Series = nil, nil
	}
	return *c
}

// counts returns how many values s has, and how many of them are not 0.
func (s *Series) counts() (n, nonzero int) {
	for _, f := range s.Values {
		if !math.IsNaN(f) {
			n++
			if f != 0 {
				nonzero++
			}
		}
	}
	return n, nonzero
}
