package run

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/promtest"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/run/spec"
)

// startExporter starts an exporter inside the namespace ns, listening on addr there only,
// and waits until it answers; it stops when the test ends. It returns its metrics URL.
func startExporter(t *testing.T, ns, addr string, argv ...string) string {
	t.Helper()
	url := "http://" + addr + "/metrics"
	promtest.StartProgram(t, url, append([]string{"ip", "netns", "exec", ns}, argv...)...)
	return url
}

// brokerHost is Mosquitto on a host of its own (a network namespace reached over a veth
// pair) with node_exporter and process-exporter beside it, listening only there.
type brokerHost struct {
	ns            string
	m             *testbroker.Mosquitto
	node, process string // metrics URLs
}

func newBrokerHost(t *testing.T) *brokerHost {
	t.Helper()
	return newBrokerHostWith(t, nil)
}

// newBrokerHostWith is newBrokerHost whose Mosquitto has the options opts makes of the
// host's address (nil: none but its host and namespace).
func newBrokerHostWith(t *testing.T, opts func(addr netip.Addr) testbroker.Options) *brokerHost {
	t.Helper()
	node, procExp := promtest.Need(t, "prometheus-node-exporter"), promtest.Need(t, "prometheus-process-exporter")
	ns, addr := netnstest.Host(t, "bhost")
	h := &brokerHost{ns: ns}
	o := testbroker.Options{}
	if opts != nil {
		o = opts(addr)
	}
	o.Host, o.Netns = addr.String(), ns
	h.m = testbroker.StartMosquitto(t, o)
	a := addr.String()
	h.node = startExporter(t, ns, net.JoinHostPort(a, "9100"), node, "--web.listen-address="+net.JoinHostPort(a, "9100"),
		"--collector.disable-defaults", "--collector.cpu", "--collector.meminfo", "--collector.netdev", "--collector.netstat",
		"--collector.sockstat", "--collector.stat")
	// This broker's process alone, by its own config file: the namespace shares the host's
	// /proc, and "-procnames mosquitto" summed every Mosquitto other tests had running (the
	// exporter saw 100 % of a core where /proc saw this one at 52 %).
	conf := h.m.Cmd.Args[len(h.m.Cmd.Args)-1]
	pcfg := filepath.Join(t.TempDir(), "process-exporter.yml")
	rule := fmt.Sprintf("process_names:\n  - name: mosquitto\n    cmdline:\n      - '%s'\n", strings.ReplaceAll(regexp.QuoteMeta(conf), "'", "''"))
	if err := os.WriteFile(pcfg, []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	h.process = startExporter(t, ns, net.JoinHostPort(a, "9256"), procExp, "-web.listen-address", net.JoinHostPort(a, "9256"),
		"-config.path", pcfg)
	return h
}

// TestBrokerHostAgreesWithProc: a P2P run past Mosquitto's limit, the broker on a host of
// its own watched through node_exporter and process-exporter, and through /proc as well
// (watch.broker_pid: the namespace shares this kernel). Per interval of the measure window the
// endpoints' broker CPU and host CPU agree with /proc's within 5 percentage points, the
// broker's CPU per message within 10 %, and the verdict names the broker's CPU from them.
// A timing test: the endpoints read /proc when their scrape is served, some milliseconds
// after this process's own reading, which a host busy with other tests stretches.
func TestBrokerHostAgreesWithProc(t *testing.T) {
	tm := tier.Timing(t) // the endpoints read /proc some milliseconds after this process does
	h := newBrokerHost(t)
	sp := quick("quick-p2p-100", h.m.Addr, "parameters.publish_rate=2000", "parameters.warmup_sec=2")
	sp.Duration, sp.Loops, sp.Procs, sp.NoCheck = spec.Duration(8*time.Second), 1, 1, true
	sp.Watch.BrokerPID, sp.Watch.BrokerMetrics = h.m.Cmd.Process.Pid, []string{h.node, h.process}
	r := doSpec(t, sp)
	if r.res == nil {
		t.Fatalf("no result: %v\n%s", r.err, r.stderr)
	}
	res := r.res
	bh := res.BrokerHost
	if bh == nil || len(bh.Sources) != 2 {
		t.Fatalf("broker_host %+v\n%s", bh, r.stderr)
	}
	for i, want := range []string{"node_exporter", "process-exporter"} {
		s := bh.Sources[i]
		if !strings.Contains(strings.Join(s.Kinds, ","), want) || s.Failed != 0 || s.ScrapesOK < 8 {
			t.Errorf("source %d %+v: want %s, every scrape answered", i, s, want)
		}
	}
	if bh.Gaps != 0 || bh.CPUs == 0 {
		t.Errorf("gaps %d, cpus %d", bh.Gaps, bh.CPUs)
	}
	bp, rp := res.BrokerProcess, bh.Process
	if bp == nil || bp.Source != "/proc" || rp == nil || !strings.HasPrefix(rp.Source, "process-exporter mosquitto") {
		t.Fatalf("broker_process %+v, broker_host.process %+v", bp, rp)
	}
	t.Logf("throughput %.0f written, %.0f arrived; broker cpu per message %.3f µs (/proc) vs %.3f µs (process-exporter); host cpu avg %.1f%%",
		res.Throughput.PublishPerS, res.Throughput.ReceivePerS, bp.CPUPerMessageUS, rp.CPUPerMessageUS, bh.CPUPercentAvg)
	if d := math.Abs(rp.CPUPerMessageUS-bp.CPUPerMessageUS) / bp.CPUPerMessageUS; bp.CPUPerMessageUS <= 0 || d > 0.10 {
		tm.Errorf("broker cpu per message %.3f µs from process-exporter, %.3f µs from /proc: %.1f %% apart, want within 10 %%",
			rp.CPUPerMessageUS, bp.CPUPerMessageUS, 100*d)
	}
	from, to := res.MeasureFrom.Sub(res.StartedAt).Seconds(), res.MeasureTo.Sub(res.StartedAt).Seconds()
	compared := 0
	for _, iv := range res.Intervals {
		if iv.TS <= from+1 || iv.TS > to || iv.BrokerHost == nil {
			continue
		}
		b := iv.BrokerHost
		ticks, busy := iv.Kernel["cpu_ticks"], iv.Kernel["cpu_busy_ticks"]
		if !b.HasProcess || !b.HasHost || ticks == 0 {
			t.Errorf("t=%.1fs: broker_host %+v, kernel cpu_ticks %d: figures missing", iv.TS, b, ticks)
			continue
		}
		local := 100 * float64(busy) / float64(ticks)
		line := fmt.Sprintf("t=%.1fs: broker process %.1f%% (/proc) vs %.1f%% (process-exporter); host %.1f%% (/proc/stat) vs %.1f%% (node_exporter)",
			iv.TS, iv.BrokerCPUPercent, b.ProcessCPUPercent, local, b.CPUPercent)
		t.Log(line)
		if math.Abs(iv.BrokerCPUPercent-b.ProcessCPUPercent) > 5 || math.Abs(local-b.CPUPercent) > 5 {
			tm.Errorf("%s: want within 5 percentage points", line)
		}
		compared++
	}
	if compared < 4 {
		t.Errorf("%d intervals compared in the measure window [%.1f, %.1f]", compared, from, to)
	}
	// The broker's "host" shares this machine's two cores with the client: its host CPU is
	// at 100 %, and Mosquitto at 100 % of its core when the client leaves it one.
	if ev := strings.Join(res.BrokerBusy.Evidence, ";"); !res.BrokerBusy.Busy ||
		!strings.Contains(ev, "(node_exporter)") && !strings.Contains(ev, "(process-exporter") {
		t.Errorf("broker_busy %+v: want the broker's CPU named, from its endpoints", res.BrokerBusy)
	}
	sum := summary(t, res)
	for _, want := range []string{"BROKER BUSY", "broker host ", "process-exporter mosquitto"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
}

// TestLimitConnectionsBrokerHost: a connection-count search of Mosquitto on a host of its
// own, watched only through its exporters (no pid): each step that held has the broker's
// resident set from process-exporter and its host's memory in use from node_exporter, and
// the answer what each connection cost the broker's resident set. The host's memory is the
// whole kernel's (the namespace shares it with every other process here), so its slope is
// noise here (-79 KB a connection from 200 to 800 once): it is given when it is above 0.
func TestLimitConnectionsBrokerHost(t *testing.T) {
	h := newBrokerHost(t)
	sp := quick("quick-conn-100", h.m.Addr, "publishers.client_count=800", "parameters.connection_rate=1000")
	sp.Watch.BrokerMetrics = []string{h.node, h.process}
	sp.Limit = &spec.Limit{SLO: []string{"connect_latency_us.p99<500000", "connections.failed==0", "broker.host_cpu_percent<100"},
		Find: spec.FindConnections, StartRate: 200, MaxDuration: spec.Duration(60 * time.Second)}
	res, output := limitRun(t, sp)
	l := res.Limit
	if !l.Found || l.Sustained != 800 || l.Ended != "max_rate" {
		t.Fatalf("limit %+v: want 200, 400 and 800 held\n%s", l, output)
	}
	for i, st := range l.Steps {
		t.Logf("step %d: %.0f asked, %d held, broker rss %.0f, host mem used %.0f", i+1, st.Rate, st.Held, st.BrokerRSSBytes, st.BrokerHostMemUsedBytes)
		if st.BrokerRSSBytes < 1<<20 || st.BrokerHostMemUsedBytes <= 0 || st.Broker == nil || st.Broker.HostCPUPercent <= 0 {
			t.Errorf("step %d: broker rss %.0f, host memory %.0f, %+v: want the exporters' figures", i+1, st.BrokerRSSBytes,
				st.BrokerHostMemUsedBytes, st.Broker)
		}
	}
	t.Logf("per connection: broker rss %.0f B, host memory %.0f B, the kernel's %.0f B", l.BrokerRSSPerConnBytes,
		l.BrokerHostMemPerConnBytes, l.BrokerKernelPerConnBytes)
	if b := l.BrokerRSSPerConnBytes; b <= 0 || b > 1<<20 || l.BrokerHostMemPerConnBytes < 0 {
		t.Errorf("per connection: broker rss %.0f B, host %.0f B: want the first from process-exporter, the second never below 0",
			b, l.BrokerHostMemPerConnBytes)
	}
}
