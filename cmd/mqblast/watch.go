package main

import (
	"github.com/spf13/pflag"
)

// registerWatchFlags adds the flags of the host and broker watch (run and the quick verbs).
func (rf *runFlags) registerWatchFlags(fl *pflag.FlagSet) {
	fl.IntVar(&rf.brokerPID, "broker-pid", 0, "the broker's process, sampled for CPU, RSS and descriptors each interval (default: found when the broker is local)")
	fl.BoolVar(&rf.brokerSys, "broker-sys", false, "read the broker's $SYS topics on one extra connection (not counted) and put its own counts beside the run's; "+
		"as fresh as the broker refreshes them (Mosquitto: sys_interval, 10 s by default)")
	fl.StringVar(&rf.brokerCgroup, "broker-cgroup", "", "the broker's cgroup, sampled for CPU and memory (a cgroup v2 directory, or a v1 path such as /docker/ID)")
	fl.StringArrayVar(&rf.brokerMetrics, "broker-metrics", nil, "a Prometheus endpoint of the broker's host, scraped once per interval (repeatable): "+
		"node_exporter (http://HOST:9100/metrics) gives the host's CPU, memory and network, process-exporter (:9256) or any endpoint "+
		"with the standard process collector the broker process's CPU, RSS and descriptors; an endpoint that does not answer at the start is refused")
	fl.StringArrayVar(&rf.metrics.Series, "broker-metric", nil, "another series to record from the --broker-metrics endpoints (repeatable): "+
		`NAME or NAME{label="value"}, summed over matching series; a counter as its rate per second, a gauge as its value `+
		"(e.g. rabbitmq_global_messages_received_total)")
	fl.StringVar(&rf.metrics.AuthFile, "broker-metrics-auth", "", "a file with the endpoints' credentials: lines username=, password= or bearer_token= "+
		"(default: $MQBLAST_METRICS_USERNAME, $MQBLAST_METRICS_PASSWORD, $MQBLAST_METRICS_TOKEN); never on the command line")
	fl.StringVar(&rf.metrics.Process, "broker-metrics-process", "", "the process-exporter group that is the broker (default: the only group, or the one named like a broker)")
	fl.DurationVar(&rf.metrics.Timeout, "broker-metrics-timeout", 0, "the longest one scrape may take (default 800ms, at most 900ms: a slow endpoint leaves a gap, never a late interval)")
}
