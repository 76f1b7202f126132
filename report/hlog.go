package report

import (
	"fmt"
	"io"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqblast/mqblast/internal/termtext"
	"github.com/mqblast/mqblast/result"
)

// The tags of the interval log's histograms, one line each per interval.
const (
	TagLatency    = "latency"     // message latency from the due time (corrected), µs
	TagLatencyRaw = "latency_raw" // message latency from the write, µs
	TagConnect    = "connect"     // connect latency (dial to CONNACK), µs
)

// HlogTags are the interval log's tags, in the order each interval's lines are written.
var HlogTags = []string{TagLatency, TagLatencyRaw, TagConnect}

// WriteHlog writes r's intervals as an HdrHistogram interval log (format version 1.3, the
// one HdrHistogram's own tools read: HistogramLogProcessor, HistogramLogAnalyzer, the
// plotters), with hdrhistogram-go's log writer: a comment naming the units, the
// #[StartTime:] and #[BaseTime:] lines (the run's start, whole seconds), the legend, and per
// interval one line per tag of HlogTags, empty histograms included, so every tag has every
// interval. Values are µs; the Interval_Max column is in seconds (the writer divides by
// 10^6). Timestamps are seconds from BaseTime, at millisecond precision. A result without
// interval histograms (written before they were kept) cannot give a log: WriteHlog says so.
func WriteHlog(w io.Writer, r *result.Result) error {
	for i := range r.Intervals {
		if r.Intervals[i].Histograms == nil {
			return fmt.Errorf("the result has no interval histograms (intervals[%d].histograms): "+
				"it was written by an mqblast before they were kept; run it again for an .hlog", i)
		}
	}
	lw := hdrhistogram.NewHistogramLogWriter(w)
	startMS := r.StartedAt.UnixMilli()
	baseMS := startMS - startMS%1000 // the writer prints whole seconds: intervals count from there
	lw.SetBaseTime(baseMS)
	head := []func() error{
		func() error {
			return lw.OutputComment(fmt.Sprintf("[mqblast %s interval log: values in microseconds "+
				"(tags %s, %s, %s); Interval_Max in seconds; HistogramLogProcessor -outputValueUnitRatio 1000 prints ms]",
				termtext.Line(r.ToolVersion), TagLatency, TagLatencyRaw, TagConnect)) // one line, whatever the document says
		},
		lw.OutputLogFormatVersion,
		func() error { return lw.OutputStartTime(baseMS) },
		func() error { return lw.OutputBaseTime(baseMS) },
		lw.OutputLegend,
	}
	for _, f := range head {
		if err := f(); err != nil {
			return fmt.Errorf("cannot write the interval log: %w", err)
		}
	}
	empty := hdrhistogram.New(1, 3600*1e6, 3) // result.Hist's range (1 µs to 1 h, 3 digits)
	prev := 0.0
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		from, to := startMS+int64(prev*1000+0.5), startMS+int64(iv.TS*1000+0.5)
		prev = iv.TS
		hs := iv.Histograms
		for _, x := range []struct {
			tag string
			h   *result.Hist
		}{{TagLatency, hs.Latency}, {TagLatencyRaw, hs.LatencyRaw}, {TagConnect, hs.ConnectLatency}} {
			h := empty
			if v := x.h.HDR(); v != nil {
				h = hdrhistogram.Import(v.Export()) // a copy of its own to tag and time
			}
			h.SetTag(x.tag)
			h.SetStartTimeMs(from)
			h.SetEndTimeMs(to)
			if err := lw.OutputIntervalHistogram(h); err != nil {
				return fmt.Errorf("cannot write the interval log: %w", err)
			}
		}
	}
	return nil
}
