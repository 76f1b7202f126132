// Package report renders result documents (bench.Result) for people: the HTML report of one
// run, the comparison of several runs (a terminal table and an HTML page), and the building
// blocks other packages reuse (box statistics and SVG boxplots). It reads result documents
// and nothing else: it measures nothing and runs nothing (DESIGN.md §1).
//
// # Box statistics and boxplots
//
// Box computes a distribution's box statistics (count, min, p1, p25, median, p75, p99, max,
// in µs) exactly from an HdrHistogram — a result's histograms, e.g. r.Histograms.Latency —
// never from averaged percentiles. BoxplotSVG draws one horizontal box per item on a shared
// logarithmic (or linear) axis: box p25–p75, bar the median, whiskers p1 and p99, dots min
// and max, stated in the legend under the plot (BoxLegend). The SVG is a standalone element
// that uses currentColor for text and axes, so it can be written to a .svg file or inlined
// into an HTML page and follows that page's light or dark theme:
//
//	items := []report.BoxItem{
//		{Label: "mosquitto", Box: report.Box(a.Histograms.Latency)},
//		{Label: "emqx", Box: report.Box(b.Histograms.Latency)},
//	}
//	svg := report.BoxplotSVG(items, report.BoxplotOptions{Title: "latency (corrected)"})
//
// Color(i) is series i's colour, the same in boxplots and charts, so a study's pages can
// keep one colour per broker.
package report
