// Package live serves a run while it runs (mqblast run --live ADDR): its report page,
// updated as each interval closes, and a small API to steer it.
//
// A Live is fed the run's intervals (Interval, from the run's interval callback: the merged
// view of worker processes), the lines of its log (Line) and, at the end, its result
// (Finish). From them it builds the report page of package report — the same panels and
// charts as the HTML report, from a result that holds the intervals so far — once per
// interval, and serves it:
//
//   - GET / is the page as it stands (report.WriteLivePage): the report's page and a script
//     that takes it anew from /events.
//   - GET /events is a stream of server-sent events: each event ("page", its id the number
//     of the update) carries the whole page (report.LivePart) with the number of intervals
//     and whether the run is over. A client that connects, or reconnects with a
//     Last-Event-ID, gets the page as it stands at once, so a browser that lost its
//     connection resumes. The event of the run's end carries its final report, and the
//     stream ends after it.
//   - /api/ is the steering API (api.go), each request with the run's token
//     (Authorization: Bearer TOKEN): GET /api/status, POST /api/rate, /api/pause,
//     /api/resume, /api/stop. A Control carries the changes out; without a token every
//     request is refused (403), and a wrong one is refused (401) without a word of it logged.
//
// Ask is a client of the API (the tests', a script's).
//
// It measures nothing and imports none of the run's packages: the run implements Control.
// The run serves Handler with report/metrics' ServeHandler, loopback unless asked.
package live
