package exporter

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/netnstest"
	"github.com/mqblast/mqblast/internal/testbroker"
)

const (
	nodeExporter    = "/usr/bin/prometheus-node-exporter"
	processExporter = "/usr/bin/prometheus-process-exporter"
)

// needBin skips (in CI fails) a test whose exporter is not installed.
func needBin(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed; .ci/run installs it (apt-get install -y prometheus-node-exporter prometheus-process-exporter)", path)
		}
		t.Skipf("%s is not installed (apt-get install -y prometheus-node-exporter prometheus-process-exporter)", path)
	}
}

// startIn starts argv inside the network namespace ns, killed when the test ends, and
// waits until url answers 200.
func startIn(t testing.TB, ns, url string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns}, argv...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s's output:\n%s", argv[0], out.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer at %s after 10s (%v); its output:\n%s", argv[0], url, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nodeExporterHost starts the real node_exporter in a namespace of its own, reached over
// a veth as a broker's host is, and returns the namespace, its address and the URL.
func nodeExporterHost(t testing.TB) (ns string, addr netip.Addr, url string) {
	t.Helper()
	needBin(t, nodeExporter)
	ns, addr = netnstest.Host(t, "nodeexp")
	// The namespace is the exporter's own: its usual port is free there.
	listen := netip.AddrPortFrom(addr, 9100).String()
	url = "http://" + listen + "/metrics"
	startIn(t, ns, url, nodeExporter, "--web.listen-address="+listen)
	return ns, addr, url
}

// procStat is /proc/stat's aggregate cpu line: busy (all but idle and iowait) and total
// jiffies, and the number of cpuN lines.
func procStat(t testing.TB) (busy, total float64, cpus int) {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 8 && f[0] == "cpu":
			for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
				x, _ := strconv.ParseFloat(v, 64)
				total += x
				if i != 3 && i != 4 {
					busy += x
				}
			}
		case len(f) > 0 && strings.HasPrefix(f[0], "cpu"):
			cpus++
		}
	}
	return busy, total, cpus
}

func memTotal(t testing.TB) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MemTotal:\s+(\d+) kB$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no MemTotal in /proc/meminfo")
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	return kb * 1024
}

func scrapeOK(t testing.TB, s *Scraper) Reading {
	t.Helper()
	r := s.Scrape(context.Background())
	for _, tg := range r.Targets {
		if tg.Err != "" {
			t.Fatalf("scrape of %s: %s", tg.URL, tg.Err)
		}
	}
	return r
}

// TestNodeExporterReal scrapes the real node_exporter over a veth: it is recognised, its
// CPUs and memory are this machine's, one CPU burnt in its namespace shows in the busy
// percent as /proc/stat says over the same span, and bytes sent across the veth show in
// its network counters.
func TestNodeExporterReal(t *testing.T) {
	ns, addr, url := nodeExporterHost(t)
	s, err := New([]string{url}, Options{Series: []string{`node_cpu_seconds_total{mode="idle"}`, "node_load1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r := scrapeOK(t, s)
	tg := r.Targets[0]
	if len(tg.Kinds) != 1 || tg.Kinds[0] != "node_exporter" || tg.Families < 100 {
		t.Errorf("target %+v: want node_exporter with its families", tg)
	}
	if r.Host == nil {
		t.Fatal("no host counters")
	}
	if r.Process != nil {
		t.Errorf("node_exporter's own process read as the broker's: %+v", r.Process)
	}
	if _, _, cpus := procStat(t); r.Host.CPUs != cpus {
		t.Errorf("CPUs %d, /proc/stat has %d", r.Host.CPUs, cpus)
	}
	if mt := memTotal(t); r.Host.MemTotalBytes != mt {
		t.Errorf("MemTotal %.0f, /proc/meminfo says %.0f", r.Host.MemTotalBytes, mt)
	}
	if r.Series[`node_cpu_seconds_total{mode="idle"}`].Value <= 0 || !r.Series[`node_cpu_seconds_total{mode="idle"}`].Counter ||
		r.Series["node_load1"].Counter {
		t.Errorf("series %+v", r.Series)
	}

	// One CPU burnt inside the namespace; node_exporter reads /proc/stat, which is the
	// whole host's.
	burn := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "while :; do :; done")
	burn.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = burn.Process.Kill(); _ = burn.Wait() })
	time.Sleep(100 * time.Millisecond)
	r1 := scrapeOK(t, s)
	b1, t1, _ := procStat(t)
	time.Sleep(2 * time.Second)
	r2 := scrapeOK(t, s)
	b2, t2, _ := procStat(t)
	_ = burn.Process.Kill()
	rates := Between(r1, r2)
	want := 100 * (b2 - b1) / (t2 - t1)
	t.Logf("host busy %.1f%% over %.2fs; /proc/stat over the same span %.1f%%", rates.Host.CPUPercent, rates.Seconds, want)
	if rates.Host.CPUPercent < 35 {
		t.Errorf("host busy %.1f%% while one of %d CPUs burnt: want > 35%%", rates.Host.CPUPercent, r2.Host.CPUs)
	}
	if d := rates.Host.CPUPercent - want; d > 5 || d < -5 {
		t.Errorf("host busy %.1f%%, /proc/stat says %.1f%%", rates.Host.CPUPercent, want)
	}

	// 8 MiB sent across the veth to a listener in the namespace.
	const n = 8 << 20
	l := netnstest.Listen(t, ns, "tcp", netip.AddrPortFrom(addr, 7000).String())
	got := make(chan int64, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		m, _ := io.Copy(io.Discard, c)
		got <- m
	}()
	r3 := scrapeOK(t, s)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	if m := <-got; m != n {
		t.Fatalf("the listener read %d bytes, want %d", m, n)
	}
	r4 := scrapeOK(t, s)
	rx := r4.Host.RxBytes - r3.Host.RxBytes
	rates = Between(r3, r4)
	t.Logf("rx %.0f bytes, %.0f packets across the veth; %.0f B/s", rx, r4.Host.RxPackets-r3.Host.RxPackets, rates.Host.RxBytesPerS)
	if rx < n || rx > n*1.2 || r4.Host.RxPackets-r3.Host.RxPackets < 16 || rates.Host.RxBytesPerS < n/rates.Seconds {
		t.Errorf("rx %.0f bytes (%.0f B/s) for %d sent across the veth", rx, rates.Host.RxBytesPerS, n)
	}
	if len(r4.Host.Devices) != 1 {
		t.Errorf("devices %v: want the namespace's veth alone (lo left out)", r4.Host.Devices)
	}
}

// procFigures are a process's RSS (VmRSS), open descriptors and CPU seconds from /proc.
func procFigures(t testing.TB, pid int) (rss, fds, cpu float64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS for %d", pid)
	}
	kb, _ := strconv.ParseFloat(string(m[1]), 64)
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)                // utime, field 14
	sy, _ := strconv.ParseFloat(f[12], 64)                // stime, field 15
	return kb * 1024, float64(len(ents)), (ut + sy) / 100 // USER_HZ
}

// TestProcessExporterReal scrapes the real process-exporter, configured with two groups:
// a Mosquitto holding 20 connections, and a shell burning a CPU. The default choice is the
// Mosquitto group; its RSS and descriptors are what /proc says; the burner's CPU percent
// over a span is what its /proc/PID/stat says over the same span.
func TestProcessExporterReal(t *testing.T) {
	needBin(t, processExporter)
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	ns, addr := netnstest.Host(t, "procexp")
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", m.Cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(cmdline[strings.LastIndexByte(string(cmdline[:len(cmdline)-1]), 0)+1 : len(cmdline)-1])
	mark := fmt.Sprintf("burn-%d-%d", os.Getpid(), time.Now().UnixNano())
	burn := exec.Command("sh", "-c", "while :; do :; done", mark)
	burn.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = burn.Process.Kill(); _ = burn.Wait() })
	cfg := filepath.Join(t.TempDir(), "process-exporter.yml")
	yml := fmt.Sprintf("process_names:\n  - name: broker-mosquitto\n    cmdline: [%q]\n  - name: %s\n    cmdline: [%q]\n",
		regexp.QuoteMeta(conf), mark, regexp.QuoteMeta(mark))
	if err := os.WriteFile(cfg, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	listen := netip.AddrPortFrom(addr, 9256).String()
	url := "http://" + listen + "/metrics"
	startIn(t, ns, url, processExporter, "-config.path", cfg, "-web.listen-address", listen, "-threads=false")

	for range 20 {
		c, err := net.Dial("tcp", m.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	time.Sleep(200 * time.Millisecond) // Mosquitto accepts them

	s, err := New([]string{url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	r := scrapeOK(t, s)
	rss, fds, _ := procFigures(t, m.Cmd.Process.Pid)
	tg := r.Targets[0]
	if len(tg.Kinds) != 1 || tg.Kinds[0] != "process-exporter" || len(tg.Groups) != 2 || tg.Groups[0] != "broker-mosquitto" {
		t.Errorf("target %+v", tg)
	}
	p := r.Process
	if p == nil || p.Source != "process-exporter broker-mosquitto" {
		t.Fatalf("process %+v: want the broker-mosquitto group", p)
	}
	t.Logf("mosquitto: RSS %.0f (VmRSS %.0f), FDs %.0f (/proc %.0f)", p.RSSBytes, rss, p.FDs, fds)
	if p.RSSBytes < rss*0.9 || p.RSSBytes > rss*1.1 {
		t.Errorf("RSS %.0f, VmRSS %.0f", p.RSSBytes, rss)
	}
	if p.FDs < fds-2 || p.FDs > fds+2 || fds < 20 {
		t.Errorf("FDs %.0f, /proc/%d/fd holds %.0f", p.FDs, m.Cmd.Process.Pid, fds)
	}

	sb, err := New([]string{url}, Options{Process: mark})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	r1 := scrapeOK(t, sb)
	_, _, c1 := procFigures(t, burn.Process.Pid)
	time.Sleep(2 * time.Second)
	r2 := scrapeOK(t, sb)
	_, _, c2 := procFigures(t, burn.Process.Pid)
	rates := Between(r1, r2)
	if rates.Process == nil {
		t.Fatalf("no process rates: %+v %+v", r1.Process, r2.Process)
	}
	want := 100 * (c2 - c1) / rates.Seconds
	t.Logf("burner: %.1f%% of a core by process-exporter, %.1f%% by /proc/PID/stat", rates.Process.CPUPercent, want)
	if d := rates.Process.CPUPercent - want; d > 5 || d < -5 || want < 20 {
		t.Errorf("burner CPU %.1f%%, /proc/%d/stat says %.1f%%", rates.Process.CPUPercent, burn.Process.Pid, want)
	}
}
