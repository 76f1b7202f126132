// Package metrics serves a run's figures live in the Prometheus exposition format
// (mqblast run --metrics ADDR): a Live collector fed once per interval with the interval's
// snapshot (a result.Snapshot, from the run's interval callback, or the merged intervals of
// worker processes, so the parent serves the merged view), and a loopback HTTP server for it.
//
// Names start with mqblast_ and carry base units (_seconds, _bytes, _total); docs/outputs.md
// lists them (a test holds the list and the code together). Counters add the intervals'
// figures, so they only grow; figures the run knows only at its end (lost messages, the
// saturation and stall verdicts) take the result's values when Finish is called. Latency is a
// Prometheus histogram with fixed bounds in seconds, filled from each interval's
// HdrHistogram, so the buckets of several processes or runs sum: a value is counted in the
// first bucket whose bound is at or above the lowest value of its HdrHistogram bucket
// (HdrHistogram's resolution, 0.1%, is the bucket edges' uncertainty).
//
// A Remote pushes the same collector's series to a Prometheus remote-write receiver
// (mqblast run --remote-write URL) once per interval and once at the end: gathered by the
// interval loop, sent by a goroutine of its own through a bounded queue, each push retried a
// bounded number of times, so that a slow or absent receiver never delays an interval; what
// was sent, failed or dropped goes into the result. The wire form is remote write 1.0: a
// protobuf WriteRequest (google.golang.org/protobuf's protowire) compressed with snappy
// (github.com/klauspost/compress).
//
// It reads package result's types (and imports none of the run's packages) and measures
// nothing itself; the exposition is github.com/prometheus/client_golang's (a custom
// Collector over the latest totals).
package metrics
