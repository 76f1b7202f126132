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
}
