package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
)

// TestWindowsFullAtEnd: QoS 1 with a window of 16, Mosquitto stopped (SIGSTOP) for the last
// second of the window and the drain: what was written and never acknowledged is
// in_flight_at_end, not lost; what could not go out is unsent (flow_control); the broker is
// named, and no hold is counted as the client's lateness.
func TestWindowsFullAtEnd(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("stops Mosquitto during a run")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	t.Cleanup(func() { _ = m.Cmd.Process.Signal(syscall.SIGCONT) })
	var stopped time.Time
	res := runJSON(t, m.Addr, `{"name": "p2p-stall", "type": "Point-To-Point",
		"publishers": {"id_prefix": "sp-", "protocol_version": 4, "client_count": 10, "qos": 1, "topics": "st/$clientindex"},
		"subscribers": {"id_prefix": "ss-", "protocol_version": 4, "client_count": 10, "qos": 1, "topics": "st/$clientindex"},
		"parameters": {"connection_rate": 1000, "duration_sec": "3s", "warmup_sec": "500ms", "payload_size": 16,
			"publish_rate": 500, "max_inflight_messages": 16, "drain_sec": "1s", "keep_alive_sec": 60}}`, func() {
		time.Sleep(2500 * time.Millisecond) // the connect phase, then ~2 s of publishing
		stopped = time.Now()
		_ = m.Cmd.Process.Signal(syscall.SIGSTOP)
	})
	_ = m.Cmd.Process.Signal(syscall.SIGCONT)
	msg := res.Messages
	checkAccounts(t, msg)
	t.Logf("stopped at %v; scheduled %d published %d unsent %v received %d lost %d in flight at end %d; held %v",
		stopped.Sub(res.StartedAt).Round(time.Millisecond), msg.Scheduled, msg.Published, msg.Unsent, msg.Received, msg.Lost, msg.InFlightAtEnd, res.BrokerStalled.HeldS)
	if msg.InFlightAtEnd == 0 || msg.InFlightAtEnd > 160 || msg.Lost != 0 {
		t.Errorf("in flight at the end %d (want 1..160: 10 windows of 16), lost %d (want 0)", msg.InFlightAtEnd, msg.Lost)
	}
	if msg.Unsent["flow_control"] == 0 {
		t.Errorf("unsent %v: want flow_control", msg.Unsent)
	}
	if !res.BrokerStalled.Stalled || res.BrokerStalled.HeldS["flow_control"] == 0 {
		t.Errorf("broker_stalled %+v", res.BrokerStalled)
	}
	// The holds are the broker's: no message may be timed from inside one. A hold here lasts
	// from the stop to the end (1.5 s and more), so a message timed from its due time inside
	// it would show as schedule lag of that size; the largest must stay far below.
	if lag := res.Client.ScheduleLagUS.Max; lag > 200_000 {
		tm.Errorf("schedule lag max %d µs: a broker's hold was counted as the client's lateness", lag)
	}
	// Whether the client is saturated depends on the host: on the 2-core VM its threads wait
	// 13-33 % of the time for a CPU beside Mosquitto (run_delay in /proc/PID/task/*/schedstat),
	// which gives schedule lag p99 0.2-7 ms from run to run, and above 10 ms in about one run
	// of ten. That verdict is then true (the client built messages late) and is logged with
	// each interval's lag, which shows it before the stop as much as after.
	if res.Client.Saturated || testing.Verbose() {
		t.Logf("saturated %v %v", res.Client.Saturated, res.Client.SaturationEvidence)
		for _, iv := range res.Intervals {
			t.Logf("  interval at %.3fs: published %d, schedule lag p50 %d p90 %d p99 %d max %d µs", iv.TS, iv.Published, iv.ScheduleLagUS.P50, iv.ScheduleLagUS.P90, iv.ScheduleLagUS.P99, iv.ScheduleLagUS.Max)
		}
	}
}

// TestHoldEndsNotLag: QoS 1 with a window of 16, Mosquitto stopped for 600 ms in the middle
// of the window and let go: the windows fill, the publishers are held (flow_control), and
// what fell due in the hold goes out late once acknowledgements come back. Latency from the
// due time shows the stall; the client's schedule lag does not, since the wait was the
// broker's; every message is accounted for.
func TestHoldEndsNotLag(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("stops Mosquitto during a run")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	t.Cleanup(func() { _ = m.Cmd.Process.Signal(syscall.SIGCONT) })
	res := runJSON(t, m.Addr, `{"name": "p2p-hold", "type": "Point-To-Point",
		"publishers": {"id_prefix": "hp-", "protocol_version": 4, "client_count": 10, "qos": 1, "topics": "ho/$clientindex"},
		"subscribers": {"id_prefix": "hs-", "protocol_version": 4, "client_count": 10, "qos": 1, "topics": "ho/$clientindex"},
		"parameters": {"connection_rate": 1000, "duration_sec": "3s", "warmup_sec": "500ms", "payload_size": 16,
			"publish_rate": 200, "max_inflight_messages": 16, "drain_sec": "2s", "keep_alive_sec": 60}}`, func() {
		time.Sleep(1500 * time.Millisecond) // the connect phase, then ~1 s of publishing
		_ = m.Cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(600 * time.Millisecond)
		_ = m.Cmd.Process.Signal(syscall.SIGCONT)
	})
	msg := res.Messages
	checkAccounts(t, msg)
	lag := res.Client.ScheduleLagUS
	t.Logf("scheduled %d published %d received %d lost %d; held %v; latency p99 %d µs; schedule lag p99 %d max %d µs",
		msg.Scheduled, msg.Published, msg.Received, msg.Lost, res.BrokerStalled.HeldS, res.LatencyUS.P99, lag.P99, lag.Max)
	if held := res.BrokerStalled.HeldS["flow_control"]; held < 2 { // 10 publishers x ~0.5 s
		t.Errorf("held %v: want about 5 s of flow_control holds", res.BrokerStalled.HeldS)
	}
	if res.LatencyUS.Max < 300_000 {
		t.Errorf("latency max %d µs does not show the 600 ms stall", res.LatencyUS.Max)
	}
	if lag.Max > 200_000 {
		tm.Errorf("schedule lag max %d µs: the hold was counted as the client's lateness", lag.Max)
	}
	if msg.Lost != 0 || msg.Received != msg.Expected {
		t.Errorf("lost %d, received %d of %d", msg.Lost, msg.Received, msg.Expected)
	}
}

// saturatedByItself reports whether res calls the client saturated by its own doing: some
// evidence that does not name the host's shortage of CPU (client.run_delay_s, see
// Result.measured). A verdict the host caused is logged: on the shared 2-core VM the
// client's threads can wait a third of the time for a CPU beside the broker.
func saturatedByItself(t *testing.T, res *result.Result) bool {
	t.Helper()
	if !res.Client.Saturated {
		return false
	}
	for _, ev := range res.Client.SaturationEvidence {
		if !strings.Contains(ev, "the host's cores are short") {
			return true
		}
	}
	t.Logf("saturated by the host: %v", res.Client.SaturationEvidence)
	return false
}

// TestHeldPublishersCountsPublishers: Mosquitto killed 1 s into the publishing of 20 P2P
// publishers, no reconnect: every publisher is held (disconnected) to the end, and
// broker_stalled counts 20 publishers under one event loop and under two, not one per loop.
func TestHeldPublishersCountsPublishers(t *testing.T) {
	if testing.Short() {
		t.Skip("kills Mosquitto during a run")
	}
	for _, loops := range []int{1, 2} {
		t.Run(fmt.Sprintf("loops%d", loops), func(t *testing.T) {
			m := testbroker.StartMosquitto(t, testbroker.Options{})
			s := builtin(t, "quick-p2p-100", map[string]string{"publishers.client_count": "20",
				"subscribers.client_count": "20", "parameters.duration_sec": "3s", "parameters.warmup_sec": "500ms",
				"parameters.drain_sec": "300ms"})
			r := testRunner(t, m.Addr, s)
			r.Engine.Loops = loops
			// Killed once an interval has seen messages published: after the connect phase
			// however long it takes (the race detector slows it), not at a fixed time.
			killed := make(chan struct{})
			var once sync.Once
			r.OnInterval = func(iv result.Interval, _ *result.Snapshot) {
				if iv.Published > 0 {
					once.Do(func() { go func() { defer close(killed); m.Kill(t) }() })
				}
			}
			res, err := r.Run(context.Background())
			once.Do(func() { close(killed) }) // never published: the checks below fail
			<-killed                          // before the broker's cleanup waits on it too
			if err != nil {
				t.Fatal(err)
			}
			audited(t, res)
			b := res.BrokerStalled
			if b.Publishers != 20 || b.Holds["disconnected"] != 20 {
				t.Errorf("broker_stalled: %d publishers held, %v holds; want 20 and 20 disconnected (%v)",
					b.Publishers, b.Holds, b.Evidence)
			}
			if len(b.Evidence) == 0 || !strings.Contains(b.Evidence[0], "20 publishers held") {
				t.Errorf("evidence %q: want 20 publishers held", b.Evidence)
			}
		})
	}
}
