package scenario

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SizeDist is a payload_size that varies per message: a weighted list of sizes
// ("1KB:80,10KB:15,1MB:5", each message's size drawn with those weights) or a range
// ("100B-2KB", drawn uniformly, both ends included). The scenario's PayloadSize is then its
// largest size (buffers, limits); the estimates of traffic take its mean.
type SizeDist struct {
	Text    string // as the file gives it
	Sizes   []int  // a weighted list's sizes; nil for a range
	Weights []int  // their weights, not all 0
	Lo, Hi  int    // a range's ends (Lo ≤ Hi); 0 for a list
}

// isSizeDist reports whether s is written as a distribution rather than one size.
func isSizeDist(s string) bool { return strings.ContainsAny(s, ":,-") }

// ParseSizeDist reads a weighted list of sizes or a range of sizes (see SizeDist).
func ParseSizeDist(s string) (*SizeDist, error) {
	d := &SizeDist{Text: s}
	if lo, hi, ok := strings.Cut(s, "-"); ok && !strings.ContainsAny(s, ":,") {
		a, err1 := ParseSize(lo)
		b, err2 := ParseSize(hi)
		if err1 != nil || err2 != nil || a > b {
			return nil, fmt.Errorf("%q is not a range of sizes (want LOW-HIGH with LOW ≤ HIGH, e.g. \"100B-2KB\"; units %s)", s, SizeUnits)
		}
		d.Lo, d.Hi = a, b
		return d, nil
	}
	total := 0
	for _, item := range strings.Split(s, ",") {
		sz, w, ok := strings.Cut(strings.TrimSpace(item), ":")
		n, err := ParseSize(sz)
		wt, werr := strconv.Atoi(strings.TrimSpace(w))
		if !ok || err != nil || werr != nil || wt < 0 || wt > 1_000_000 {
			return nil, fmt.Errorf("%q is not a weighted list of sizes (want SIZE:WEIGHT,... with whole weights 0 to 1000000, e.g. \"1KB:80,10KB:15,1MB:5\"; units %s)", s, SizeUnits)
		}
		d.Sizes, d.Weights = append(d.Sizes, n), append(d.Weights, wt)
		total += wt
	}
	if total == 0 {
		return nil, errors.New(strconv.Quote(s) + ": the weights are all zero (no size can be drawn; give at least one weight above 0)")
	}
	return d, nil
}

// Min and Max return the smallest and largest size the distribution can draw.
func (d *SizeDist) Min() int {
	if d.Sizes == nil {
		return d.Lo
	}
	m := -1
	for i, n := range d.Sizes {
		if d.Weights[i] > 0 && (m < 0 || n < m) {
			m = n
		}
	}
	return m
}

// Max returns the largest size the distribution can draw.
func (d *SizeDist) Max() int {
	if d.Sizes == nil {
		return d.Hi
	}
	m := 0
	for i, n := range d.Sizes {
		if d.Weights[i] > 0 {
			m = max(m, n)
		}
	}
	return m
}

// Mean returns the mean size drawn.
func (d *SizeDist) Mean() float64 {
	if d.Sizes == nil {
		return float64(d.Lo+d.Hi) / 2
	}
	sum, total := 0.0, 0
	for i, n := range d.Sizes {
		sum += float64(n) * float64(d.Weights[i])
		total += d.Weights[i]
	}
	return sum / float64(total)
}

// meanPayload returns the mean payload size of the group's messages.
func (g *ClientGroup) meanPayload() int {
	if g.PayloadSizes != nil {
		return int(g.PayloadSizes.Mean() + 0.5)
	}
	return g.PayloadSize
}

// checkSizes checks a payload size distribution at path (the prefix of payload_size): its
// sizes within the measurement header and an MQTT packet, and a payload of fill (neither
// a template nor the literal).
func checkSizes(l *errList, path string, d *SizeDist, template, literal bool) {
	switch {
	case d == nil:
	case template:
		l.Add(path+"payload_size", "%s, but the payload template or file gives the size (a distribution sizes payloads of fill)", strconv.Quote(d.Text))
	case literal:
		l.Add(path+"payload_size", "%s, but parameters.payload gives the size (a distribution sizes payloads of fill)", strconv.Quote(d.Text))
	case d.Min() < MinPayloadSize:
		l.Add(path+"payload_size", "%s draws %d bytes, smaller than the %d-byte measurement header (every size must be ≥ %d)", strconv.Quote(d.Text), d.Min(), MinPayloadSize, MinPayloadSize)
	}
}
