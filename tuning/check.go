package tuning

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Schema is the value of the "schema" key of a report's JSON document.
const Schema = "mqblast.check/v1"

// Verdict is the outcome of one check.
type Verdict string

// Verdicts, from good to bad.
const (
	OK   Verdict = "ok"   // the host carries the run as far as this check sees
	Warn Verdict = "warn" // the run can start, but this will cost latency, errors or a re-run
	Fail Verdict = "fail" // the run is bound to fail: too few descriptors, ports, memory, ...
)

// Finding is the result of one check.
type Finding struct {
	// Name is the sysctl key ("net.core.somaxconn") or the limit checked ("RLIMIT_NOFILE hard").
	Name string `json:"name"`
	// Current is the value as read from this host.
	Current string `json:"current"`
	// Needed is the value the run needs.
	Needed  string  `json:"needed"`
	Verdict Verdict `json:"verdict"`
	// Why says in one line why the check matters.
	Why string `json:"why"`
	// Fix holds the exact commands that fix the finding, one per entry, alternatives
	// introduced by "or"; empty when the verdict is OK.
	Fix []string `json:"fix,omitempty"`

	// set is the sysctl Apply may write to fix this finding; nil when it cannot.
	set *setting
}

// setting is what Apply may write to fix a finding: a sysctl key and its value, or (key
// empty) the whole content of a file.
type setting struct {
	key, value string
	file       string // path under the root, slash-separated, when key is empty
}

// Report holds the findings of one [Host.Check].
type Report struct {
	Needs    Needs     `json:"needs"`
	Findings []Finding `json:"findings"`
}

// Ready reports whether no finding failed.
func (r Report) Ready() bool {
	for _, f := range r.Findings {
		if f.Verdict == Fail {
			return false
		}
	}
	return true
}

// Count returns the number of findings with verdict v.
func (r Report) Count(v Verdict) int {
	n := 0
	for _, f := range r.Findings {
		if f.Verdict == v {
			n++
		}
	}
	return n
}

// Find returns the finding called name and whether there is one.
func (r Report) Find(name string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Name == name {
			return f, true
		}
	}
	return Finding{}, false
}

// MarshalJSON writes the report as one document with its schema and readiness.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		Schema string `json:"schema"`
		Ready  bool   `json:"ready"`
		plain
	}{Schema, r.Ready(), plain(r)})
}

// NoFile is a process's RLIMIT_NOFILE.
type NoFile struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

// Host is where the checks read from. The zero value but Root reads this process's limits.
type Host struct {
	// Root is the file system root /proc and /sys are read under: "/" normally.
	Root string
	// NoFile returns the RLIMIT_NOFILE that applies; nil means this process's getrlimit(2).
	NoFile func() (NoFile, error)
	// Cores is the number of usable cores; 0 means runtime.NumCPU.
	Cores int
	// PageSize is the size of a memory page in bytes (tcp_mem counts pages); 0 means
	// os.Getpagesize.
	PageSize int
}

// Check runs every check against the host under root (normally "/") with this process's
// limits. It is Host{Root: root}.Check(n).
func Check(root string, n Needs) Report { return Host{Root: root}.Check(n) }

// Check runs every check against h for a run that needs n. It only reads.
func (h Host) Check(n Needs) Report {
	c := &checker{h: h, n: n}
	if c.h.Root == "" {
		c.h.Root = "/"
	}
	if c.h.NoFile == nil {
		c.h.NoFile = ProcessNoFile
	}
	if c.h.Cores == 0 {
		c.h.Cores = runtime.NumCPU()
	}
	if c.h.PageSize == 0 {
		c.h.PageSize = os.Getpagesize()
	}
	r := Report{Needs: n}
	for _, check := range []func() []Finding{
		c.nofile, c.nrOpen, c.fileMax, c.portRange, c.twReuse, c.twBuckets, c.timeWait,
		c.conntrack, c.backlog, c.tcpMem, c.thp, c.swap, c.memory, c.cores,
	} {
		r.Findings = append(r.Findings, check()...)
	}
	return r
}

type checker struct {
	h Host
	n Needs
}

// read returns the trimmed content of the file at rel under the root.
func (c *checker) read(rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.h.Root, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// sysctlPath is the path of key under the root's /proc/sys.
func sysctlPath(key string) string { return "proc/sys/" + strings.ReplaceAll(key, ".", "/") }

func (c *checker) sysctl(key string) (string, error) { return c.read(sysctlPath(key)) }

// sysctlInt reads a one-number sysctl.
func (c *checker) sysctlInt(key string) (int64, error) {
	s, err := c.sysctl(key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %s %q: %w", key, s, err)
	}
	return v, nil
}

// sysctlInts reads a sysctl of several whitespace-separated numbers.
func (c *checker) sysctlInts(key string, want int) ([]int64, error) {
	s, err := c.sysctl(key)
	if err != nil {
		return nil, err
	}
	fields := strings.Fields(s)
	if len(fields) != want {
		return nil, fmt.Errorf("cannot parse %s %q: want %d numbers", key, s, want)
	}
	vs := make([]int64, len(fields))
	for i, f := range fields {
		if vs[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return nil, fmt.Errorf("cannot parse %s %q: %w", key, s, err)
		}
	}
	return vs, nil
}

// unreadable is the finding for a value that could not be read: a warning, since the check
// cannot vouch for the host.
func unreadable(name, needed, why string, err error) Finding {
	return Finding{Name: name, Current: "unreadable: " + err.Error(), Needed: needed, Verdict: Warn, Why: why}
}

// sysctlFix returns the commands that set key to value now and at every boot.
func sysctlFix(key, value string) []string {
	v := value
	if strings.Contains(v, " ") {
		v = strconv.Quote(v)
	}
	return []string{
		fmt.Sprintf("sysctl -w %s=%s", key, v),
		fmt.Sprintf("echo '%s = %s' >> %s", key, value, SysctlFile),
	}
}

// sysctlFinding fills the fix of f to set key to value and marks it for Apply.
func sysctlFinding(f Finding, key, value string) Finding {
	f.Fix = append(sysctlFix(key, value), f.Fix...)
	f.set = &setting{key: key, value: value}
	return f
}

// nofile checks RLIMIT_NOFILE, soft and hard, and whether this process may raise the hard
// limit. It is one finding: the soft limit only matters through the hard one, since mqblast
// raises its soft limit to the hard limit at start.
func (c *checker) nofile() []Finding {
	need := c.n.fdsPerProc()
	f := Finding{Name: "RLIMIT_NOFILE", Needed: fmt.Sprintf(">= %d per process", need),
		Why: "each process holds one descriptor per connection; the hard limit caps the soft one"}
	rl, err := c.h.NoFile()
	if err != nil {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, err)}
	}
	capable, capErr := c.capSysResource()
	nrOpen, _ := c.sysctlInt("fs.nr_open")
	f.Current = fmt.Sprintf("soft %d, hard %d", rl.Soft, rl.Hard)
	switch {
	case capErr != nil:
		f.Current += fmt.Sprintf(" (may it be raised here? unknown: %v)", capErr)
	case capable:
		f.Current += " (this process may raise it: CAP_SYS_RESOURCE)"
	default:
		f.Current += " (cannot be raised here: no CAP_SYS_RESOURCE)"
	}
	switch {
	case rl.Soft >= uint64(need):
		f.Verdict = OK
		return []Finding{f}
	case rl.Hard >= uint64(need):
		f.Verdict = OK
		f.Why = "the soft limit is below the need, but mqblast raises it to the hard limit at start"
		return []Finding{f}
	}
	limit := max(int64(need), 1<<20)
	if nrOpen >= int64(need) {
		limit = nrOpen
	}
	f.set = &setting{file: LimitsFile[1:], value: fmt.Sprintf("* soft nofile %d\n* hard nofile %d\n", limit, limit)}
	persistent := []string{
		fmt.Sprintf("or for new logins: printf '* soft nofile %d\\n* hard nofile %d\\n' > %s, then re-login: the hard limit is inherited", limit, limit, LimitsFile),
		fmt.Sprintf("or under systemd: systemctl edit UNIT, add LimitNOFILE=%d under [Service], restart it", limit),
	}
	if capable && capErr == nil && (nrOpen == 0 || int64(need) <= nrOpen) {
		f.Verdict = Warn
		f.Why = "the hard limit is below the need, but this process may raise it (CAP_SYS_RESOURCE)"
		f.Fix = persistent
		return []Finding{f}
	}
	f.Verdict = Fail
	f.Why = fmt.Sprintf("the hard limit caps each process at %d descriptors, and only CAP_SYS_RESOURCE may raise it", rl.Hard)
	f.Fix = persistent
	if perProc := int(rl.Hard) - FDHeadroom; perProc > 0 && c.n.Connections > 0 {
		procs := ceilDiv(c.n.Connections, perProc)
		f.Fix = append([]string{fmt.Sprintf("mqblast run --procs %d (worker processes, each with its own %d descriptors)", procs, rl.Hard)}, persistent...)
	}
	return []Finding{f}
}

// capSysResource reports whether this process's effective capabilities hold
// CAP_SYS_RESOURCE, the one that may raise a hard rlimit.
func (c *checker) capSysResource() (bool, error) {
	const capSysResource = 24 // linux/capability.h
	s, err := c.read("proc/self/status")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("cannot parse CapEff %q: %w", v, err)
			}
			return bits&(1<<capSysResource) != 0, nil
		}
	}
	return false, errors.New("no CapEff line in /proc/self/status")
}

func (c *checker) nrOpen() []Finding {
	need := int64(c.n.fdsPerProc())
	return []Finding{c.atLeast("fs.nr_open", need, Fail, max(need, 1<<20),
		"no process may open more descriptors than this, whatever its rlimit")}
}

// atLeast checks that the integer sysctl key is at least need: below it the verdict is
// low, and the fix sets it to fix.
func (c *checker) atLeast(key string, need int64, low Verdict, fix int64, why string) Finding {
	f := Finding{Name: key, Needed: fmt.Sprintf(">= %d", need), Why: why}
	v, err := c.sysctlInt(key)
	if err != nil {
		return unreadable(key, f.Needed, f.Why, err)
	}
	f.Current = strconv.FormatInt(v, 10)
	if v >= need {
		f.Verdict = OK
		return f
	}
	f.Verdict = low
	return sysctlFinding(f, key, strconv.FormatInt(fix, 10))
}

func (c *checker) fileMax() []Finding {
	const key = "fs.file-max"
	f := Finding{Name: key, Why: "system-wide open files; past it every open and accept fails with ENFILE"}
	inUse := int64(0)
	if s, err := c.sysctl("fs.file-nr"); err == nil {
		if fields := strings.Fields(s); len(fields) > 0 {
			inUse, _ = strconv.ParseInt(fields[0], 10, 64)
		}
	}
	need := inUse + int64(c.n.hostSockets()) + int64(c.n.procs()*FDHeadroom)
	f.Needed = fmt.Sprintf(">= %d (%d in use + %d)", need, inUse, need-inUse)
	v, err := c.sysctlInt(key)
	if err != nil {
		return []Finding{unreadable(key, f.Needed, f.Why, err)}
	}
	f.Current = strconv.FormatInt(v, 10)
	if v >= need {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Fail
	return []Finding{sysctlFinding(f, key, strconv.FormatInt(max(need, 1<<21), 10))}
}

func (c *checker) portRange() []Finding {
	const key = "net.ipv4.ip_local_port_range"
	addrs, need := c.n.sourceAddrs(), c.n.perDestination()
	f := Finding{Name: key,
		Needed: fmt.Sprintf(">= %d ports (%d per destination, %d source address%s)",
			ceilDiv(need, addrs), need, addrs, map[bool]string{true: "", false: "es"}[addrs == 1]),
		Why: "each connection to one destination takes its own local port from each source address"}
	r, err := c.sysctlInts(key, 2)
	if err != nil {
		return []Finding{unreadable(key, f.Needed, f.Why, err)}
	}
	ports := int(r[1] - r[0] + 1)
	f.Current = fmt.Sprintf("%d %d (%d ports)", r[0], r[1], ports)
	if ports*addrs >= need {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Fail
	if MaxPortsPerAddr*addrs >= need {
		return []Finding{sysctlFinding(f, key, "1024 65535")}
	}
	more := ceilDiv(need, MaxPortsPerAddr)
	f = sysctlFinding(f, key, "1024 65535")
	f.Fix = append(f.Fix, fmt.Sprintf("and spread connections over %d source addresses: mqblast addrs add --dev DEV --cidr A.B.C.D/N --count %d, then mqblast run --bind ...", more, more))
	return []Finding{f}
}

func (c *checker) twReuse() []Finding {
	const key = "net.ipv4.tcp_tw_reuse"
	f := Finding{Name: key, Needed: "1 (2 will do for a broker on loopback)",
		Why: "lets new connections reuse ports still in TIME_WAIT from the previous run"}
	v, err := c.sysctlInt(key)
	if err != nil {
		return []Finding{unreadable(key, f.Needed, f.Why, err)}
	}
	f.Current = strconv.FormatInt(v, 10)
	if v == 1 || (v == 2 && c.n.LocalBroker) {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Warn
	return []Finding{sysctlFinding(f, key, "1")}
}

func (c *checker) twBuckets() []Finding {
	need := int64(c.n.Connections)
	return []Finding{c.atLeast("net.ipv4.tcp_max_tw_buckets", need, Warn, need,
		"past it the kernel drops TIME_WAIT sockets early and logs 'time wait bucket table overflow'")}
}

func (c *checker) sockstat() (map[string]int64, error) {
	s, err := c.read("proc/net/sockstat")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(s, "\n") {
		rest, ok := strings.CutPrefix(line, "TCP:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		m := make(map[string]int64, len(fields)/2)
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseInt(fields[i+1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("cannot parse /proc/net/sockstat %q: %w", line, err)
			}
			m[fields[i]] = v
		}
		return m, nil
	}
	return nil, errors.New("no TCP line in /proc/net/sockstat")
}

func (c *checker) timeWait() []Finding {
	f := Finding{Name: "TIME_WAIT sockets",
		Why: "each TIME_WAIT socket holds its local port for 60 s unless tcp_tw_reuse lets it go"}
	spare, known := 0, false
	if r, err := c.sysctlInts("net.ipv4.ip_local_port_range", 2); err == nil {
		spare, known = max(int(r[1]-r[0]+1)*c.n.sourceAddrs()-c.n.perDestination(), 0), true
		f.Needed = fmt.Sprintf("<= %d (ports to spare)", spare)
	} else {
		f.Needed = "<= ports to spare"
	}
	st, err := c.sockstat()
	if err != nil {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, err)}
	}
	tw := st["tw"]
	f.Current = strconv.FormatInt(tw, 10)
	reuse, _ := c.sysctlInt("net.ipv4.tcp_tw_reuse")
	if !known || tw <= int64(spare) || reuse == 1 {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Warn
	f.Fix = []string{"wait 60 s for them to expire (ss -tan state time-wait | wc -l)",
		"or sysctl -w net.ipv4.tcp_tw_reuse=1"}
	return []Finding{f}
}

func (c *checker) conntrack() []Finding {
	const key = "net.netfilter.nf_conntrack_max"
	v, err := c.sysctlInt(key)
	if errors.Is(err, fs.ErrNotExist) {
		return []Finding{{Name: "nf_conntrack", Current: "not loaded", Needed: "not loaded, or a table that fits",
			Verdict: OK, Why: "no connection tracking: no table to overflow"}}
	}
	count, _ := c.sysctlInt("net.netfilter.nf_conntrack_count")
	need := count + int64(c.n.Connections)
	f := Finding{Name: key, Needed: fmt.Sprintf(">= %d (%d tracked + %d)", need, count, c.n.Connections),
		Why: "nf_conntrack is loaded: past its table size new connections are dropped without an error"}
	if err != nil {
		return []Finding{unreadable(key, f.Needed, f.Why, err)}
	}
	f.Current = fmt.Sprintf("%d (%d tracked now)", v, count)
	if v >= need {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Fail
	p := c.n.brokerPort()
	f.Fix = []string{fmt.Sprintf("or skip tracking MQTT traffic: nft 'add table inet mqblast; "+
		"add chain inet mqblast pre { type filter hook prerouting priority raw; }; "+
		"add chain inet mqblast out { type filter hook output priority raw; }; "+
		"add rule inet mqblast pre tcp dport %d notrack; add rule inet mqblast pre tcp sport %d notrack; "+
		"add rule inet mqblast out tcp dport %d notrack; add rule inet mqblast out tcp sport %d notrack'", p, p, p, p)}
	return []Finding{sysctlFinding(f, key, strconv.FormatInt(max(need, 1<<20), 10))}
}

func (c *checker) backlog() []Finding {
	if !c.n.LocalBroker {
		return nil
	}
	need := int64(4096)
	if c.n.ConnectRate > 0 {
		need = min(max(need, int64(c.n.ConnectRate)), 65535)
	}
	var out []Finding
	for _, key := range []string{"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog"} {
		out = append(out, c.atLeast(key, need, Warn, need,
			"the local broker's listen queue: past it SYNs are dropped and connects wait 1 s to retry"))
	}
	return out
}

func (c *checker) tcpMem() []Finding {
	const key = "net.ipv4.tcp_mem"
	page := int64(c.h.PageSize)
	used := int64(0)
	if st, err := c.sockstat(); err == nil {
		used = st["mem"]
	}
	sock := c.n.SocketMemBytes
	if c.n.LocalBroker {
		sock *= 2
	}
	need := used + (sock+page-1)/page
	f := Finding{Name: key,
		Needed: fmt.Sprintf("pressure >= %d pages (%s, %d in use)", need, fmtBytes(need*page), used),
		Why:    "TCP buffer memory in pages: past pressure the kernel shrinks buffers, past max writes fail"}
	v, err := c.sysctlInts(key, 3)
	if errors.Is(err, fs.ErrNotExist) {
		// tcp_mem belongs to the initial network namespace and is not shown in others.
		f.Current, f.Verdict = "not visible here (in a network namespace? check the host's)", Warn
		return []Finding{f}
	}
	if err != nil {
		return []Finding{unreadable(key, f.Needed, f.Why, err)}
	}
	f.Current = fmt.Sprintf("%d %d %d (max %s)", v[0], v[1], v[2], fmtBytes(v[2]*page))
	switch {
	case v[1] >= need:
		f.Verdict = OK
		return []Finding{f}
	case v[2] >= need:
		f.Verdict = Warn
	default:
		f.Verdict = Fail
	}
	value := fmt.Sprintf("%d %d %d", v[0], need, max(v[2], need*3/2))
	return []Finding{sysctlFinding(f, key, value)}
}

func (c *checker) thp() []Finding {
	f := Finding{Name: "transparent_hugepage", Needed: "madvise or never",
		Why: "THP always: compaction stalls and memory bloat show up as latency spikes"}
	s, err := c.read("sys/kernel/mm/transparent_hugepage/enabled")
	if errors.Is(err, fs.ErrNotExist) {
		f.Current, f.Verdict = "not built into this kernel", OK
		return []Finding{f}
	}
	if err != nil {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, err)}
	}
	mode := s
	if i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']'); i >= 0 && j > i {
		mode = s[i+1 : j]
	}
	f.Current = mode
	if mode == "madvise" || mode == "never" {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Warn
	f.Fix = []string{"echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
		"and to keep it: add transparent_hugepage=madvise to the kernel command line"}
	return []Finding{f}
}

// meminfo returns /proc/meminfo in bytes by key (MemAvailable, SwapTotal, ...).
func (c *checker) meminfo() (map[string]int64, error) {
	s, err := c.read("proc/meminfo")
	if err != nil {
		return nil, err
	}
	m := make(map[string]int64)
	for _, line := range strings.Split(s, "\n") {
		k, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v <<= 10
		}
		m[k] = v
	}
	return m, nil
}

func (c *checker) swap() []Finding {
	f := Finding{Name: "swap", Needed: "off",
		Why: "a paged-out connection or histogram becomes a latency outlier the broker did not cause"}
	m, err := c.meminfo()
	if err != nil {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, err)}
	}
	total := m["SwapTotal"]
	if total == 0 {
		f.Current, f.Verdict = "off", OK
		return []Finding{f}
	}
	f.Current = fmt.Sprintf("%s (%s used)", fmtBytes(total), fmtBytes(total-m["SwapFree"]))
	f.Verdict = Warn
	f.Fix = []string{"swapoff -a", "and to keep it off: comment out the swap lines of /etc/fstab"}
	return []Finding{f}
}

func (c *checker) memory() []Finding {
	need := c.n.SocketMemBytes + c.n.HeapBytes
	if c.n.LocalBroker {
		need += c.n.SocketMemBytes
	}
	f := Finding{Name: "MemAvailable", Needed: fmt.Sprintf(">= %s (sockets and heap)", fmtBytes(need)),
		Why: "a run that outgrows memory is killed or swaps; its numbers are void"}
	m, err := c.meminfo()
	if err != nil {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, err)}
	}
	avail, ok := m["MemAvailable"]
	if !ok {
		return []Finding{unreadable(f.Name, f.Needed, f.Why, errors.New("no MemAvailable in /proc/meminfo"))}
	}
	f.Current = fmtBytes(avail)
	fix := []string{"free memory, or split the run over hosts: mqblast run --shard I/N on each"}
	switch {
	case need > avail:
		f.Verdict, f.Fix = Fail, fix
	case need > avail/10*8:
		f.Verdict, f.Fix = Warn, fix
		f.Why = "the run would use more than 80% of available memory; the page cache and the broker need the rest"
	default:
		f.Verdict = OK
	}
	return []Finding{f}
}

func (c *checker) cores() []Finding {
	need := 2
	if c.n.LocalBroker {
		need = 4
	}
	f := Finding{Name: "cores", Current: strconv.Itoa(c.h.Cores), Needed: fmt.Sprintf(">= %d", need),
		Why: "the event loops, the kernel's network stack and a local broker share these cores"}
	if c.h.Cores >= need {
		f.Verdict = OK
		return []Finding{f}
	}
	f.Verdict = Warn
	if c.n.LocalBroker {
		f.Fix = []string{"run the broker on another host (mqblast run --broker HOST:PORT)"}
	} else {
		f.Fix = []string{"use a host with more cores; watch client.saturated in the result"}
	}
	return []Finding{f}
}

// fmtBytes formats n bytes with a binary unit.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
