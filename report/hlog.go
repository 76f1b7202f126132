package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/mqblast/mqblast/bench"
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
func WriteHlog(w io.Writer, r *bench.Result) error {
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
				r.ToolVersion, TagLatency, TagLatencyRaw, TagConnect))
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
	empty := hdrhistogram.New(1, 3600*1e6, 3) // bench's range (1 µs to 1 h, 3 digits)
	prev := 0.0
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		from, to := startMS+int64(prev*1000+0.5), startMS+int64(iv.TS*1000+0.5)
		prev = iv.TS
		hs := iv.Histograms
		for _, x := range []struct {
			tag string
			h   *bench.Hist
		}{{TagLatency, hs.Latency}, {TagLatencyRaw, hs.LatencyRaw}, {TagConnect, hs.ConnectLatency}} {
			h, err := HDR(x.h)
			if err != nil {
				return fmt.Errorf("intervals[%d].histograms.%s: %w", i, x.tag, err)
			}
			if h == nil {
				h = empty
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

// HDR returns h as an hdrhistogram-go histogram (decoded from its V2 compressed form, the
// one the result document holds), or nil when h is empty.
func HDR(h *bench.Hist) (*hdrhistogram.Histogram, error) {
	if h.Count() == 0 {
		return nil, nil
	}
	b, err := h.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("cannot read a histogram: %w", err)
	}
	// bench.Hist's JSON is hdrhistogram-go's V2 compressed text ("HISTF..."); a document
	// of before 2026-12 held the base64 of it, which bench.Hist's reader turns into this.
	payload := []byte(s)
	d, err := hdrhistogram.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("cannot read a histogram: %w", err)
	}
	return d, nil
}
