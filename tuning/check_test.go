package tuning

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodHost is a fake tree of a host ready for 100000 connections.
func goodHost() map[string]string {
	return map[string]string{
		"proc/self/status":                          "Name:\ttest\nCapEff:\t0000000000000000\n",
		"proc/sys/fs/nr_open":                       "1048576\n",
		"proc/sys/fs/file-max":                      "9223372036854775807\n",
		"proc/sys/fs/file-nr":                       "1000\t0\t9223372036854775807\n",
		"proc/sys/net/ipv4/ip_local_port_range":     "1024\t65535\n",
		"proc/sys/net/ipv4/tcp_tw_reuse":            "1\n",
		"proc/sys/net/ipv4/tcp_max_tw_buckets":      "262144\n",
		"proc/sys/net/netfilter/nf_conntrack_max":   "1048576\n",
		"proc/sys/net/netfilter/nf_conntrack_count": "10\n",
		"proc/sys/net/core/somaxconn":               "65535\n",
		"proc/sys/net/ipv4/tcp_max_syn_backlog":     "65535\n",
		"proc/sys/net/ipv4/tcp_mem":                 "1000000 2000000 3000000\n",
		"proc/net/sockstat": "sockets: used 13\nTCP: inuse 2 orphan 0 tw 5 alloc 2 mem 3\n" +
			"UDP: inuse 0 mem 0\n",
		"sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
		"proc/meminfo": "MemTotal:       24683652 kB\nMemAvailable:   20000000 kB\n" +
			"SwapTotal:             0 kB\nSwapFree:              0 kB\n",
	}
}

// writeTree writes files (slash-separated paths under the root) into a temporary directory
// and returns it; a value of "" removes the file from the tree.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		if content == "" {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func fixedNoFile(soft, hard uint64) func() (NoFile, error) {
	return func() (NoFile, error) { return NoFile{Soft: soft, Hard: hard}, nil }
}

func TestCheckGoodHostIsReady(t *testing.T) {
	t.Parallel()
	h := Host{Root: writeTree(t, goodHost()), NoFile: fixedNoFile(1<<20, 1<<20), Cores: 8, PageSize: 4096}
	r := h.Check(ForConnections(100000, 2, 1))
	if !r.Ready() || r.Count(Warn) != 0 {
		for _, f := range r.Findings {
			t.Logf("%s: %s (needed %s) %s: %s", f.Name, f.Current, f.Needed, f.Verdict, f.Why)
		}
		t.Fatalf("ready=%v warn=%d, want ready with no warnings", r.Ready(), r.Count(Warn))
	}
	for _, f := range r.Findings {
		if f.Name == "" || f.Current == "" || f.Needed == "" || f.Why == "" {
			t.Errorf("finding %+v has an empty field", f)
		}
	}
	// Without a local broker the backlog checks are not run.
	if _, ok := r.Find("net.core.somaxconn"); ok {
		t.Error("somaxconn checked without a local broker")
	}
}

// TestCheckVerdicts runs one check at a time from a good host, changing one thing, and looks
// at the finding that changed.
func TestCheckVerdicts(t *testing.T) {
	t.Parallel()
	const capSysResource = "Name:\ttest\nCapEff:\t0000000001000000\n"
	type tc struct {
		name    string
		files   map[string]string // overrides of goodHost
		needs   func(*Needs)      // changes to ForConnections(100000, 2, 1)
		host    func(*Host)
		finding string
		verdict Verdict
		want    []string // substrings of the finding's Current, Why and Fix
	}
	cases := []tc{
		{name: "nofile/ok", finding: "RLIMIT_NOFILE", verdict: OK, want: []string{"soft 1048576, hard 1048576"}},
		{name: "nofile/soft-below-hard-covers", host: func(h *Host) { h.NoFile = fixedNoFile(1024, 1<<20) },
			finding: "RLIMIT_NOFILE", verdict: OK, want: []string{"soft 1024", "raises it to the hard limit"}},
		{name: "nofile/hard-low-no-cap", host: func(h *Host) { h.NoFile = fixedNoFile(20000, 20000) },
			finding: "RLIMIT_NOFILE", verdict: Fail,
			want: []string{"hard 20000 (cannot be raised here: no CAP_SYS_RESOURCE)", "mqblast run --procs 6",
				"re-login: the hard limit is inherited", "LimitNOFILE=1048576", "/etc/security/limits.d/90-mqblast.conf"}},
		{name: "nofile/hard-low-procs-enough", host: func(h *Host) { h.NoFile = fixedNoFile(20000, 20000) },
			needs: func(n *Needs) { n.Procs = 6 }, finding: "RLIMIT_NOFILE", verdict: OK},
		{name: "nofile/hard-low-with-cap", host: func(h *Host) { h.NoFile = fixedNoFile(20000, 20000) },
			files: map[string]string{"proc/self/status": capSysResource}, finding: "RLIMIT_NOFILE", verdict: Warn,
			want: []string{"this process may raise it: CAP_SYS_RESOURCE", "LimitNOFILE"}},
		{name: "nofile/cap-but-beyond-nr-open", host: func(h *Host) { h.NoFile = fixedNoFile(20000, 20000) },
			files:   map[string]string{"proc/self/status": capSysResource, "proc/sys/fs/nr_open": "50000"},
			finding: "RLIMIT_NOFILE", verdict: Fail, want: []string{"--procs 6"}},
		{name: "nofile/no-capeff", host: func(h *Host) { h.NoFile = fixedNoFile(20000, 20000) },
			files: map[string]string{"proc/self/status": "Name:\tx\n"}, finding: "RLIMIT_NOFILE", verdict: Fail,
			want: []string{"unknown: no CapEff line"}},
		{name: "nofile/unreadable", host: func(h *Host) {
			h.NoFile = func() (NoFile, error) { return NoFile{}, errors.New("boom") }
		}, finding: "RLIMIT_NOFILE", verdict: Warn, want: []string{"unreadable: boom"}},
		{name: "nr_open/low", files: map[string]string{"proc/sys/fs/nr_open": "65536"},
			finding: "fs.nr_open", verdict: Fail,
			want: []string{"sysctl -w fs.nr_open=1048576", "echo 'fs.nr_open = 1048576' >> /etc/sysctl.d/90-mqblast.conf"}},
		{name: "file-max/low", files: map[string]string{"proc/sys/fs/file-max": "100000"},
			finding: "fs.file-max", verdict: Fail, want: []string{"sysctl -w fs.file-max=2097152"}},
		{name: "file-max/local-broker-doubles", files: map[string]string{"proc/sys/fs/file-max": "150000"},
			needs: func(n *Needs) { n.LocalBroker = true }, finding: "fs.file-max", verdict: Fail},
		{name: "port-range/one-addr-short", needs: func(n *Needs) { n.SourceAddrs = 1 },
			finding: "net.ipv4.ip_local_port_range", verdict: Fail, want: []string{"over 2 source addresses", "--count 2"}},
		{name: "port-range/narrow", files: map[string]string{"proc/sys/net/ipv4/ip_local_port_range": "32768\t60999\n"},
			finding: "net.ipv4.ip_local_port_range", verdict: Fail,
			want: []string{"32768 60999 (28232 ports)", `sysctl -w net.ipv4.ip_local_port_range="1024 65535"`}},
		{name: "port-range/per-destination", needs: func(n *Needs) { n.SourceAddrs = 1; n.Destinations = 2 },
			finding: "net.ipv4.ip_local_port_range", verdict: OK},
		{name: "tw_reuse/off", files: map[string]string{"proc/sys/net/ipv4/tcp_tw_reuse": "0"},
			finding: "net.ipv4.tcp_tw_reuse", verdict: Warn, want: []string{"sysctl -w net.ipv4.tcp_tw_reuse=1"}},
		{name: "tw_reuse/loopback-only-remote", files: map[string]string{"proc/sys/net/ipv4/tcp_tw_reuse": "2"},
			finding: "net.ipv4.tcp_tw_reuse", verdict: Warn},
		{name: "tw_reuse/loopback-only-local", files: map[string]string{"proc/sys/net/ipv4/tcp_tw_reuse": "2"},
			needs: func(n *Needs) { n.LocalBroker = true }, finding: "net.ipv4.tcp_tw_reuse", verdict: OK},
		{name: "tw_buckets/low", files: map[string]string{"proc/sys/net/ipv4/tcp_max_tw_buckets": "4096"},
			finding: "net.ipv4.tcp_max_tw_buckets", verdict: Warn, want: []string{"tcp_max_tw_buckets=100000"}},
		{name: "time_wait/too-many", files: map[string]string{
			"proc/net/sockstat":              "TCP: inuse 2 orphan 0 tw 40000 alloc 2 mem 3\n",
			"proc/sys/net/ipv4/tcp_tw_reuse": "0"},
			finding: "TIME_WAIT sockets", verdict: Warn, want: []string{"40000", "<= 29024", "wait 60 s"}},
		{name: "time_wait/reuse", files: map[string]string{"proc/net/sockstat": "TCP: inuse 2 orphan 0 tw 40000 alloc 2 mem 3\n"},
			finding: "TIME_WAIT sockets", verdict: OK},
		{name: "time_wait/unreadable", files: map[string]string{"proc/net/sockstat": "UDP: inuse 0\n"},
			finding: "TIME_WAIT sockets", verdict: Warn, want: []string{"no TCP line"}},
		{name: "conntrack/not-loaded", files: map[string]string{"proc/sys/net/netfilter/nf_conntrack_max": "",
			"proc/sys/net/netfilter/nf_conntrack_count": ""}, finding: "nf_conntrack", verdict: OK, want: []string{"not loaded"}},
		{name: "conntrack/full", files: map[string]string{"proc/sys/net/netfilter/nf_conntrack_max": "262144",
			"proc/sys/net/netfilter/nf_conntrack_count": "200000"},
			needs:   func(n *Needs) { n.BrokerPort = 8883 },
			finding: "net.netfilter.nf_conntrack_max", verdict: Fail,
			want: []string{"262144 (200000 tracked now)", ">= 300000", "sysctl -w net.netfilter.nf_conntrack_max=1048576",
				"tcp dport 8883 notrack", "tcp sport 8883 notrack", "priority raw"}},
		{name: "somaxconn/low-local", files: map[string]string{"proc/sys/net/core/somaxconn": "128"},
			needs: func(n *Needs) { n.LocalBroker = true; n.ConnectRate = 10000 }, finding: "net.core.somaxconn", verdict: Warn,
			want: []string{">= 10000", "sysctl -w net.core.somaxconn=10000"}},
		{name: "syn_backlog/low-local", files: map[string]string{"proc/sys/net/ipv4/tcp_max_syn_backlog": "2048"},
			needs: func(n *Needs) { n.LocalBroker = true }, finding: "net.ipv4.tcp_max_syn_backlog", verdict: Warn,
			want: []string{">= 4096"}},
		{name: "somaxconn/ok-local", needs: func(n *Needs) { n.LocalBroker = true }, finding: "net.core.somaxconn", verdict: OK},
		{name: "tcp_mem/pressure", files: map[string]string{"proc/sys/net/ipv4/tcp_mem": "50000 90000 300000"},
			finding: "net.ipv4.tcp_mem", verdict: Warn, want: []string{`tcp_mem="50000 100003 300000"`}},
		{name: "tcp_mem/max", files: map[string]string{"proc/sys/net/ipv4/tcp_mem": "50000 60000 90000"},
			finding: "net.ipv4.tcp_mem", verdict: Fail, want: []string{`tcp_mem="50000 100003 150004"`}},
		{name: "tcp_mem/local-broker-doubles", files: map[string]string{"proc/sys/net/ipv4/tcp_mem": "50000 150000 300000"},
			needs: func(n *Needs) { n.LocalBroker = true }, finding: "net.ipv4.tcp_mem", verdict: Warn},
		{name: "tcp_mem/not-in-netns", files: map[string]string{"proc/sys/net/ipv4/tcp_mem": ""},
			finding: "net.ipv4.tcp_mem", verdict: Warn, want: []string{"not visible here"}},
		{name: "thp/always", files: map[string]string{"sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n"},
			finding: "transparent_hugepage", verdict: Warn,
			want: []string{"always", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"}},
		{name: "thp/never", files: map[string]string{"sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n"},
			finding: "transparent_hugepage", verdict: OK},
		{name: "thp/absent", files: map[string]string{"sys/kernel/mm/transparent_hugepage/enabled": ""},
			finding: "transparent_hugepage", verdict: OK, want: []string{"not built"}},
		{name: "swap/on", files: map[string]string{"proc/meminfo": "MemAvailable: 20000000 kB\nSwapTotal: 8388608 kB\nSwapFree: 7340032 kB\n"},
			finding: "swap", verdict: Warn, want: []string{"8.0 GiB (1.0 GiB used)", "swapoff -a"}},
		{name: "memory/short", files: map[string]string{"proc/meminfo": "MemAvailable: 1000000 kB\nSwapTotal: 0 kB\n"},
			finding: "MemAvailable", verdict: Fail, want: []string{"976.6 MiB", ">= 1.5 GiB", "--shard"}},
		{name: "memory/tight", files: map[string]string{"proc/meminfo": "MemAvailable: 1800000 kB\nSwapTotal: 0 kB\n"},
			finding: "MemAvailable", verdict: Warn, want: []string{"80%"}},
		{name: "memory/no-memavailable", files: map[string]string{"proc/meminfo": "MemTotal: 1800000 kB\n"},
			finding: "MemAvailable", verdict: Warn, want: []string{"unreadable"}},
		{name: "cores/one", host: func(h *Host) { h.Cores = 1 }, finding: "cores", verdict: Warn, want: []string{"more cores"}},
		{name: "cores/local-broker", host: func(h *Host) { h.Cores = 2 }, needs: func(n *Needs) { n.LocalBroker = true },
			finding: "cores", verdict: Warn, want: []string{"--broker HOST:PORT"}},
		{name: "sysctl/missing", files: map[string]string{"proc/sys/fs/nr_open": ""},
			finding: "fs.nr_open", verdict: Warn, want: []string{"unreadable"}},
		{name: "sysctl/garbage", files: map[string]string{"proc/sys/net/ipv4/ip_local_port_range": "1024"},
			finding: "net.ipv4.ip_local_port_range", verdict: Warn, want: []string{"want 2 numbers"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := goodHost()
			for k, v := range c.files {
				files[k] = v
			}
			h := Host{Root: writeTree(t, files), NoFile: fixedNoFile(1<<20, 1<<20), Cores: 8, PageSize: 4096}
			if c.host != nil {
				c.host(&h)
			}
			n := ForConnections(100000, 2, 1)
			if c.needs != nil {
				c.needs(&n)
			}
			r := h.Check(n)
			f, ok := r.Find(c.finding)
			if !ok {
				t.Fatalf("no finding %q", c.finding)
			}
			text := f.Current + "\n" + f.Needed + "\n" + f.Why + "\n" + strings.Join(f.Fix, "\n")
			if f.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s\n%s", f.Verdict, c.verdict, text)
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("finding does not say %q:\n%s", w, text)
				}
			}
			if f.Verdict != OK && len(f.Fix) == 0 && !strings.HasPrefix(f.Current, "unreadable") && !strings.HasPrefix(f.Current, "not visible") {
				t.Errorf("verdict %s without a fix", f.Verdict)
			}
			if (f.Verdict == Fail) == r.Ready() {
				t.Errorf("Ready() = %v with this finding %s", r.Ready(), f.Verdict)
			}
			// Everything else stays as on the good host, so a change shows in one place only.
			for _, o := range r.Findings {
				if o.Name != c.finding && o.Verdict == Fail && f.Verdict != Fail {
					t.Errorf("unrelated finding %s failed: %s", o.Name, o.Current)
				}
			}
		})
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	h := Host{Root: writeTree(t, goodHost()), NoFile: fixedNoFile(20000, 20000), Cores: 8, PageSize: 4096}
	b, err := json.Marshal(h.Check(ForConnections(100000, 2, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema   string         `json:"schema"`
		Ready    *bool          `json:"ready"`
		Needs    map[string]any `json:"needs"`
		Findings []map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != Schema || doc.Ready == nil || *doc.Ready || doc.Needs["connections"] != 100000.0 {
		t.Errorf("document %s", b)
	}
	f := doc.Findings[0]
	for _, k := range []string{"name", "current", "needed", "verdict", "why", "fix"} {
		if _, ok := f[k]; !ok {
			t.Errorf("finding %v has no %q", f, k)
		}
	}
}

func TestWriteText(t *testing.T) {
	t.Parallel()
	h := Host{Root: writeTree(t, goodHost()), NoFile: fixedNoFile(20000, 20000), Cores: 8, PageSize: 4096}
	var b strings.Builder
	if err := h.Check(ForConnections(100000, 2, 1)).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, w := range []string{
		"CHECK ", "RLIMIT_NOFILE  ", "fail RLIMIT_NOFILE: the hard limit caps each process at 20000",
		"  fix: mqblast run --procs 6", "NOT READY: ",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output does not hold %q:\n%s", w, out)
		}
	}
	// Columns line up: every table row has its verdict at the same offset.
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[0], "VERDICT")
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		if v := strings.TrimSpace(l[col:]); v != "ok" && v != "warn" && v != "fail" {
			t.Errorf("row %q: verdict column holds %q", l, v)
		}
	}
}

func TestNeedsDefaults(t *testing.T) {
	t.Parallel()
	n := Needs{Connections: 100001, Procs: 2, Destinations: 3}
	if got := n.fdsPerProc(); got != 50001+FDHeadroom {
		t.Errorf("fdsPerProc = %d", got)
	}
	if got := n.perDestination(); got != 33334 {
		t.Errorf("perDestination = %d", got)
	}
	if n.brokerPort() != 1883 || n.sourceAddrs() != 1 {
		t.Errorf("defaults: port %d addrs %d", n.brokerPort(), n.sourceAddrs())
	}
	n.FDsPerProc, n.PerDestination = 7, 9
	if n.fdsPerProc() != 7 || n.perDestination() != 9 {
		t.Error("explicit values not used")
	}
}

func TestFmtBytes(t *testing.T) {
	t.Parallel()
	check := func(n int64, want string) {
		t.Helper()
		if got := fmtBytes(n); got != want {
			t.Errorf("fmtBytes(%d) = %q, want %q", n, got, want)
		}
	}
	check(0, "0 B")
	check(1023, "1023 B")
	check(1024, "1.0 KiB")
	check(3<<30, "3.0 GiB")
	check(5<<40, "5.0 TiB")
}
