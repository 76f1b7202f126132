//go:build !race

package bench

import (
	"syscall"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
)

// The overload tests drive Mosquitto past its limit: under the race detector the client
// itself would be the limit, and its figures would prove nothing about the broker.

// TestPublishFloodCountsWhatWasWritten: 10 QoS 0 publishers asked for 1,000,000 msg/s
// (which Mosquitto, discarding them, keeps up with here) while Mosquitto is stopped
// (SIGSTOP) for 1.5 s of the 3 s: far more than it takes. published is what the sockets
// took, so it equals the broker's own received count; what the broker did not read is
// unsent (back_pressure, not_read), the client's memory stays bounded, and the broker, not
// the client, is named: never saturated beside it, the run limited by the broker (or by
// the host, when the client waited for the cores it shares with the broker).
func TestPublishFloodCountsWhatWasWritten(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("floods Mosquitto for 3 s")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval 1"}})
	t.Cleanup(func() { _ = m.Cmd.Process.Signal(syscall.SIGCONT) })
	res := runJSON(t, m.Addr, `{"name": "flood", "type": "Publish",
		"publishers": {"id_prefix": "flood-", "protocol_version": 4, "client_count": 10, "qos": 0, "topics": "flood/$clientindex"},
		"parameters": {"connection_rate": 1000, "duration_sec": "3s", "warmup_sec": "500ms", "payload_size": 16,
			"publish_rate": 100000}}`, func() {
		time.Sleep(1500 * time.Millisecond) // the connect phase and ~1 s of publishing
		_ = m.Cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond)
		_ = m.Cmd.Process.Signal(syscall.SIGCONT)
	})
	msg := res.Messages
	checkAccounts(t, msg)
	rx, _, _ := brokerCounters(t, m.Addr, func(rx, _, _ int64) bool { return rx >= msg.Published })
	t.Logf("scheduled %d, published %d, unsent %v; broker received %d; max rss %.0f MiB; held %v; client cpu %.2fs",
		msg.Scheduled, msg.Published, msg.Unsent, rx, float64(res.Client.MaxRSSBytes)/(1<<20), res.BrokerStalled.HeldS, res.Client.CPUS)
	if d := rx - msg.Published; d < -msg.Published/1000 || d > msg.Published/1000 {
		tm.Errorf("published %d, the broker received %d: more than 0.1%% apart", msg.Published, rx)
	}
	if msg.Unsent["back_pressure"] == 0 || msg.Published >= msg.Scheduled {
		t.Errorf("unsent %v: the broker took everything, the test did not overload it", msg.Unsent)
	}
	if res.Client.MaxRSSBytes > 200<<20 {
		t.Errorf("max rss %d MiB: the publishers' queues are not bounded", res.Client.MaxRSSBytes>>20)
	}
	if saturatedByItself(t, res) {
		tm.Errorf("saturated %v %v", res.Client.Saturated, res.Client.SaturationEvidence)
	}
	if !res.BrokerStalled.Stalled || res.BrokerStalled.HeldS["back_pressure"] == 0 {
		t.Errorf("saturated %v %v; broker_stalled %+v", res.Client.Saturated, res.Client.SaturationEvidence, res.BrokerStalled)
	}
	// One judgement: a broker that did not read is never beside a saturated client.
	if res.Client.Saturated || res.LimitedBy != "broker" && res.LimitedBy != "host" {
		t.Errorf("saturated %v %v beside broker_stalled; limited by %q (%s)", res.Client.Saturated, res.Client.SaturationEvidence,
			res.LimitedBy, res.LimitedByReason)
	}
}

// TestReceiveRateIsArrivals: QoS 0 point-to-point asked for 400,000 msg/s, past what
// Mosquitto relays here: throughput.receive_per_s is the rate at which copies arrived in
// the window (the intervals' own figure), not the rate they were due at. Mosquitto runs
// niced: on 2 shared cores, the CPU it cannot have must be its own, not the client's.
func TestReceiveRateIsArrivals(t *testing.T) {
	tm := tier.Timing(t)
	if testing.Short() {
		t.Skip("overloads Mosquitto for 4 s")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{Nice: 19})
	res := runJSON(t, m.Addr, `{"name": "p2p-overload", "type": "Point-To-Point",
		"publishers": {"id_prefix": "op-", "protocol_version": 4, "client_count": 10, "qos": 0, "topics": "ov/$clientindex"},
		"subscribers": {"id_prefix": "os-", "protocol_version": 4, "client_count": 10, "qos": 0, "topics": "ov/$clientindex"},
		"parameters": {"connection_rate": 1000, "duration_sec": "4s", "warmup_sec": "1s", "payload_size": 16,
			"publish_rate": 40000, "drain_sec": "1s"}}`, nil)
	msg := res.Messages
	checkAccounts(t, msg)
	// The copies that arrived in the window lie between what the intervals wholly inside it
	// counted and what those overlapping it counted (each interval counts its arrivals). A
	// rate by due time would be near 400,000/s and far above the second.
	from := res.MeasureFrom.Sub(res.StartedAt).Seconds()
	to := res.MeasureTo.Sub(res.StartedAt).Seconds()
	var inside, overlapping int64
	n := 0
	for _, iv := range res.Intervals {
		lo, hi := iv.TS-1, iv.TS
		if hi > from && lo < to {
			overlapping += iv.Received
		}
		if lo >= from-0.05 && hi <= to+0.05 {
			inside += iv.Received
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%d intervals inside the window [%.1f, %.1f]", n, from, to)
	}
	got := res.Throughput.ReceivePerS
	arrived := got * res.Throughput.WindowS
	t.Logf("receive_per_s %.0f (%.0f in the window), intervals: %d inside, %d overlapping; published %.0f/s, asked 400000",
		got, arrived, inside, overlapping, res.Throughput.PublishPerS)
	if arrived < 0.99*float64(inside) || arrived > 1.01*float64(overlapping) {
		t.Errorf("%.0f copies arrived in the window by receive_per_s, but the intervals inside it counted %d and those overlapping it %d",
			arrived, inside, overlapping)
	}
	if got > 0.95*400000 {
		t.Errorf("receive_per_s %.0f: Mosquitto is not that fast here; the figure counts due times", got)
	}
	if saturatedByItself(t, res) {
		tm.Errorf("saturated: %v (broker_stalled %+v)", res.Client.SaturationEvidence, res.BrokerStalled)
	}
}
