package bench

import (
	"testing"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/watch"
)

// TestWatchMosquitto: a P2P run against Mosquitto with its process watched: the broker's
// CPU shows while messages flow and its RSS is sampled every interval; the result has its
// CPU per message, and the client's kernel counters (segments sent on loopback).
func TestWatchMosquitto(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	s := builtin(t, "quick-p2p-100", map[string]string{"parameters.duration_sec": "3s", "parameters.warmup_sec": "1s",
		"parameters.publish_rate": "50"})
	w := watch.New(m.Cmd.Process.Pid, "")
	res := runWatched(t, m.Addr, s, w)
	b := res.BrokerProcess
	if b == nil || b.PID != m.Cmd.Process.Pid || b.CPUS <= 0 || b.RSSBytes <= 0 || b.RSSPeakBytes < b.RSSBytes || b.FDs < 200 {
		t.Fatalf("broker_process %+v", b)
	}
	if b.CPUPerMessageUS <= 0 || b.CPUPerMessageUS > 1000 {
		t.Errorf("broker cpu per message %.2f µs", b.CPUPerMessageUS)
	}
	busy := 0
	for _, iv := range res.Intervals {
		if iv.BrokerRSSBytes <= 0 {
			t.Errorf("interval %.1fs: no broker RSS", iv.TS)
		}
		if iv.Published > 0 && iv.BrokerCPUPercent > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("%d intervals with messages show broker CPU", busy)
	}
	if res.Kernel == nil || res.Kernel.Client["OutSegs"] == 0 || !res.Kernel.SameNamespace {
		t.Errorf("kernel %+v", res.Kernel)
	}
	t.Logf("broker: cpu %.2fs (avg %.1f%%, peak %.1f%%), %.2f µs per message, rss %d KiB, %d fds",
		b.CPUS, b.CPUPercentAvg, b.CPUPercentPeak, b.CPUPerMessageUS, b.RSSBytes>>10, b.FDs)
}

// TestWatchMosquittoConnections: 5,000 connections held against Mosquitto: its RSS per
// connection is what Mosquitto 2.0 takes per client (measured 0.7-0.9 KiB here), and its
// descriptors count them.
func TestWatchMosquittoConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 5,000 connections to Mosquitto")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	s := builtin(t, "singlenode-conn-tcp-10K-100", map[string]string{"publishers.client_count": "5000",
		"parameters.connection_rate": "5000", "parameters.duration_sec": "3s"})
	res := runWatched(t, m.Addr, s, watch.New(m.Cmd.Process.Pid, ""))
	b := res.BrokerProcess
	if res.Connections.Established != 5000 || b == nil {
		t.Fatalf("established %d, broker_process %+v", res.Connections.Established, b)
	}
	t.Logf("broker rss per connection %.0f B, rss %d KiB, fds %d", b.RSSPerConnectionBytes, b.RSSBytes>>10, b.FDs)
	if b.RSSPerConnectionBytes < 300 || b.RSSPerConnectionBytes > 4096 {
		t.Errorf("broker rss per connection %.0f B: not plausible for Mosquitto", b.RSSPerConnectionBytes)
	}
	if b.FDs < 5000 {
		t.Errorf("broker fds %d with 5,000 connections held", b.FDs)
	}
}
