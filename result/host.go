package result

import (
	"fmt"
	"strings"

	"github.com/mqblast/mqblast/internal/countfmt"
)

// Clock is the kernel's estimate of its wall clock's error, as adjtimex(2) reports it: what
// separates the start instants of shards on different hosts (--start-at).
type Clock struct {
	// MaxErrorUS is the kernel's bound on the clock's error, in microseconds; EstErrorUS
	// its estimate. NTP (chrony, ntpd, systemd-timesyncd) sets both.
	MaxErrorUS int64 `json:"max_error_us"`
	EstErrorUS int64 `json:"est_error_us"`
	// Synchronized is false when the kernel marks the clock unsynchronised (STA_UNSYNC,
	// or adjtimex returns TIME_ERROR): no time daemon disciplines it.
	Synchronized bool `json:"synchronized"`
}

// Kernel is the kernel's network counters over the run (deltas; gauges as last read) of
// the client's namespace and, when the broker is a local process in another one, of the
// broker's, with what they mean.
type Kernel struct {
	Client        map[string]int64 `json:"client"`
	Broker        map[string]int64 `json:"broker,omitempty"`
	SameNamespace bool             `json:"same_namespace"` // the broker's counters are the client's (or it is not local)
	Findings      []KernelFinding  `json:"findings,omitempty"`
}

// BrokerProcess is what the broker's own process (or cgroup) used during the run.
type BrokerProcess struct {
	// Source says where the figures came from: "/proc" (a local process, sampled), or the
	// endpoint that published them ("process-exporter mosquitto at http://…", "process
	// collector at http://…"). Empty in documents written before it was recorded: /proc.
	Source         string  `json:"source,omitempty"`
	PID            int     `json:"pid,omitempty"`
	CPUS           float64 `json:"cpu_s"`
	CPUPercentAvg  float64 `json:"cpu_percent_avg"`
	CPUPercentPeak float64 `json:"cpu_percent_peak"` // of one interval
	RSSBytes       int64   `json:"rss_bytes"`        // at the last sample
	RSSPeakBytes   int64   `json:"rss_peak_bytes"`
	FDs            int     `json:"fds"` // the most open at one sample
	// CPUPerMessageUS is the broker's CPU per message it handled (taken in and delivered)
	// over the intervals inside the measure window (over the whole run when there are
	// fewer than two).
	CPUPerMessageUS float64 `json:"cpu_per_message_us"`
	// RSSPerConnectionBytes is the broker's RSS growth from the start to the interval with
	// the most connections established, per connection.
	RSSPerConnectionBytes float64        `json:"rss_per_connection_bytes"`
	Cgroup                *CgroupFigures `json:"cgroup,omitempty"`
	Error                 string         `json:"error,omitempty"` // sampling stopped (the process went away)
}

// CgroupFigures is what the broker's cgroup used during the run.
type CgroupFigures struct {
	Path            string  `json:"path"`
	CPUS            float64 `json:"cpu_s"`
	MemoryBytes     int64   `json:"memory_bytes"`
	MemoryPeakBytes int64   `json:"memory_peak_bytes"`
	Error           string  `json:"error,omitempty"`
}

// KernelFinding is the interpretation of one kernel counter that moved and matters, as
// tuning.KernelFinding (which it is converted from) says it.
type KernelFinding struct {
	Counter string `json:"counter"`
	// Delta is how much the counter rose; for a gauge (tcp_mem_*), its value.
	Delta int64 `json:"delta"`
	// Where is "client host", "broker host" or "client and broker host".
	Where string `json:"where"`
	// Meaning says what happened: "its accept queue was full".
	Meaning string `json:"meaning"`
	// Fix says what to change.
	Fix string `json:"fix"`
}

// String renders f on one line as tuning.KernelFinding does: "ListenOverflows +1,204 on
// the broker host: its accept queue was full — raise net.core.somaxconn and the broker's
// backlog, or lower connection_rate". A gauge (tcp_mem_*) has no sign.
func (f KernelFinding) String() string {
	sign := "+"
	if strings.HasPrefix(f.Counter, "tcp_mem_") {
		sign = ""
	}
	return fmt.Sprintf("%s %s%s on the %s: %s — %s", f.Counter, sign, countfmt.Thousands(f.Delta), f.Where, f.Meaning, f.Fix)
}
