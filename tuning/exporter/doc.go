// Package exporter reads a broker host through the Prometheus endpoints its operators
// already run: node_exporter for the host (CPU, memory, network, TCP), process-exporter or
// any endpoint with the standard process collector for the broker process (CPU, RSS,
// descriptors), and any other series a user names (a broker's own counters). Bodies are
// parsed with the Prometheus project's parser (expfmt), text or OpenMetrics.
//
// It promises bounded cost: one scrape of a URL takes at most its timeout and reads at most
// MaxBody bytes, whatever the endpoint does; a failed scrape is a Target with Err, never a
// panic or a stall. Credentials are sent, never returned in an error, a string or a reading.
//
// It must not sample on its own schedule: callers scrape once per interval, off the
// reactor's loops, and keep what they need.
package exporter
