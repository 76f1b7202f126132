// Package grafana holds mqblast's Grafana dashboard (mqblast.json, over the series of
// mqblast run --metrics and the broker host's node_exporter and process-exporter; README.md
// says how to import it). Its test evaluates every query of the dashboard through a real
// Prometheus scraping a real run. It has no code of its own.
package grafana
