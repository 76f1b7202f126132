package tuning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadKernelFakeTree reads a fake /proc in the kernel's formats (netstat and snmp
// header/value pairs, sockstat, per-CPU hex tables) and gets every counter.
func TestReadKernelFakeTree(t *testing.T) {
	got, err := ReadKernel("testdata/kernel/proc/self", "testdata/kernel/sys")
	if err != nil {
		t.Fatal(err)
	}
	want := KernelCounters{
		"ListenOverflows": 1204, "ListenDrops": 1210, "TCPReqQFullDrop": 0, "TCPBacklogDrop": 2,
		"TCPRcvQDrop": 0, "TCPTimeouts": 41, "TCPSynRetrans": 37, "TCPMemoryPressures": 3,
		"TCPAbortOnMemory": 0, "RetransSegs": 250, "OutSegs": 10000,
		"PruneCalled": 5, "TCPSpuriousRTOs": 4, "TCPFastRetrans": 90, "TCPLossProbes": 120, "TCPLossProbeRecovery": 6,
		"TCPDSACKRecv": 110, "TCPDSACKIgnoredNoUndo": 100,
		"tcp_mem_pages": 3, "tcp_mem_pressure_pages": 383858, "tcp_mem_high_pages": 575784,
		"conntrack_drop": 0x1a, "conntrack_early_drop": 3, "conntrack_insert_failed": 3,
		"softnet_dropped": 0x11, "softnet_time_squeeze": 6,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ReadKernel (-want +got):\n%s", d)
	}
}

// TestReadKernelOptionalFiles: without nf_conntrack, softnet_stat and tcp_mem the read
// succeeds without those counters; without netstat it fails and names the file.
func TestReadKernelOptionalFiles(t *testing.T) {
	got, err := ReadKernel("testdata/kernel-minimal/proc/self", "testdata/kernel-minimal/no-such-sys")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"conntrack_drop", "softnet_dropped", "tcp_mem_pressure_pages"} {
		if v, ok := got[name]; ok {
			t.Errorf("%s = %d read from a tree that has no such file", name, v)
		}
	}
	if got["ListenOverflows"] != 1204 || got["tcp_mem_pages"] != 3 {
		t.Errorf("ListenOverflows %d, tcp_mem_pages %d; want 1204, 3", got["ListenOverflows"], got["tcp_mem_pages"])
	}
	if _, err := ReadKernel("testdata/no-such-proc", "testdata/kernel/sys"); err == nil || !strings.Contains(err.Error(), "no-such-proc/net/netstat") {
		t.Errorf("missing netstat: err %v, want one naming the file", err)
	}
}

// TestReadKernelMalformed refuses tables it cannot read, naming the file.
func TestReadKernelMalformed(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"net/netstat":  "TcpExt: ListenOverflows ListenDrops\nTcpExt: 1 2\n",
		"net/snmp":     "Tcp: RetransSegs OutSegs\nTcp: 1 2\n",
		"net/sockstat": "TCP: inuse 5 orphan 0 tw 0 alloc 6 mem 3\n",
	}
	for name, bad := range map[string]map[string]string{
		"netstat short":    {"net/netstat": "TcpExt: ListenOverflows ListenDrops\nTcpExt: 1\n"},
		"netstat not int":  {"net/netstat": "TcpExt: ListenOverflows\nTcpExt: x\n"},
		"sockstat no TCP":  {"net/sockstat": "UDP: inuse 0 mem 7\n"},
		"softnet not hex":  {"net/softnet_stat": "0000 zz 00\n"},
		"conntrack header": {"net/stat/nf_conntrack": "entries found\n00000001 00000000\n"},
	} {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			var file string
			for k, v := range bad {
				files[k], file = v, k
			}
			root := writeTree(t, files)
			if _, err := ReadKernel(root, root); err == nil || !strings.Contains(err.Error(), file) {
				t.Errorf("err %v, want one naming %s", err, file)
			}
		})
	}
	if _, err := ReadKernel(writeTree(t, base), "."); err != nil {
		t.Errorf("the well-formed base tree: %v", err)
	}
}

// TestKernelDelta subtracts counters, reads a counter that went down as its current value
// (a reset) and keeps gauges as they are.
func TestKernelDelta(t *testing.T) {
	t.Parallel()
	prev := KernelCounters{"ListenOverflows": 100, "RetransSegs": 500, "tcp_mem_pages": 90, "tcp_mem_pressure_pages": 1000}
	now := KernelCounters{"ListenOverflows": 130, "RetransSegs": 7, "tcp_mem_pages": 40, "tcp_mem_pressure_pages": 1000, "OutSegs": 9}
	want := KernelCounters{"ListenOverflows": 30, "RetransSegs": 7, "tcp_mem_pages": 40, "tcp_mem_pressure_pages": 1000, "OutSegs": 9}
	if d := cmp.Diff(want, now.Delta(prev)); d != "" {
		t.Errorf("Delta (-want +got):\n%s", d)
	}
	for name, gauge := range map[string]bool{"tcp_mem_pages": true, "tcp_mem_high_pages": true, "ListenOverflows": false, "softnet_dropped": false} {
		if IsGauge(name) != gauge {
			t.Errorf("IsGauge(%q) = %v", name, !gauge)
		}
	}
}

// TestKernelFindings interprets deltas: what matters, in order, with the words a reader acts on.
func TestKernelFindings(t *testing.T) {
	t.Parallel()
	delta := KernelCounters{
		"OutSegs": 10000, "RetransSegs": 1500, "TCPSynRetrans": 12, "ListenOverflows": 1204,
		"softnet_time_squeeze": 5, "conntrack_drop": 5, "TCPTimeouts": 0, "ListenDrops": 1204,
		"tcp_mem_pages": 400, "tcp_mem_pressure_pages": 383858, "tcp_mem_high_pages": 575784,
	}
	got := KernelFindings(delta, "broker host", CPUWait{})
	var names []string
	for _, f := range got {
		names = append(names, f.Counter)
	}
	if d := cmp.Diff([]string{"ListenOverflows", "ListenDrops", "conntrack_drop", "TCPSynRetrans", "RetransSegs", "softnet_time_squeeze"}, names); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
	want := "ListenOverflows +1,204 on the broker host: its accept queue was full — raise net.core.somaxconn and the broker's backlog, or lower connection_rate"
	if got[0].String() != want {
		t.Errorf("String():\n got %s\nwant %s", got[0], want)
	}
	// Of the 1,488 data retransmissions, up to 1,204 - 12 are the full queue's (the first data
	// of connections whose handshake it dropped): the SYN finding says so; the 296 others
	// are more than 1 % of what was sent, a finding of their own.
	if s := got[3].String(); !strings.Contains(s, "(ListenOverflows +1,204): each such connection waited a second or more, "+
		"and 1,192 data segments went again after a timeout: the first data of connections whose handshake the full queue had not completed") {
		t.Errorf("TCPSynRetrans finding: %s", s)
	}
	if s := got[4].String(); !strings.Contains(s, "RetransSegs +1,500 on the broker host: segments were retransmitted: 15.0% of the 10,000 new segments sent") {
		t.Errorf("RetransSegs finding: %s", s)
	}

	// A listener whose accept queue holds one connection and which never accepts (the counters
	// of TestNetnsListenOverflowFinding in one CI run): the SYNs' timeouts and the few data
	// retransmissions of connections whose last handshake ACK the queue dropped are the
	// queue's, not a loss.
	f := KernelFindings(KernelCounters{"OutSegs": 49, "RetransSegs": 171, "TCPSynRetrans": 165, "TCPTimeouts": 170, "TCPLossProbes": 1,
		"ListenOverflows": 200, "ListenDrops": 200}, "client and broker host", CPUWait{})
	names = nil
	for _, x := range f {
		names = append(names, x.Counter)
	}
	if d := cmp.Diff([]string{"ListenOverflows", "ListenDrops", "TCPSynRetrans"}, names); d != "" {
		t.Errorf("a full listen queue's findings (-want +got):\n%s", d)
	}
	// Without the overflows, the same timeouts are a loss.
	f = KernelFindings(KernelCounters{"OutSegs": 49, "RetransSegs": 171, "TCPSynRetrans": 165, "TCPTimeouts": 170}, "client host", CPUWait{})
	if len(f) != 2 || f[1].Counter != "TCPTimeouts" || !strings.Contains(f[1].Meaning, "segments were lost: 5 retransmission timeouts") {
		t.Errorf("SYN retransmits and 5 data timeouts without overflows: %v", f)
	}

	// A few time squeezes in many segments are not a finding (26 in 7M: a long fan-out run).
	if f := KernelFindings(KernelCounters{"OutSegs": 7_000_000, "softnet_time_squeeze": 26}, "client host", CPUWait{}); len(f) != 0 {
		t.Errorf("26 squeezes in 7M segments: %v", f)
	}
	// 1% retransmitted is not a finding; OutSegs alone never is.
	if f := KernelFindings(KernelCounters{"OutSegs": 10000, "RetransSegs": 100}, "client host", CPUWait{}); len(f) != 0 {
		t.Errorf("1%% retransmitted: %v", f)
	}
	// tcp_mem at the pressure threshold is, and says both numbers; at the limit it says so.
	f = KernelFindings(KernelCounters{"tcp_mem_pages": 383858, "tcp_mem_pressure_pages": 383858, "tcp_mem_high_pages": 575784}, "client and broker host", CPUWait{})
	if len(f) != 1 || f[0].String() != "tcp_mem_pages 383,858 on the client and broker host: TCP holds 383,858 pages, at or above the pressure threshold tcp_mem[1] = 383,858 — "+fixTCPMem {
		t.Errorf("tcp_mem at pressure: %v", f)
	}
	f = KernelFindings(KernelCounters{"tcp_mem_pages": 600000, "tcp_mem_pressure_pages": 383858, "tcp_mem_high_pages": 575784}, "client host", CPUWait{})
	if len(f) != 1 || !strings.Contains(f[0].Meaning, "tcp_mem[2] = 575,784") {
		t.Errorf("tcp_mem at the limit: %v", f)
	}
	if f := KernelFindings(KernelCounters{"tcp_mem_pages": 383857, "tcp_mem_pressure_pages": 383858}, "client host", CPUWait{}); len(f) != 0 {
		t.Errorf("tcp_mem below pressure: %v", f)
	}
	// Every counter that matters, and every cause, has a finding with a meaning and a fix.
	for _, m := range kernelMeanings {
		d := KernelCounters{m.counter: 1}
		switch m.counter {
		case counterTCPMem:
			d[counterTCPMemPressure] = 1
		case counterSteal:
			d[counterCPU] = 1
		case causeRcvBuf:
			d = KernelCounters{"TCPRcvQDrop": 1}
		case causeSyn:
			d = KernelCounters{"TCPSynRetrans": 1}
		case causeLoss:
			d = KernelCounters{"RetransSegs": 1, "TCPTimeouts": 1}
		case causeLateACK:
			d = KernelCounters{"RetransSegs": 1, "TCPLossProbes": 1, "TCPDSACKRecv": 1}
		case causeOther:
			d = KernelCounters{"RetransSegs": 1}
		}
		f := KernelFindings(d, "client host", CPUWait{})
		if len(f) != 1 || f[0].Meaning == "" || f[0].Fix == "" {
			t.Errorf("%s moved by 1: %v", m.counter, f)
		}
	}
}

// TestKernelFindingsCauses gives retransmissions their cause, word for word: probes answered
// by DSACKs are late ACKs (with the client's own wait for a CPU when it is known), timeouts
// and fast retransmits that no DSACK answered are loss, SYN retransmits name the listen
// queue, drops at a full receiver are its buffers; the generic RetransSegs finding is left
// for retransmissions none of those explains.
func TestKernelFindingsCauses(t *testing.T) {
	t.Parallel()
	const (
		lateACK1M = "TCPLossProbes +909,241 on the client and broker host: tail-loss probes were answered by 907,838 DSACKs (TCPDSACKRecv): " +
			"the data had arrived and the ACKs came late, because a receiver was waiting for a CPU; nothing was lost " +
			"(899,118 segments retransmitted, 7.5% of the 11,988,240 new segments sent)"
		lateACKFix = " — give the receiving processes CPU: the client and the broker on cores (or hosts) of their own, fewer connections per core, or a lower rate; the network is not at fault"
		lossFix    = " — look for packet loss between the hosts (a congested link or NIC, a firewall's drops: ip -s link, nstat on both) or a peer that stopped answering, or lower the rate"
		synFix     = " — raise net.core.somaxconn and the broker's backlog, or lower connection_rate"
		rcvBufFix  = " — give the receiving process more CPU or fewer connections per core, so that it reads sooner, or raise net.ipv4.tcp_rmem and tcp_mem"
	)
	// The 1M-connection loopback run: 7.5% retransmitted, every probe answered by a DSACK.
	run1M := KernelCounters{"OutSegs": 11_988_240, "RetransSegs": 899_118, "TCPLossProbes": 909_241, "TCPLossProbeRecovery": 310,
		"TCPDSACKRecv": 907_838, "TCPDSACKIgnoredNoUndo": 905_120, "TCPTimeouts": 1_200, "TCPFastRetrans": 420}
	for _, c := range []struct {
		name  string
		delta KernelCounters
		where string
		wait  CPUWait
		want  []string
	}{
		{"late ACKs", run1M, "client and broker host", CPUWait{}, []string{lateACK1M + lateACKFix}},
		{"late ACKs, the client waited", run1M, "client and broker host", CPUWait{Wait: 14200 * time.Millisecond, Span: time.Minute}, []string{lateACK1M +
			"; the client's threads waited 14.20 s for a CPU in 60.0 s (24% of one core's time): it was short of CPU itself" + lateACKFix}},
		{"late ACKs, the client did not wait", run1M, "client and broker host", CPUWait{Wait: 100 * time.Millisecond, Span: time.Minute}, []string{lateACK1M +
			"; the client's threads waited only 0.10 s for a CPU in 60.0 s: it was not short of CPU itself" + lateACKFix}},
		{"loss: timeouts and fast retransmits without DSACK",
			KernelCounters{"OutSegs": 20_000, "RetransSegs": 1_200, "TCPTimeouts": 30, "TCPSpuriousRTOs": 2, "TCPFastRetrans": 900,
				"TCPLossProbes": 200, "TCPLossProbeRecovery": 150, "TCPDSACKRecv": 3}, "client host", CPUWait{Wait: time.Second, Span: time.Second},
			[]string{"TCPTimeouts +30 on the client host: segments were lost: 28 retransmission timeouts and 900 fast retransmits, " +
				"and 1,197 retransmitted segments (6.0% of the 20,000 new segments sent) drew no DSACK: the data had not arrived" + lossFix}},
		{"loss: fast retransmits only",
			KernelCounters{"OutSegs": 20_000, "RetransSegs": 500, "TCPFastRetrans": 480}, "broker host", CPUWait{},
			[]string{"TCPFastRetrans +480 on the broker host: segments were lost: 0 retransmission timeouts and 480 fast retransmits, " +
				"and 500 retransmitted segments (2.5% of the 20,000 new segments sent) drew no DSACK: the data had not arrived" + lossFix}},
		{"loss: a dead peer's timeouts, few segments",
			KernelCounters{"OutSegs": 100_000, "RetransSegs": 7, "TCPTimeouts": 7}, "broker host", CPUWait{},
			[]string{"TCPTimeouts +7 on the broker host: segments were lost: 7 retransmission timeouts and 0 fast retransmits, " +
				"and 7 retransmitted segments (0.0% of the 100,000 new segments sent) drew no DSACK: the data had not arrived" + lossFix}},
		{"late ACKs with timeouts and a few retransmissions unanswered: still late ACKs",
			KernelCounters{"OutSegs": 5_120, "RetransSegs": 117, "TCPLossProbes": 121, "TCPLossProbeRecovery": 38, "TCPDSACKRecv": 79, "TCPTimeouts": 2},
			"client and broker host", CPUWait{},
			[]string{"TCPLossProbes +121 on the client and broker host: tail-loss probes were answered by 79 DSACKs (TCPDSACKRecv): " +
				"the data had arrived and the ACKs came late, because a receiver was waiting for a CPU; nothing was lost " +
				"(117 segments retransmitted, 2.3% of the 5,120 new segments sent)" + lateACKFix}},
		{"timeouts all answered by DSACKs, few segments: nothing",
			KernelCounters{"OutSegs": 100_000, "RetransSegs": 40, "TCPTimeouts": 5, "TCPDSACKRecv": 40}, "client host", CPUWait{}, nil},
		{"timeouts F-RTO found spurious: nothing",
			KernelCounters{"OutSegs": 100_000, "RetransSegs": 5, "TCPTimeouts": 5, "TCPSpuriousRTOs": 5}, "client host", CPUWait{}, nil},
		{"SYN retransmits beside a full listen queue",
			KernelCounters{"OutSegs": 100, "RetransSegs": 40, "TCPSynRetrans": 40, "ListenOverflows": 18, "ListenDrops": 18}, "client and broker host", CPUWait{},
			[]string{"ListenOverflows +18 on the client and broker host: its accept queue was full" + synFix,
				"ListenDrops +18 on the client and broker host: connection requests to a listening socket were dropped (accept queue full or no memory)" + synFix,
				"TCPSynRetrans +40 on the client and broker host: SYNs were retransmitted because the listen queue was full (ListenOverflows +18): " +
					"each such connection waited a second or more" + synFix}},
		{"SYN retransmits alone (their timeouts are not a loss of data)",
			KernelCounters{"OutSegs": 1, "RetransSegs": 2, "TCPSynRetrans": 2, "TCPTimeouts": 2}, "client host", CPUWait{},
			[]string{"TCPSynRetrans +2 on the client host: SYNs were retransmitted: connection attempts went unanswered for a second or more, " +
				"most often because the broker's listen queue was full" + synFix + "; if the broker host's ListenOverflows did not rise, look for packet loss on the way"}},
		{"receive buffers",
			KernelCounters{"OutSegs": 1_000, "RetransSegs": 15, "TCPRcvQDrop": 12, "TCPBacklogDrop": 3, "PruneCalled": 40, "TCPFastRetrans": 15}, "client and broker host", CPUWait{},
			[]string{"TCPRcvQDrop +12 on the client and broker host: a receiver's buffers were full: 12 segments dropped with a socket's receive queue full (TCPRcvQDrop), " +
				"3 dropped with a socket's backlog full while its process held it (TCPBacklogDrop), receive queues pruned 40 times to make room (PruneCalled); " +
				"the senders retransmit what was dropped" + rcvBufFix}},
		{"receive buffers: a backlog drop",
			KernelCounters{"TCPBacklogDrop": 2}, "broker host", CPUWait{},
			[]string{"TCPBacklogDrop +2 on the broker host: a receiver's buffers were full: 2 dropped with a socket's backlog full while its process held it (TCPBacklogDrop); " +
				"the senders retransmit what was dropped" + rcvBufFix}},
		{"pruning alone: nothing", KernelCounters{"OutSegs": 1_000, "PruneCalled": 40}, "client host", CPUWait{}, nil},
		{"no cause known: the generic finding",
			KernelCounters{"OutSegs": 10_000, "RetransSegs": 250, "TCPSynRetrans": 10, "TCPDSACKRecv": 30}, "client host", CPUWait{},
			[]string{"TCPSynRetrans +10 on the client host: SYNs were retransmitted: connection attempts went unanswered for a second or more, " +
				"most often because the broker's listen queue was full" + synFix + "; if the broker host's ListenOverflows did not rise, look for packet loss on the way",
				"RetransSegs +250 on the client host: segments were retransmitted: 2.5% of the 10,000 new segments sent — look for packet loss or a congested link between the hosts, or lower the rate"}},
		{"probes answered by few DSACKs are not late ACKs",
			KernelCounters{"OutSegs": 10_000, "RetransSegs": 300, "TCPLossProbes": 300, "TCPDSACKRecv": 100}, "client host", CPUWait{},
			[]string{"RetransSegs +300 on the client host: segments were retransmitted: 3.0% of the 10,000 new segments sent — look for packet loss or a congested link between the hosts, or lower the rate"}},
		{"late ACKs below 1% of the segments: nothing",
			KernelCounters{"OutSegs": 10_000, "RetransSegs": 100, "TCPLossProbes": 100, "TCPDSACKRecv": 100}, "client host", CPUWait{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range KernelFindings(c.delta, c.where, c.wait) {
				got = append(got, f.String())
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("findings (-want +got):\n%s", d)
			}
		})
	}
}

// TestReadCgroupFakeTrees reads cgroup v2 and v1 fake trees by each kind of path, and says
// what it tried when there is no cgroup.
func TestReadCgroupFakeTrees(t *testing.T) {
	t.Parallel()
	v2 := writeTree(t, map[string]string{
		"cgroup.controllers":            "cpu memory\n",
		"docker/abc/cgroup.controllers": "cpu memory\n",
		"docker/abc/cpu.stat":           "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
		"docker/abc/memory.current":     "1048576\n",
		"docker/abc/memory.peak":        "4194304\n",
	})
	v1 := writeTree(t, map[string]string{
		"cpuacct/docker/abc/cpuacct.usage":            "1500000000\n",
		"memory/docker/abc/memory.usage_in_bytes":     "2097152\n",
		"memory/docker/abc/memory.max_usage_in_bytes": "8388608\n",
		// A combined cpu,cpuacct hierarchy, whose v1 cpu.stat must not pass for v2's.
		"cpu,cpuacct/docker/def/cpuacct.usage": "700\n",
		"cpu,cpuacct/docker/def/cpu.stat":      "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		"cpu,cpuacct/docker/def/cpu.shares":    "1024\n",
		"cpu/docker/ghi/cpu.stat":              "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		"cpu/docker/ghi/cpu.shares":            "1024\n",
		"cpuacct/docker/ghi/cpuacct.usage":     "900\n",
	})
	for name, c := range map[string]struct {
		sysFS, path string
		want        CgroupSample
	}{
		"v2 absolute":        {"/nonexistent", filepath.Join(v2, "docker/abc"), CgroupSample{2500e6, 1 << 20, 4 << 20}},
		"v2 relative":        {v2, "/docker/abc", CgroupSample{2500e6, 1 << 20, 4 << 20}},
		"v1 relative":        {v1, "/docker/abc", CgroupSample{1500e6, 2 << 20, 8 << 20}},
		"v1 cpuacct dir":     {v1, filepath.Join(v1, "cpuacct/docker/abc"), CgroupSample{1500e6, 2 << 20, 8 << 20}},
		"v1 memory dir":      {v1, filepath.Join(v1, "memory/docker/abc"), CgroupSample{1500e6, 2 << 20, 8 << 20}},
		"v1 cpu,cpuacct dir": {v1, filepath.Join(v1, "cpu,cpuacct/docker/def"), CgroupSample{CPU: 700}},
		"v1 cpu dir":         {v1, filepath.Join(v1, "cpu/docker/ghi"), CgroupSample{CPU: 900}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadCgroup(c.sysFS, c.path)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
	_, err := ReadCgroup(v1, "/docker/nope")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(v1, "cpuacct/docker/nope/cpuacct.usage")) ||
		!strings.Contains(err.Error(), filepath.Join(v1, "memory/docker/nope/memory.usage_in_bytes")) {
		t.Errorf("no cgroup: err %v, want one naming what it tried", err)
	}
}

// TestParseProcessFiles parses /proc/PID/stat (a command name with spaces and parentheses)
// and /proc/PID/status.
func TestParseProcessFiles(t *testing.T) {
	stat := "1234 (my (odd) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 100 1000000 256 18446744073709551615\n"
	cpu, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 300 * clockTick(); cpu != want {
		t.Errorf("CPU %v, want %v (300 ticks)", cpu, want)
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b = []byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n")
	}
	rss, hwm, err := parseStatusMem([]byte("Name:\tx\nVmPeak:\t 9999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t1\n"))
	if err != nil || rss != 1<<20 || hwm != 2<<20 {
		t.Errorf("rss %d, hwm %d, err %v; want 1 MiB, 2 MiB", rss, hwm, err)
	}
	if _, _, err := parseStatusMem(b); err != nil {
		t.Errorf("this host's status: %v", err)
	}
}

// TestCPUSteal: /proc/stat's first line gives the host's CPU ticks and the steal among
// them; steal above 2% of the time is a finding that names the hypervisor, below it none.
func TestCPUSteal(t *testing.T) {
	k := KernelCounters{}
	stat := "cpu  761149 11837 587358 2874557 8874 0 146636 65615 100 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
	if err := parseCPUStat([]byte(stat), k); err != nil {
		t.Fatal(err)
	}
	if k["cpu_ticks"] != 761149+11837+587358+2874557+8874+0+146636+65615 || k["cpu_steal_ticks"] != 65615 {
		t.Errorf("parsed %v", k)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x"} {
		if err := parseCPUStat([]byte(bad), KernelCounters{}); err == nil {
			t.Errorf("parseCPUStat(%q) took it", bad)
		}
	}
	f := KernelFindings(KernelCounters{"cpu_ticks": 670, "cpu_steal_ticks": 190}, "client host", CPUWait{})
	if len(f) != 1 || f[0].String() != "cpu_steal_ticks +190 on the client host: the hypervisor took 28% of the host's CPU time (steal): every process on it ran slower and later — "+
		"run on a host whose CPUs are not shared (dedicated or not overcommitted vCPUs), or quote the figures as distorted by it" {
		t.Errorf("findings %v", f)
	}
	if f := KernelFindings(KernelCounters{"cpu_ticks": 1000, "cpu_steal_ticks": 20}, "client host", CPUWait{}); len(f) != 0 {
		t.Errorf("2%% steal: %v", f)
	}
	// The real host: the client's read has the CPU time, and it moves.
	a, err := ReadKernel("/proc/self", "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	b, err := ReadKernel("/proc/self", "/proc/sys")
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Delta(a); a["cpu_ticks"] <= 0 || d["cpu_ticks"] <= 0 || a["cpu_steal_ticks"] > a["cpu_ticks"] {
		t.Errorf("/proc/stat: %d ticks then %d more, %d steal", a["cpu_ticks"], d["cpu_ticks"], a["cpu_steal_ticks"])
	}
}
