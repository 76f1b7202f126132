package result

import (
	"fmt"
	"time"
)

// NewInterval makes the interval record of snapshot s, taken over d and ending at ts
// seconds into the run with open sessions established. It packs the histograms of s it
// keeps (IntervalHistograms) and its groups' (newGroupIntervals).
func NewInterval(ts float64, open int64, s *Snapshot, d time.Duration) Interval {
	return Interval{
		TS: ts, Established: open, Connected: s.Connected, Failed: s.FailedTotal(),
		Dropped: s.DroppedTotal(), ConnectPerS: float64(s.Connected) / d.Seconds(),
		ConnectLatencyUS: s.ConnectLatency.Summary(),
		Published:        s.Published, Received: s.Received, Expected: s.Expected, RefusedCopies: s.RefusedCopies, ResponsesUnsent: s.ResponsesUnsent, Duplicated: s.Duplicated,
		Unsent: s.UnsentTotal(), Unexpected: s.UnexpectedTotal(), Unmeasured: s.Unmeasured,
		PublishPerS: float64(s.Published) / d.Seconds(), ReceivePerS: float64(s.Received) / d.Seconds(),
		LatencyUS: s.Latency.Summary(), LatencyRawUS: s.LatencyRaw.Summary(), ScheduleLagUS: s.ScheduleLag.Summary(),
		ClientCPUPercent: 100 * float64(s.CPUNS) / float64(d.Nanoseconds()), ClientRSSBytes: s.RSSBytes,
		Offered: s.Offered, OfferedPerS: float64(s.Offered) / d.Seconds(), HeldUS: sum(s.HeldUS),
		Histograms: (&IntervalHistograms{Latency: s.Latency, LatencyRaw: s.LatencyRaw, ConnectLatency: s.ConnectLatency,
			ScheduleLag: s.ScheduleLag}).pack(),
		Groups: newGroupIntervals(s, d.Seconds()),
	}
}

// pack packs h's histograms and returns h: an interval's are kept for the whole run (a few
// hundred bytes each, not their 190 KB counts).
func (h *IntervalHistograms) pack() *IntervalHistograms {
	h.Latency.Pack()
	h.LatencyRaw.Pack()
	h.ConnectLatency.Pack()
	h.ScheduleLag.Pack()
	return h
}

// Micros formats a figure in µs for the text summary and the progress lines: 850µs,
// 1.2ms, 3.40s, 25s.
func Micros(v int64) string {
	switch {
	case v >= 10_000_000:
		return fmt.Sprintf("%.0fs", float64(v)/1e6)
	case v >= 1_000_000:
		return fmt.Sprintf("%.2fs", float64(v)/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.1fms", float64(v)/1e3)
	default:
		return fmt.Sprintf("%dµs", v)
	}
}
