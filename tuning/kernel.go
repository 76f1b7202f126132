package tuning

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mqblast/mqblast/internal/countfmt"
)

// KernelCounters holds the kernel's network counters of one network namespace, by name.
//
// From /proc/…/net/netstat (TcpExt): "ListenOverflows", "ListenDrops", "TCPReqQFullDrop",
// "TCPBacklogDrop", "TCPRcvQDrop", "TCPTimeouts", "TCPSynRetrans", "TCPMemoryPressures",
// "TCPAbortOnMemory". From /proc/…/net/snmp (Tcp): "RetransSegs", "OutSegs".
// From /proc/…/net/sockstat: "tcp_mem_pages", the pages TCP holds now (a gauge). From
// net/ipv4/tcp_mem: "tcp_mem_pressure_pages" (tcp_mem[1]) and "tcp_mem_high_pages"
// (tcp_mem[2]), gauges. From /proc/…/net/stat/nf_conntrack, only when conntrack is loaded,
// summed over CPUs: "conntrack_drop", "conntrack_early_drop", "conntrack_insert_failed".
// From /proc/…/net/softnet_stat, summed over CPUs: "softnet_dropped" and
// "softnet_time_squeeze". With root /proc/self, from /proc/stat (the host's, over all
// CPUs, in clock ticks): "cpu_ticks", "cpu_busy_ticks" (every state but idle and iowait, as
// node_exporter's busy is counted) and "cpu_steal_ticks", the time a hypervisor took.
// A counter the kernel does not have is absent (reads as 0).
//
// Everything but the gauges counts up from boot (or from the namespace's creation); what a
// run caused is a [KernelCounters.Delta]. tcp_mem, sockstat and softnet_stat are global to
// the host even when read through a namespace.
type KernelCounters map[string]int64

// Names of the counters that are not read from a netstat/snmp table.
const (
	counterTCPMem         = "tcp_mem_pages"
	counterTCPMemPressure = "tcp_mem_pressure_pages"
	counterTCPMemHigh     = "tcp_mem_high_pages"
	counterCPU            = "cpu_ticks"
	counterSteal          = "cpu_steal_ticks"
	counterBusy           = "cpu_busy_ticks"
)

// kernelTables lists the counters read from netstat and snmp, by table prefix.
var kernelTables = map[string][]string{
	"TcpExt": {"ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "TCPBacklogDrop", "TCPRcvQDrop",
		"TCPTimeouts", "TCPSynRetrans", "TCPMemoryPressures", "TCPAbortOnMemory"},
	"Tcp": {"RetransSegs", "OutSegs"},
}

// conntrackColumns maps nf_conntrack's column headers to counter names.
var conntrackColumns = map[string]string{
	"drop": "conntrack_drop", "early_drop": "conntrack_early_drop", "insert_failed": "conntrack_insert_failed",
}

// ReadKernel reads the counters of the network namespace of root, which is "/proc/self" or
// "/proc/PID": root+"/net/netstat", "/net/snmp" and "/net/sockstat" must be there;
// "/net/stat/nf_conntrack" (conntrack not loaded), "/net/softnet_stat" and procSys's
// net/ipv4/tcp_mem are read when present. procSys is "/proc/sys" but for tests.
//
// It reads six small files; it is meant to run once per sampling interval, not per packet:
// BenchmarkReadKernel takes about 170 µs and 77 allocations on a 2-core VM, 120 µs of which
// is the kernel formatting the files (os.ReadFile alone).
func ReadKernel(root, procSys string) (KernelCounters, error) {
	k := make(KernelCounters, 24)
	for _, name := range []string{"/net/netstat", "/net/snmp"} {
		b, err := os.ReadFile(root + name)
		if err != nil {
			return nil, fmt.Errorf("cannot read kernel counters: %w", err)
		}
		if err := parseTables(b, k); err != nil {
			return nil, fmt.Errorf("cannot parse %s: %w", root+name, err)
		}
	}
	b, err := os.ReadFile(root + "/net/sockstat")
	if err != nil {
		return nil, fmt.Errorf("cannot read kernel counters: %w", err)
	}
	if err := parseSockstatMem(b, k); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", root+"/net/sockstat", err)
	}
	optional := []struct {
		path  string
		parse func([]byte, KernelCounters) error
	}{
		{root + "/net/stat/nf_conntrack", parseConntrack},
		{root + "/net/softnet_stat", parseSoftnet},
		{procSys + "/net/ipv4/tcp_mem", parseTCPMem},
	}
	if strings.HasSuffix(root, "/self") { // the host's CPU time, once: another namespace's read is the same host
		optional = append(optional, struct {
			path  string
			parse func([]byte, KernelCounters) error
		}{filepath.Join(filepath.Dir(procSys), "stat"), parseCPUStat})
	}
	for _, o := range optional {
		b, err := os.ReadFile(o.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read kernel counters: %w", err)
		}
		if err := o.parse(b, k); err != nil {
			return nil, fmt.Errorf("cannot parse %s: %w", o.path, err)
		}
	}
	return k, nil
}

// parseTables reads netstat/snmp: pairs of lines "Prefix: name name …" and "Prefix: value
// value …", keeping the counters kernelTables lists.
func parseTables(b []byte, k KernelCounters) error {
	var names [][]byte
	var prefix []byte
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		p, rest, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		if names == nil || !bytes.Equal(p, prefix) {
			names, prefix = bytes.Fields(rest), p
			continue
		}
		want := kernelTables[string(p)]
		values := bytes.Fields(rest)
		if len(values) != len(names) {
			return fmt.Errorf("%s: %d names but %d values", p, len(names), len(values))
		}
		for i, n := range names {
			for _, w := range want {
				if string(n) != w {
					continue
				}
				v, err := strconv.ParseInt(string(values[i]), 10, 64)
				if err != nil {
					return fmt.Errorf("%s %s: %w", p, n, err)
				}
				k[w] = v
			}
		}
		names = nil
	}
	return nil
}

// parseSockstatMem reads "mem N" of the "TCP:" line of sockstat.
func parseSockstatMem(b []byte, k KernelCounters) error {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		rest, ok := bytes.CutPrefix(line, []byte("TCP:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if string(f[i]) == "mem" {
				v, err := strconv.ParseInt(string(f[i+1]), 10, 64)
				if err != nil {
					return fmt.Errorf("TCP mem: %w", err)
				}
				k[counterTCPMem] = v
				return nil
			}
		}
		return errors.New("no mem in the TCP line")
	}
	return errors.New("no TCP line")
}

// parseConntrack sums nf_conntrack's per-CPU hex rows, found by the header's column names.
func parseConntrack(b []byte, k KernelCounters) error {
	header, b, _ := bytes.Cut(b, []byte{'\n'})
	cols := map[int]string{}
	for i, h := range bytes.Fields(header) {
		if name, ok := conntrackColumns[string(h)]; ok {
			cols[i] = name
		}
	}
	if len(cols) == 0 {
		return fmt.Errorf("no drop, early_drop or insert_failed column in %q", header)
	}
	for _, name := range cols {
		k[name] = 0
	}
	return sumHexRows(b, cols, k)
}

// parseSoftnet sums softnet_stat's per-CPU hex rows: column 1 dropped, 2 time_squeeze.
func parseSoftnet(b []byte, k KernelCounters) error {
	k["softnet_dropped"], k["softnet_time_squeeze"] = 0, 0
	return sumHexRows(b, map[int]string{1: "softnet_dropped", 2: "softnet_time_squeeze"}, k)
}

func sumHexRows(b []byte, cols map[int]string, k KernelCounters) error {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		for i, name := range cols {
			if i >= len(f) {
				return fmt.Errorf("row %q has no column %d", line, i+1)
			}
			v, err := strconv.ParseUint(string(f[i]), 16, 64)
			if err != nil {
				return fmt.Errorf("column %d: %w", i+1, err)
			}
			k[name] += int64(v)
		}
	}
	return nil
}

// parseCPUStat reads the first line of /proc/stat, the host's CPU time over all CPUs in
// clock ticks: "cpu_ticks" (every state), "cpu_busy_ticks" (all but idle and iowait) and
// "cpu_steal_ticks" (the time the hypervisor ran something else while a virtual CPU had
// work).
func parseCPUStat(b []byte, k KernelCounters) error {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return fmt.Errorf("first line %q: want cpu and at least 8 times", line)
	}
	var total, idle int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("column %d: %w", i+2, err)
		}
		if i < 8 { // user nice system idle iowait irq softirq steal; guest time is in user already
			total += n
		}
		switch i {
		case 3, 4: // idle, iowait
			idle += n
		case 7:
			k[counterSteal] = n
		}
	}
	k[counterCPU], k[counterBusy] = total, total-idle
	return nil
}

// parseTCPMem reads net.ipv4.tcp_mem: min, pressure, high, in pages.
func parseTCPMem(b []byte, k KernelCounters) error {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return fmt.Errorf("%q: want 3 values", b)
	}
	for i, name := range []string{"", counterTCPMemPressure, counterTCPMemHigh} {
		if name == "" {
			continue
		}
		v, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return err
		}
		k[name] = v
	}
	return nil
}

// IsGauge reports whether a counter name is a gauge (tcp_mem_*), which
// [KernelCounters.Delta] keeps as its current value instead of subtracting.
func IsGauge(name string) bool { return strings.HasPrefix(name, "tcp_mem_") }

// Delta returns k - prev for every counter of k, never negative: a counter that went down
// (a reset, a namespace made anew) reads as its current value. Gauges keep k's value.
func (k KernelCounters) Delta(prev KernelCounters) KernelCounters {
	d := make(KernelCounters, len(k))
	for name, v := range k {
		if IsGauge(name) {
			d[name] = v
			continue
		}
		if dv := v - prev[name]; dv >= 0 {
			d[name] = dv
		} else {
			d[name] = v
		}
	}
	return d
}

// KernelFinding is the interpretation of one counter that moved and matters.
type KernelFinding struct {
	Counter string `json:"counter"`
	// Delta is how much the counter rose; for a gauge (tcp_mem_pages), its value.
	Delta int64 `json:"delta"`
	// Where is "client host", "broker host" or "client and broker host".
	Where string `json:"where"`
	// Meaning says what happened: "its accept queue was full".
	Meaning string `json:"meaning"`
	// Fix says what to change.
	Fix string `json:"fix"`
}

// String renders f on one line: "ListenOverflows +1,204 on the broker host: its accept
// queue was full — raise net.core.somaxconn and the broker's backlog, or lower
// connection_rate". A gauge has no sign.
func (f KernelFinding) String() string {
	sign := "+"
	if IsGauge(f.Counter) {
		sign = ""
	}
	return fmt.Sprintf("%s %s%s on the %s: %s — %s", f.Counter, sign, countfmt.Thousands(f.Delta), f.Where, f.Meaning, f.Fix)
}

const (
	fixBacklog   = "raise net.core.somaxconn and the broker's backlog, or lower connection_rate"
	fixConntrack = "raise net.netfilter.nf_conntrack_max (and nf_conntrack_buckets), or exempt the broker's port from tracking (a notrack rule)"
	fixTCPMem    = "raise net.ipv4.tcp_mem, or use fewer connections or smaller socket buffers (net.ipv4.tcp_rmem, tcp_wmem)"
)

// kernelMeanings lists the counters that matter, most serious first: lost connections,
// then lost memory, then lost packets, then the retransmissions they cause.
var kernelMeanings = []struct{ counter, meaning, fix string }{
	{"ListenOverflows", "its accept queue was full", fixBacklog},
	{"ListenDrops", "connection requests to a listening socket were dropped (accept queue full or no memory)", fixBacklog},
	{"TCPReqQFullDrop", "its SYN queue was full and SYN cookies are off", "raise net.ipv4.tcp_max_syn_backlog and net.core.somaxconn, set net.ipv4.tcp_syncookies=1, or lower connection_rate"},
	{"conntrack_drop", "the conntrack table was full: new connections were dropped", fixConntrack},
	{"conntrack_early_drop", "the conntrack table was full: entries were evicted early", fixConntrack},
	{"conntrack_insert_failed", "conntrack entries could not be inserted (table full or a clash)", fixConntrack},
	{"TCPAbortOnMemory", "connections were reset because TCP ran out of memory", fixTCPMem},
	{"TCPMemoryPressures", "TCP entered memory pressure (tcp_mem[1]) and shrank socket buffers", fixTCPMem},
	{counterTCPMem, "", fixTCPMem},
	{"TCPRcvQDrop", "segments were dropped because a socket's receive queue was full and could not be pruned", "read faster (more CPU for the process), or raise net.ipv4.tcp_rmem and tcp_mem"},
	{"TCPBacklogDrop", "segments were dropped because a socket's backlog was full while the process held it", "give the process more CPU or fewer connections per core; raise net.ipv4.tcp_rmem"},
	{"softnet_dropped", "the input backlog (netdev_max_backlog) overflowed: packets were dropped before TCP saw them", "raise net.core.netdev_max_backlog, or spread receive work over more cores (RSS/RPS, irqbalance)"},
	{"TCPSynRetrans", "SYNs were retransmitted: connection attempts went unanswered for a second or more", "look for a full accept or SYN queue on the broker host (ListenOverflows, somaxconn), packet loss on the way, or lower connection_rate"},
	{"TCPTimeouts", "retransmission timers fired: segments went unacknowledged for a whole RTO", "look for packet loss between the hosts or an overloaded peer, or lower the rate"},
	{"RetransSegs", "", "look for packet loss or a congested link between the hosts, or lower the rate"},
	{"softnet_time_squeeze", "the receive softirq ran out of budget with packets still queued", "raise net.core.netdev_budget and netdev_budget_usecs, or spread receive work over more cores"},
	{counterSteal, "", "run on a host whose CPUs are not shared (dedicated or not overcommitted vCPUs), or quote the figures as distorted by it"},
}

// stealShare is the share of the host's CPU time above which steal matters: the
// hypervisor then slows every process on the host, the client's and the broker's alike.
const stealShare = 0.02

// retransShare is the share of OutSegs above which RetransSegs matters.
const retransShare = 0.01

// squeezeShare is the share of OutSegs above which softnet_time_squeeze matters: a
// squeeze is a receive round that ran out of budget and went on in the next, not a drop,
// so a few in a long run are noise (the 2M msg/s fan-out saw 1-26 in 70 s and ~7M segments).
const squeezeShare = 1e-4

// KernelFindings interprets the deltas of one namespace (from [KernelCounters.Delta]) seen
// from where ("client host", "broker host", "client and broker host"): one finding per
// counter that moved and matters, most serious first (the order is fixed). RetransSegs
// matters above 1% of OutSegs, softnet_time_squeeze above 0.01% of them, tcp_mem_pages at or
// above tcp_mem_pressure_pages, cpu_steal_ticks above 2% of cpu_ticks; OutSegs, cpu_ticks and
// the thresholds never appear.
func KernelFindings(delta KernelCounters, where string) []KernelFinding {
	var out []KernelFinding
	for _, m := range kernelMeanings {
		v := delta[m.counter]
		if v <= 0 {
			continue
		}
		meaning := m.meaning
		switch m.counter {
		case counterTCPMem:
			p := delta[counterTCPMemPressure]
			if p <= 0 || v < p {
				continue
			}
			meaning = fmt.Sprintf("TCP holds %s pages, at or above the pressure threshold tcp_mem[1] = %s", countfmt.Thousands(v), countfmt.Thousands(p))
			if h := delta[counterTCPMemHigh]; h > 0 && v >= h {
				meaning = fmt.Sprintf("TCP holds %s pages, at or above the limit tcp_mem[2] = %s: allocations fail", countfmt.Thousands(v), countfmt.Thousands(h))
			}
		case "softnet_time_squeeze":
			if sent := delta["OutSegs"]; sent > 0 && float64(v) <= squeezeShare*float64(sent) {
				continue
			}
		case counterSteal:
			all := delta[counterCPU]
			if all <= 0 || float64(v) <= stealShare*float64(all) {
				continue
			}
			meaning = fmt.Sprintf("the hypervisor took %.0f%% of the host's CPU time (steal): every process on it ran slower and later", 100*float64(v)/float64(all))
		case "RetransSegs":
			sent := delta["OutSegs"]
			if sent > 0 && float64(v) <= retransShare*float64(sent) {
				continue
			}
			meaning = "segments were retransmitted (no segments sent counted)"
			if sent > 0 {
				// OutSegs counts new segments only, so the share can exceed 100%.
				meaning = fmt.Sprintf("segments were retransmitted: %.1f%% of the %s new segments sent", 100*float64(v)/float64(sent), countfmt.Thousands(sent))
			}
		}
		out = append(out, KernelFinding{Counter: m.counter, Delta: v, Where: where, Meaning: meaning, Fix: m.fix})
	}
	return out
}
