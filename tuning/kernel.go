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
	"time"

	"github.com/mqblast/mqblast/internal/countfmt"
)

// KernelCounters holds the kernel's network counters of one network namespace, by name.
//
// From /proc/…/net/netstat (TcpExt): "ListenOverflows", "ListenDrops", "TCPReqQFullDrop",
// "TCPBacklogDrop", "TCPRcvQDrop", "PruneCalled", "TCPTimeouts", "TCPSpuriousRTOs",
// "TCPFastRetrans", "TCPLossProbes", "TCPLossProbeRecovery", "TCPDSACKRecv",
// "TCPDSACKIgnoredNoUndo", "TCPSynRetrans", "TCPMemoryPressures", "TCPAbortOnMemory". From
// /proc/…/net/snmp (Tcp): "RetransSegs", "OutSegs".
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

// kernelTables lists the counters read from netstat and snmp, by table prefix: each name
// maps to itself, so that a counter is stored under this string, not one made per reading.
var kernelTables = map[string]map[string]string{
	"TcpExt": names("ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "TCPBacklogDrop", "TCPRcvQDrop",
		"PruneCalled", "TCPTimeouts", "TCPSpuriousRTOs", "TCPFastRetrans", "TCPLossProbes", "TCPLossProbeRecovery",
		"TCPDSACKRecv", "TCPDSACKIgnoredNoUndo", "TCPSynRetrans", "TCPMemoryPressures", "TCPAbortOnMemory"),
	"Tcp": names("RetransSegs", "OutSegs"),
}

func names(list ...string) map[string]string {
	m := make(map[string]string, len(list))
	for _, n := range list {
		m[n] = n
	}
	return m
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
// BenchmarkReadKernel takes 240-300 µs and 71 allocations on a loaded 2-core VM, most of it
// the kernel formatting the files; parsing netstat and snmp takes ~14 µs and 4 allocations
// (BenchmarkParseKernelTables).
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
// value …", keeping the counters kernelTables lists. It walks the two lines of a pair field
// by field, so that it allocates nothing but the counters it keeps.
func parseTables(b []byte, k KernelCounters) error {
	var names, prefix []byte
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		p, rest, ok := bytes.Cut(line, []byte(": "))
		if !ok {
			continue
		}
		if names == nil || !bytes.Equal(p, prefix) {
			names, prefix = rest, p
			continue
		}
		if want := kernelTables[string(p)]; want != nil {
			if err := parseRow(p, names, rest, want, k); err != nil {
				return err
			}
		}
		names = nil
	}
	return nil
}

// parseRow keeps the values whose names, at the same place in names, are in want.
func parseRow(prefix, names, values []byte, want map[string]string, k KernelCounters) error {
	for i := 0; ; i++ {
		var n, v []byte
		n, names = nextField(names)
		v, values = nextField(values)
		if n == nil || v == nil {
			if n == nil && v == nil {
				return nil
			}
			return fmt.Errorf("%s: %d names but %d values", prefix, i+countFields(n, names), i+countFields(v, values))
		}
		name, ok := want[string(n)]
		if !ok {
			continue
		}
		x, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("%s %s: %w", prefix, n, err)
		}
		k[name] = x
	}
}

// nextField returns the first field of b, separated by spaces or tabs (nil when there is
// none), and what follows it.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// countFields counts field (when not nil) and the fields of rest.
func countFields(field, rest []byte) int {
	n := len(bytes.Fields(rest))
	if field != nil {
		n++
	}
	return n
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
	fixRcvBuf    = "give the receiving process more CPU or fewer connections per core, so that it reads sooner, or raise net.ipv4.tcp_rmem and tcp_mem"
	fixSyn       = fixBacklog + "; if the broker host's ListenOverflows did not rise, look for packet loss on the way"
	fixLoss      = "look for packet loss between the hosts (a congested link or NIC, a firewall's drops: ip -s link, nstat on both) or a peer that stopped answering, or lower the rate"
	fixLateACK   = "give the receiving processes CPU: the client and the broker on cores (or hosts) of their own, fewer connections per core, or a lower rate; the network is not at fault"
	fixRetrans   = "look for packet loss or a congested link between the hosts, or lower the rate"
)

// Names of the findings that stand for a cause of retransmissions rather than one counter:
// kernelMeanings holds them at their place in the order, [KernelFindings] decides them.
const (
	causeRcvBuf  = "receive buffers"
	causeSyn     = "SYN retransmits"
	causeLoss    = "loss"
	causeLateACK = "late ACKs"
	causeOther   = "retransmits"
)

// kernelMeanings lists the counters that matter, most serious first: lost connections,
// then lost memory, then lost packets, then the retransmissions they cause. An entry
// without a meaning is one KernelFindings words itself; a cause (causeRcvBuf …) reads
// several counters and names the one that says most.
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
	{causeRcvBuf, "", fixRcvBuf},
	{"softnet_dropped", "the input backlog (netdev_max_backlog) overflowed: packets were dropped before TCP saw them", "raise net.core.netdev_max_backlog, or spread receive work over more cores (RSS/RPS, irqbalance)"},
	{causeSyn, "", fixSyn},
	{causeLoss, "", fixLoss},
	{causeLateACK, "", fixLateACK},
	{causeOther, "", fixRetrans},
	{"softnet_time_squeeze", "the receive softirq ran out of budget with packets still queued", "raise net.core.netdev_budget and netdev_budget_usecs, or spread receive work over more cores"},
	{counterSteal, "", "run on a host whose CPUs are not shared (dedicated or not overcommitted vCPUs), or quote the figures as distorted by it"},
}

// stealShare is the share of the host's CPU time above which steal matters: the
// hypervisor then slows every process on the host, the client's and the broker's alike.
const stealShare = 0.02

// retransShare is the share of OutSegs above which retransmitted segments matter.
const retransShare = 0.01

// squeezeShare is the share of OutSegs above which softnet_time_squeeze matters: a
// squeeze is a receive round that ran out of budget and went on in the next, not a drop,
// so a few in a long run are noise (the 2M msg/s fan-out saw 1-26 in 70 s and ~7M segments).
const squeezeShare = 1e-4

// clientWaitShare is the share of one core's time the client's threads may wait for a CPU
// before a late-ACK finding says the client was short of CPU itself (bench's RunDelayShare).
const clientWaitShare = 0.05

// CPUWait is the client's own wait for a CPU, a hint for [KernelFindings]: how long its
// threads waited on the kernel's run queues (schedstat's run delay, summed over threads and
// processes) in Span. The zero value is no hint.
type CPUWait struct {
	Wait, Span time.Duration
}

// KernelFindings interprets the deltas of one namespace (from [KernelCounters.Delta]) seen
// from where ("client host", "broker host", "client and broker host"): one finding per
// counter that moved and matters, or per cause of retransmissions, most serious first (the
// order is fixed). softnet_time_squeeze matters above 0.01% of OutSegs, tcp_mem_pages at or
// above tcp_mem_pressure_pages, cpu_steal_ticks above 2% of cpu_ticks; OutSegs, cpu_ticks and
// the thresholds never appear. wait, when known, is the client's own wait for a CPU over the
// same time, which a late-ACK finding quotes.
//
// Retransmissions are given their cause where the counters tell it, one finding each:
//   - receive buffers (TCPRcvQDrop, TCPBacklogDrop, with PruneCalled): segments dropped
//     at a receiver whose buffers were full; any drop is a finding.
//   - SYN retransmits (TCPSynRetrans): connection attempts unanswered, with the listen
//     queue named when ListenOverflows rose beside them; any is a finding. A full queue
//     also drops the first data of connections whose handshake it did not complete: up to
//     ListenOverflows - TCPSynRetrans data retransmissions are its (listenQueueData), not
//     a loss, and neither are the SYNs' own timeouts (TCPTimeouts counts them).
//   - loss (TCPTimeouts, or TCPFastRetrans): data retransmissions that no DSACK answered
//     (RetransSegs - TCPSynRetrans - TCPDSACKRecv, less the receive-buffer drops), with
//     timeouts that F-RTO did not find spurious (TCPTimeouts - TCPSpuriousRTOs) or fast
//     retransmits: a finding when those unanswered retransmissions exceed 1% of OutSegs,
//     or with any such timeout unless DSACKs answered most retransmissions.
//   - late ACKs (TCPLossProbes): tail-loss probes at least half of which drew a DSACK
//     (TCPDSACKRecv): the data had arrived and the ACK came late, because the receiver
//     was waiting for a CPU; a finding when the retransmissions so answered exceed 1% of
//     OutSegs.
//
// Data retransmissions (RetransSegs less TCPSynRetrans) above 1% of OutSegs with none of
// the data's causes (receive buffers, loss, late ACKs) is the generic RetransSegs finding.
func KernelFindings(delta KernelCounters, where string, wait CPUWait) []KernelFinding {
	var out []KernelFinding
	explained := false
	for _, m := range kernelMeanings {
		f := KernelFinding{Counter: m.counter, Delta: delta[m.counter], Where: where, Meaning: m.meaning, Fix: m.fix}
		ok := f.Delta > 0
		switch m.counter {
		case counterTCPMem:
			ok = ok && tcpMemFinding(&f, delta)
		case "softnet_time_squeeze":
			if sent := delta["OutSegs"]; sent > 0 && float64(f.Delta) <= squeezeShare*float64(sent) {
				ok = false
			}
		case counterSteal:
			all := delta[counterCPU]
			if all <= 0 || float64(f.Delta) <= stealShare*float64(all) {
				ok = false
				break
			}
			f.Meaning = fmt.Sprintf("the hypervisor took %.0f%% of the host's CPU time (steal): every process on it ran slower and later", 100*float64(f.Delta)/float64(all))
		case causeRcvBuf:
			ok = rcvBufFinding(&f, delta)
		case causeSyn:
			ok = synFinding(&f, delta)
		case causeLoss:
			ok = lossFinding(&f, delta)
		case causeLateACK:
			ok = lateACKFinding(&f, delta, wait)
		case causeOther:
			ok = !explained && retransFinding(&f, delta)
		}
		if !ok {
			continue
		}
		switch m.counter {
		case causeRcvBuf, causeLoss, causeLateACK:
			explained = true
		}
		out = append(out, f)
	}
	return out
}

// tcpMemFinding words tcp_mem_pages at or above the pressure threshold.
func tcpMemFinding(f *KernelFinding, delta KernelCounters) bool {
	v, p := f.Delta, delta[counterTCPMemPressure]
	if p <= 0 || v < p {
		return false
	}
	f.Meaning = fmt.Sprintf("TCP holds %s pages, at or above the pressure threshold tcp_mem[1] = %s", countfmt.Thousands(v), countfmt.Thousands(p))
	if h := delta[counterTCPMemHigh]; h > 0 && v >= h {
		f.Meaning = fmt.Sprintf("TCP holds %s pages, at or above the limit tcp_mem[2] = %s: allocations fail", countfmt.Thousands(v), countfmt.Thousands(h))
	}
	return true
}

// matters reports whether n segments are more than retransShare of the sent (any, when
// nothing sent was counted).
func matters(n, sent int64) bool {
	return n > 0 && (sent <= 0 || float64(n) > retransShare*float64(sent))
}

// ofSent words n segments as a share of the new segments sent: "4.2% of the 10,000 new
// segments sent" (OutSegs counts new segments only, so the share can exceed 100%).
func ofSent(n, sent int64) string {
	if sent <= 0 {
		return "no segments sent counted"
	}
	return fmt.Sprintf("%.1f%% of the %s new segments sent", 100*float64(n)/float64(sent), countfmt.Thousands(sent))
}

// rcvBufFinding: segments dropped at a receiver whose buffers were full.
func rcvBufFinding(f *KernelFinding, delta KernelCounters) bool {
	q, b, p := delta["TCPRcvQDrop"], delta["TCPBacklogDrop"], delta["PruneCalled"]
	if q <= 0 && b <= 0 {
		return false
	}
	var what []string
	if q > 0 {
		what = append(what, countfmt.Thousands(q)+" segments dropped with a socket's receive queue full (TCPRcvQDrop)")
	}
	if b > 0 {
		what = append(what, countfmt.Thousands(b)+" dropped with a socket's backlog full while its process held it (TCPBacklogDrop)")
	}
	if p > 0 {
		what = append(what, "receive queues pruned "+countfmt.Thousands(p)+" times to make room (PruneCalled)")
	}
	f.Counter, f.Delta = "TCPRcvQDrop", q
	if q <= 0 {
		f.Counter, f.Delta = "TCPBacklogDrop", b
	}
	f.Meaning = "a receiver's buffers were full: " + strings.Join(what, ", ") + "; the senders retransmit what was dropped"
	return true
}

// synFinding: SYNs (or SYN-ACKs) retransmitted, for a full listen queue when ListenOverflows
// rose beside them.
func synFinding(f *KernelFinding, delta KernelCounters) bool {
	f.Counter, f.Delta = "TCPSynRetrans", delta["TCPSynRetrans"]
	if f.Delta <= 0 {
		return false
	}
	if o := delta["ListenOverflows"]; o > 0 {
		f.Meaning = "SYNs were retransmitted because the listen queue was full (ListenOverflows +" + countfmt.Thousands(o) +
			"): each such connection waited a second or more"
		if d := listenQueueData(delta); d > 0 {
			f.Meaning += ", and " + countfmt.Thousands(d) + " data segments went again after a timeout: the first data of connections " +
				"whose handshake the full queue had not completed"
		}
		f.Fix = fixBacklog
		return true
	}
	f.Meaning = "SYNs were retransmitted: connection attempts went unanswered for a second or more, most often because the broker's listen queue was full"
	return true
}

// dataRetrans returns the data segments retransmitted (RetransSegs less the SYNs and the
// listen queue's, listenQueueData) and how many of them drew no DSACK and are not the
// receive-buffer drops counted here.
func dataRetrans(delta KernelCounters) (all, unanswered int64) {
	all = max(delta["RetransSegs"]-delta["TCPSynRetrans"]-listenQueueData(delta), 0)
	unanswered = max(all-delta["TCPDSACKRecv"]-delta["TCPRcvQDrop"]-delta["TCPBacklogDrop"], 0)
	return all, unanswered
}

// listenQueueData returns how many data segments a full listen queue may have made their
// senders retransmit: a queue that overflows drops the last ACK of a handshake, and the
// client, whose side is established, sends its first data (a CONNECT) into a connection
// the server has not completed, which drops it too; it goes again after a timeout, no
// DSACK answering. Each overflow drops one segment and each SYN retransmit answers one of
// them (a dropped SYN), so at most ListenOverflows - TCPSynRetrans retransmissions are of
// data: those are the queue's, not a loss.
func listenQueueData(delta KernelCounters) int64 {
	return min(max(delta["ListenOverflows"]-delta["TCPSynRetrans"], 0), max(delta["RetransSegs"]-delta["TCPSynRetrans"], 0))
}

// lossFinding: retransmissions no DSACK answered, by timeouts or fast retransmits.
func lossFinding(f *KernelFinding, delta KernelCounters) bool {
	all, lost := dataRetrans(delta)
	// A SYN retransmit is a timeout too (the SYN's timer), and so is the retransmit of data
	// a full listen queue dropped: neither is a loss.
	rto := max(delta["TCPTimeouts"]-delta["TCPSpuriousRTOs"]-delta["TCPSynRetrans"]-listenQueueData(delta), 0)
	fast := delta["TCPFastRetrans"]
	// A timeout is enough unless DSACKs answered most retransmissions: then the ACKs came
	// late, and a timeout among them is likelier one more late ACK than a loss.
	timedOut := rto > 0 && 2*delta["TCPDSACKRecv"] < all
	if lost <= 0 || (rto <= 0 && fast <= 0) || (!timedOut && !matters(lost, delta["OutSegs"])) {
		return false
	}
	f.Counter, f.Delta = "TCPTimeouts", delta["TCPTimeouts"]
	if rto <= 0 {
		f.Counter, f.Delta = "TCPFastRetrans", fast
	}
	f.Meaning = fmt.Sprintf("segments were lost: %s retransmission timeouts and %s fast retransmits, and %s retransmitted segments (%s) drew no DSACK: the data had not arrived",
		countfmt.Thousands(rto), countfmt.Thousands(fast), countfmt.Thousands(lost), ofSent(lost, delta["OutSegs"]))
	return true
}

// lateACKFinding: tail-loss probes answered by DSACKs.
func lateACKFinding(f *KernelFinding, delta KernelCounters, wait CPUWait) bool {
	probes, dsack := delta["TCPLossProbes"], delta["TCPDSACKRecv"]
	all, _ := dataRetrans(delta)
	answered := min(dsack, all)
	if probes <= 0 || 2*dsack < probes || !matters(answered, delta["OutSegs"]) {
		return false
	}
	f.Counter, f.Delta = "TCPLossProbes", probes
	f.Meaning = fmt.Sprintf("tail-loss probes were answered by %s DSACKs (TCPDSACKRecv): the data had arrived and the ACKs came late, "+
		"because a receiver was waiting for a CPU; nothing was lost (%s segments retransmitted, %s)",
		countfmt.Thousands(dsack), countfmt.Thousands(delta["RetransSegs"]), ofSent(delta["RetransSegs"], delta["OutSegs"]))
	if wait.Span > 0 {
		share := wait.Wait.Seconds() / wait.Span.Seconds()
		if share >= clientWaitShare {
			f.Meaning += fmt.Sprintf("; the client's threads waited %.2f s for a CPU in %.1f s (%.0f%% of one core's time): it was short of CPU itself",
				wait.Wait.Seconds(), wait.Span.Seconds(), 100*share)
		} else {
			f.Meaning += fmt.Sprintf("; the client's threads waited only %.2f s for a CPU in %.1f s: it was not short of CPU itself",
				wait.Wait.Seconds(), wait.Span.Seconds())
		}
	}
	return true
}

// retransFinding: data retransmissions above 1% of OutSegs, no cause known.
func retransFinding(f *KernelFinding, delta KernelCounters) bool {
	f.Counter, f.Delta = "RetransSegs", delta["RetransSegs"]
	if all, _ := dataRetrans(delta); !matters(all, delta["OutSegs"]) {
		return false
	}
	f.Meaning = "segments were retransmitted (" + ofSent(f.Delta, delta["OutSegs"]) + ")"
	if delta["OutSegs"] > 0 {
		f.Meaning = "segments were retransmitted: " + ofSent(f.Delta, delta["OutSegs"])
	}
	return true
}
