// Package report renders result documents (result.Result) for people: the text summary a
// run ends with (WriteSummary), the HTML report of one run, the comparison of several runs
// (a terminal table and an HTML page), and the building blocks other packages reuse (box
// statistics, SVG boxplots, percentile spectra). It reads result documents and nothing
// else: it imports package result and none of the run's (bench, reactor, scenario,
// tuning); it measures nothing and runs nothing. A document may have been written by
// anyone: every string of it that the text outputs print (summary, compare, the .hlog
// header, the CSV's column names) goes through termtext.Line, which shows control
// characters and bidi overrides escaped, so none reaches a terminal raw or starts a line.
//
// WriteResult writes a run's document and audits it first (Audit, result.CheckDocument): a
// document that breaks an accounting identity is written all the same, with a warning that
// the defect is mqblast's; $MQBLAST_RESULT_AUDIT, when set, names a file that gets a line per
// document audited (make test reads it to fail the suite on any such document).
//
// # HTML pages
//
// WriteHTML writes the report of one result and WriteCompareHTML the comparison of several,
// each as one self-contained page: the vendored charting library (uPlot, assets/, MIT), the
// styles and the result documents are inline (<script type="application/json"
// id="mqblast-result">), and the page's Content-Security-Policy allows no request, so it
// opens offline, and no script but its own two, by their hashes (CSP; study.html uses it
// too), so that markup a document smuggled past escaping would not run. It follows
// prefers-color-scheme and prints (@media print; the charts are redrawn at print width on
// beforeprint).
//
// A page is built in Go as a Page of Panels (NewReport, NewCompare): key/value rows, tables,
// lists of evidence, standalone SVG (boxplots) and Charts. A Chart is data only — a shared
// x axis (seconds into the run, or 1/(1−p) for a spectrum) and Series of y values, NaN for a
// gap — drawn by assets/report.js with uPlot; a chart without values carries Empty, and the
// page says that instead of drawing an empty frame. The script records what each chart drew
// in window.mqblast.charts[id] ({drawn, points, series, canvas, width}) and sets
// window.mqblast.ready, which the browser tests (internal/browsertest, headless Chromium)
// compare with Chart.Points.
//
// WriteLivePage writes the same page as the live page of a run under way (package
// report/live serves it): a third script, hashed like the others, takes the page anew from
// the server's event stream — a LivePart, the HTML of the page's main element (its header
// and panels, the template's "main") and its charts — and redraws the charts through
// window.mqblast.update; its policy adds connect-src 'self' and nothing else.
//
// # Compare
//
// CompareTable lays results side by side, one column per result (Labels: broker and
// scenario, else the file names), one row per figure that any of them has, the best value
// of each row marked (Table.Marks; none when the shown values tie). WriteCompare writes it
// for a terminal, "*" marking the best, after a WARNING line per result whose scenario
// differs from the first one's (ScenarioDiffs names every differing field; the server,
// comments and client id prefixes are expected to differ and are not compared).
//
// # Box statistics, boxplots and spectra
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
// Spectrum gives a histogram's percentile spectrum on the shared grid SpectrumX (10 points
// per decade of 1/(1−p), ending at the max). Color(i) is series i's colour, the same in
// boxplots and charts, so a study's pages can keep one colour per broker.
//
// # Machine-readable outputs
//
// WriteCSV writes one row per interval (CSVColumns, then kernel_NAME columns; docs/outputs.md
// lists them, a test holds the two together); WriteHlog writes the intervals' histograms as
// an HdrHistogram interval log with hdrhistogram-go's writer (tags latency, latency_raw,
// connect; µs values); HDR turns a result.Hist into an hdrhistogram-go histogram. Package
// report/metrics serves a run live as Prometheus metrics.
package report
