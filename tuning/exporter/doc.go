// Package exporter reads a broker host through the Prometheus endpoints its operators
// already run: node_exporter for the host (CPU, memory, network, TCP), process-exporter or
// any endpoint with the standard process collector for the broker process (CPU, RSS,
// descriptors), and any other series a user names (a broker's own counters). Bodies are
// parsed with the Prometheus project's parser (expfmt), text or OpenMetrics.
//
// It promises bounded cost: one scrape of a URL takes at most its timeout and reads at most
// MaxBody bytes, whatever the endpoint does; a failed scrape is a Target with Err (one
// line, escaped with termtext), never a panic or a stall. Credentials (LoadAuth: a file,
// or MQBLAST_METRICS_* variables) are sent, never returned in an error, a string or a
// reading, never put in a URL, and never sent elsewhere: no proxy from the environment, no
// redirect followed. Bodies are asked for uncompressed, so that the measured host spends
// nothing on gzip. BenchmarkScrapeNodeExporter measures a scrape's CPU.
//
// It must not sample on its own schedule: callers scrape once per interval, off the
// reactor's loops, and keep what they need.
package exporter
