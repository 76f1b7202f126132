// Package watch owns the watch of the host and the broker while a run goes on: the
// kernel's network counters of the client's namespace (and of the broker's, when the
// broker is a local process in another namespace), the broker process's CPU, memory and
// descriptors (/proc) or its cgroup's, the broker host's Prometheus endpoints (a
// tuning/exporter Scraper, SetRemote) and the broker's $SYS topics (an
// internal/brokersys Reader, ReadBrokerSys). Each interval it fills the interval's kernel
// deltas, broker columns, broker_host and broker_sys; at the end (Finish) the result's
// kernel figures and findings, broker_process, broker_host, broker_sys and the evidence on
// the broker's CPU (broker_busy), from which, with the client's, result.Judge draws the
// run's verdicts (host.limited among them).
//
// It promises to sample only when it is told: Start before the connect phase, Interval
// once per interval by the one process that prints the intervals (bench's Runner.Run, or
// its Gather for worker processes, whose workers are not watched), Finish once after the
// run, Close when the run ends without Finish. A Watch is not safe for concurrent use. A
// kernel finding is printed the first time it appears, one line on the writer Interval is
// given; a broker that goes away keeps what was sampled of it (and its error); an endpoint
// that fails is a gap in its figures, printed when it fails and when it answers again.
// Reading /proc and /sys and interpreting the counters are package tuning's; scraping and
// the rates between readings tuning/exporter's.
//
// It must not sample on its own schedule, print except to the writer it is given, exit,
// change system settings, or import the run's engine (bench, reactor, scenario): it
// imports result, tuning, tuning/exporter and the internal brokersys and termtext.
package watch
