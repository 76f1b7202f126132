package result

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Soak is a load held for a long time (--sustain) and how the broker drifted under it:
// the hold cut into windows of equal length, each window's latency, losses, refusals and
// the broker's memory and CPU, the slopes of those over the hold, and the verdict by the
// rule SoakRule states. Its size is its windows' (the Spec bounds their number).
type Soak struct {
	// FromS and ToS are the hold in the intervals' time (t_s: seconds into the run);
	// WindowS the windows' length. Rate is the rate held, every publisher together
	// (messages per second; 0: the scenario's own, a fixed-rate run).
	FromS   float64 `json:"from_s"`
	ToS     float64 `json:"to_s"`
	WindowS float64 `json:"window_s"`
	Rate    float64 `json:"rate,omitempty"`
	// Windows are the hold's windows in order.
	Windows []SoakWindow `json:"windows"`
	// The slopes are least-squares fits over the windows, per hour: the latency
	// percentiles' in µs, the broker's RSS in bytes (the first window left out when there
	// are three or more: a broker's buffers grow as the load starts, and the memory rule
	// judges only then) and its CPU in percent of a core.
	LatencyP50SlopeUSPerH     float64 `json:"latency_p50_slope_us_per_h"`
	LatencyP99SlopeUSPerH     float64 `json:"latency_p99_slope_us_per_h"`
	LatencyP999SlopeUSPerH    float64 `json:"latency_p999_slope_us_per_h"`
	BrokerRSSSlopeBytesPerH   float64 `json:"broker_rss_slope_bytes_per_h,omitempty"`
	BrokerCPUSlopePercentPerH float64 `json:"broker_cpu_slope_percent_per_h,omitempty"`
	// BrokerRSS says where the broker's RSS came from: "process" (its pid, local),
	// "broker_metrics" (its host's endpoints), "" (not watched: no memory figures).
	BrokerRSS string `json:"broker_rss,omitempty"`
	// Held is the verdict: true when no rule of SoakRule fired. Verdict says it in a line
	// ("held", "degraded after 23 min: p99 3.0ms → 41ms; broker RSS +180 MiB/h");
	// DegradedAfterS is when the first rule with an instant fired, from the hold's start
	// (0 with Held, or when only the memory rule fired); Reasons each rule that fired,
	// in SoakRule's words, with its figures.
	Held           bool     `json:"held"`
	Verdict        string   `json:"verdict"`
	DegradedAfterS float64  `json:"degraded_after_s,omitempty"`
	Reasons        []string `json:"reasons,omitempty"`
}

// SoakWindow is one window of a soak: its span in the intervals' time, its latency
// percentiles (from the due time, of the copies that arrived in it), its message counts
// (Lost as a stage's: expected minus arrived in the window; the last window's counts run
// through the drain after the hold), its refusals (messages the broker refused, connects
// that failed, connections dropped), whether the broker stalled the publishers in it, and
// the broker's RSS and CPU averaged over its intervals (0: not watched).
type SoakWindow struct {
	FromS            float64     `json:"from_s"`
	ToS              float64     `json:"to_s"`
	LatencyUS        Percentiles `json:"latency_us"`
	Expected         int64       `json:"expected"`
	Received         int64       `json:"received"`
	Lost             int64       `json:"lost"`
	Unsent           int64       `json:"unsent"`
	RefusedCopies    int64       `json:"refused_copies"`
	ConnectFailed    int64       `json:"connect_failed"`
	Dropped          int64       `json:"dropped"`
	Stalled          bool        `json:"stalled,omitempty"`
	BrokerRSSBytes   int64       `json:"broker_rss_bytes,omitempty"`
	BrokerCPUPercent float64     `json:"broker_cpu_percent,omitempty"`
}

// Refusals are the window's refused messages, failed connects and dropped connections.
func (w *SoakWindow) Refusals() int64 { return w.RefusedCopies + w.ConnectFailed + w.Dropped }

// The rule for "degraded". Each figure of a window after the first is compared with the
// first window's (the baseline), the memory by its slope over the hold.
const (
	// SoakLatencyFactor and SoakLatencyFloorUS: the latency rule fires when the p99 of two
	// windows in a row is more than SoakLatencyFactor times the first window's and at
	// least SoakLatencyFloorUS above it.
	SoakLatencyFactor  = 2.0
	SoakLatencyFloorUS = 5000
	// SoakLossShare: the loss rule fires when a window lost more than this share of the
	// copies expected in it, and more than twice the first window's losses.
	SoakLossShare = 0.001
	// SoakRSSSlopeBytesPerH, SoakRSSSlopeShare and SoakRSSGrowthBytes: the memory rule
	// fires when the broker's RSS slope is above SoakRSSSlopeBytesPerH and above
	// SoakRSSSlopeShare of its first window's RSS an hour, and the slope times the hold is
	// above SoakRSSGrowthBytes.
	SoakRSSSlopeBytesPerH = 16 << 20
	SoakRSSSlopeShare     = 0.05
	SoakRSSGrowthBytes    = 1 << 20
)

// SoakRule is the rule for "degraded", as the outputs and docs/limit.md say it.
const SoakRule = "degraded when, against the first window: the p99 of two windows in a row is more than twice the first's " +
	"and 5 ms above it; a window lost more than 0.1 % of the copies expected in it and more than twice the first's losses; " +
	"a window's refusals (refused messages, failed connects, dropped connections) are more than twice the first's; " +
	"the broker stalled the publishers in a window and not in the first; or the broker's RSS grows more than 16 MiB/h " +
	"and more than 5 % of its first window's RSS an hour (the least-squares slope over the windows after the first, three windows or more), by more than 1 MiB over the hold"

// NewSoak is the soak of r's intervals over the hold [from, to) seconds into the run (t_s),
// in windows of window seconds (the last may be shorter; one shorter than half a window
// joins the one before); the last window's message counts run to tail (the end of the
// drain after the hold, at least to). rate is the rate held (0: the scenario's).
func NewSoak(r *Result, from, to, tail, window, rate float64) *Soak {
	s := &Soak{FromS: from, ToS: to, WindowS: window, Rate: rate}
	n := SoakWindowCount(to-from, window)
	for k := range n {
		a, b := from+float64(k)*window, from+float64(k+1)*window
		last := k == n-1
		if last {
			b = to
		}
		sum := Window(r, a, b)
		msg := sum.Messages
		if last && tail > to {
			msg = Window(r, a, tail).Messages
		}
		w := SoakWindow{FromS: a, ToS: b, LatencyUS: sum.LatencyUS, Expected: msg.Expected, Received: msg.Received,
			Lost: msg.Lost, Unsent: msg.UnsentTotal, RefusedCopies: msg.RefusedCopies, ConnectFailed: sum.Connections.Failed,
			Dropped: sum.BrokerStalled.Dropped, Stalled: sum.BrokerStalled.Stalled}
		w.BrokerRSSBytes, w.BrokerCPUPercent, s.BrokerRSS = brokerMemCPU(r, a, b, s.BrokerRSS)
		s.Windows = append(s.Windows, w)
	}
	s.slopes()
	s.judge()
	return s
}

// SoakWindowCount is how many windows NewSoak cuts a hold of span seconds into: whole
// windows, the rest one more when it is half a window or longer. A rest of exactly half
// counts though the subtraction that gave span lost a few ulps (7 s from 1.375512394 to
// 8.375512394 is 6.999999999999999): at least one window.
func SoakWindowCount(span, window float64) int {
	return max(int(math.Floor(span/window+0.5+1e-9)), 1)
}

// brokerMemCPU are the broker's mean RSS and CPU over the intervals whose middle lies in
// [from, to): its process's (a pid) when sampled, else its host's endpoints'; src says
// which the soak used so far ("" none), and is returned with what this window used.
func brokerMemCPU(r *Result, from, to float64, src string) (rss int64, cpu float64, _ string) {
	var sumRSS, sumCPU float64
	var nRSS, nCPU int
	prev := 0.0
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		mid := (prev + iv.TS) / 2
		prev = iv.TS
		if mid < from || mid >= to {
			continue
		}
		switch h := iv.BrokerHost; {
		case iv.BrokerRSSBytes > 0 && src != "broker_metrics":
			src = "process"
			sumRSS += float64(iv.BrokerRSSBytes)
			nRSS++
		case h != nil && h.HasProcess && h.ProcessRSSBytes > 0 && src != "process":
			src = "broker_metrics"
			sumRSS += h.ProcessRSSBytes
			nRSS++
		}
		switch h := iv.BrokerHost; {
		case iv.BrokerCPUPercent > 0:
			sumCPU += iv.BrokerCPUPercent
			nCPU++
		case h != nil && h.HasProcess:
			sumCPU += h.ProcessCPUPercent
			nCPU++
		}
	}
	if nRSS > 0 {
		rss = int64(sumRSS / float64(nRSS))
	}
	if nCPU > 0 {
		cpu = sumCPU / float64(nCPU)
	}
	return rss, cpu, src
}

// slopes fits the windows' figures against their middles, per hour.
func (s *Soak) slopes() {
	mid := func(w *SoakWindow) float64 { return (w.FromS + w.ToS) / 2 / 3600 }
	fit := func(skipFirst bool, y func(w *SoakWindow) (float64, bool)) float64 {
		var xs, ys []float64
		for i := range s.Windows {
			if skipFirst && i == 0 {
				continue
			}
			if v, ok := y(&s.Windows[i]); ok {
				xs, ys = append(xs, mid(&s.Windows[i])), append(ys, v)
			}
		}
		return slope(xs, ys)
	}
	lat := func(p func(*Percentiles) int64) func(w *SoakWindow) (float64, bool) {
		return func(w *SoakWindow) (float64, bool) { return float64(p(&w.LatencyUS)), w.LatencyUS.Count > 0 }
	}
	s.LatencyP50SlopeUSPerH = fit(false, lat(func(p *Percentiles) int64 { return p.P50 }))
	s.LatencyP99SlopeUSPerH = fit(false, lat(func(p *Percentiles) int64 { return p.P99 }))
	s.LatencyP999SlopeUSPerH = fit(false, lat(func(p *Percentiles) int64 { return p.P999 }))
	skip := len(s.Windows) >= 3
	s.BrokerRSSSlopeBytesPerH = fit(skip, func(w *SoakWindow) (float64, bool) { return float64(w.BrokerRSSBytes), w.BrokerRSSBytes > 0 })
	s.BrokerCPUSlopePercentPerH = fit(skip, func(w *SoakWindow) (float64, bool) { return w.BrokerCPUPercent, w.BrokerCPUPercent > 0 })
}

// slope is the least-squares slope of ys against xs (0 with fewer than two points).
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// judge sets the verdict by SoakRule.
func (s *Soak) judge() {
	ws := s.Windows
	onset := -1 // the first window from which a rule with an instant fired
	at := func(i int) {
		if onset < 0 || i < onset {
			onset = i
		}
	}
	var short []string // the verdict's figures
	if len(ws) >= 2 {
		base := &ws[0]
		b99 := base.LatencyUS.P99
		high := func(w *SoakWindow) bool {
			p := w.LatencyUS.P99
			return w.LatencyUS.Count > 0 && base.LatencyUS.Count > 0 && float64(p) > SoakLatencyFactor*float64(b99) && p-b99 >= SoakLatencyFloorUS
		}
		for i := 1; i+1 < len(ws); i++ {
			if high(&ws[i]) && high(&ws[i+1]) {
				worst := ws[i].LatencyUS.P99
				for j := i; j < len(ws); j++ {
					worst = max(worst, ws[j].LatencyUS.P99)
				}
				at(i)
				short = append(short, fmt.Sprintf("p99 %s → %s", Micros(b99), Micros(worst)))
				s.Reasons = append(s.Reasons, fmt.Sprintf("latency: the p99 of windows %d and %d (%s, %s) is more than twice the first's (%s) and 5 ms above it",
					i+1, i+2, Micros(ws[i].LatencyUS.P99), Micros(ws[i+1].LatencyUS.P99), Micros(b99)))
				break
			}
		}
		for i := 1; i < len(ws); i++ {
			w := &ws[i]
			if float64(w.Lost) > SoakLossShare*float64(w.Expected) && w.Lost > 2*base.Lost {
				at(i)
				short = append(short, fmt.Sprintf("%d lost in window %d", w.Lost, i+1))
				s.Reasons = append(s.Reasons, fmt.Sprintf("losses: window %d lost %d of the %d copies expected in it (more than 0.1 %%; the first lost %d)",
					i+1, w.Lost, w.Expected, base.Lost))
				break
			}
		}
		for i := 1; i < len(ws); i++ {
			w := &ws[i]
			if w.Refusals() > 2*base.Refusals() {
				at(i)
				short = append(short, fmt.Sprintf("%d refusals in window %d", w.Refusals(), i+1))
				s.Reasons = append(s.Reasons, fmt.Sprintf("refusals: window %d had %d (%d messages refused, %d connects failed, %d connections dropped; the first %d)",
					i+1, w.Refusals(), w.RefusedCopies, w.ConnectFailed, w.Dropped, base.Refusals()))
				break
			}
		}
		for i := 1; i < len(ws) && !base.Stalled; i++ {
			if ws[i].Stalled {
				at(i)
				short = append(short, fmt.Sprintf("broker stalled in window %d", i+1))
				s.Reasons = append(s.Reasons, fmt.Sprintf("stall: the broker held the publishers back in window %d, not in the first", i+1))
				break
			}
		}
	}
	// The first window is the broker's warm-up (its buffers, a garbage-collected heap
	// growing to its size): with fewer than three windows there is no slope without it.
	if base, slopeH := s.baseRSS(), s.BrokerRSSSlopeBytesPerH; len(ws) >= 3 && base > 0 && slopeH > SoakRSSSlopeBytesPerH &&
		slopeH > SoakRSSSlopeShare*float64(base) && slopeH*(s.ToS-s.FromS)/3600 > SoakRSSGrowthBytes {
		short = append(short, "broker RSS "+MiBPerHour(slopeH))
		s.Reasons = append(s.Reasons, fmt.Sprintf("memory: the broker's RSS grows %s (%.0f %% of its first window's %s an hour), %s over the hold",
			MiBPerHour(slopeH), 100*slopeH/float64(base), mib(float64(base)), mib(slopeH*(s.ToS-s.FromS)/3600)))
	}
	if len(short) == 0 {
		s.Held, s.Verdict = true, "held"
		return
	}
	s.Verdict = "degraded"
	if onset >= 0 {
		s.DegradedAfterS = ws[onset].FromS - s.FromS
		s.Verdict += " after " + Elapsed(s.DegradedAfterS)
	}
	s.Verdict += ": " + strings.Join(short, "; ")
}

// baseRSS is the broker's RSS in the first window that has one (0: not watched).
func (s *Soak) baseRSS() int64 {
	for _, w := range s.Windows {
		if w.BrokerRSSBytes > 0 {
			return w.BrokerRSSBytes
		}
	}
	return 0
}

// MiBPerHour formats a slope of bytes per hour: "+180 MiB/h", "-0.4 MiB/h".
func MiBPerHour(v float64) string {
	m := v / (1 << 20)
	if math.Abs(m) >= 10 {
		return fmt.Sprintf("%+.0f MiB/h", m)
	}
	return fmt.Sprintf("%+.1f MiB/h", m)
}

func mib(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }

// Elapsed formats a span of seconds from a start as the verdict says it: "40 s", "23 min",
// "1 h 05 min".
func Elapsed(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < 2*time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	default:
		return fmt.Sprintf("%d h %02d min", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Extend adds next's windows (a soak of the span after s's, NewSoak's) to s and judges s
// again: a soak told window by window while its run goes on.
func (s *Soak) Extend(next *Soak) {
	s.Windows = append(s.Windows, next.Windows...)
	s.ToS = next.ToS
	if s.BrokerRSS == "" {
		s.BrokerRSS = next.BrokerRSS
	}
	s.Held, s.Verdict, s.DegradedAfterS, s.Reasons = false, "", 0, nil
	s.slopes()
	s.judge()
}
