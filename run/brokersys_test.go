package run

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// sysRun runs a 2-s fan-out (1 publisher, 100 subscribers) at qos watching the broker's
// $SYS against a fresh Mosquitto of that sys_interval ("": the embedded broker) and returns
// its result file and text summary.
func sysRun(t *testing.T, sysInterval, qos string) (*result.Result, string) {
	t.Helper()
	broker := ""
	if sysInterval != "" {
		broker = testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval " + sysInterval}}).Addr
	}
	sp := quick("quick-fanout-1-100", broker, "parameters.warmup_sec=500ms", "publishers.qos="+qos, "subscribers.qos="+qos)
	sp.Duration, sp.Watch.BrokerSys, sp.Outputs.Out = spec.Duration(2*time.Second), true, filepath.Join(t.TempDir(), "r.json")
	r := doOK(t, sp)
	b, err := os.ReadFile(sp.Outputs.Out)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.CheckDocument(b); err != nil {
		t.Errorf("result document: %v", err)
	}
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.BrokerSys == nil {
		t.Fatalf("no broker_sys in the result\nstderr:\n%s", r.stderr)
	}
	return &res, r.stdout
}

// TestBrokerSysAgreesWithMosquitto: at QoS 0 and 1, a fresh Mosquitto's own PUBLISH counts
// over the run (sys_interval 1) equal mqblast's exactly: received = published, and sent
// less the $SYS messages the reader got = received; the summary says they agree.
func TestBrokerSysAgreesWithMosquitto(t *testing.T) {
	tier.Integration(t)
	for _, qos := range []string{"0", "1"} {
		t.Run("qos"+qos, func(t *testing.T) {
			t.Parallel()
			res, summary := sysRun(t, "1", qos)
			b, msg := res.BrokerSys, res.Messages
			rx, okRx := b.Total(result.SysPublishReceived)
			tx, okTx := b.Total(result.SysPublishSent)
			t.Logf("mqblast: published %d received %d; broker: publish received %d sent %d (%d $SYS to the reader, %d read), "+
				"clients max %d, fresh %v", msg.Published, msg.Received, rx, tx, b.ReadCounted, b.Read, b.ClientsConnectedMax, b.Fresh)
			if msg.Published == 0 || msg.Received != msg.Expected {
				t.Fatalf("the run itself: %+v", msg)
			}
			if !okRx || !okTx || !b.Fresh || !b.Comparable || b.Gaps != 0 {
				t.Fatalf("broker_sys %+v", b)
			}
			if rx != msg.Published || tx-b.ReadCounted != msg.Received {
				t.Errorf("the broker's counts disagree with mqblast's")
			}
			if b.ReadCounted <= 0 || b.ReadCounted >= b.Read {
				t.Errorf("read_counted %d of %d read", b.ReadCounted, b.Read)
			}
			if !strings.HasPrefix(b.Version, "mosquitto version 2.") || b.ClientsConnectedMax != 102 ||
				!slices.Contains(b.Topics, "$SYS/broker/uptime") || b.Load["publish/sent/1min"] <= 0 {
				t.Errorf("version %q, clients max %d (want 101 clients and the reader), topics %d, load %v",
					b.Version, b.ClientsConnectedMax, len(b.Topics), b.Load)
			}
			if !slices.ContainsFunc(res.Intervals, func(iv result.Interval) bool {
				return iv.BrokerSys != nil && iv.BrokerSys.PerS[result.SysPublishSent] > 0
			}) {
				t.Errorf("no interval has the broker's publish_sent rate")
			}
			if !strings.Contains(summary, "broker $SYS") || !strings.Contains(summary, "they agree") {
				t.Errorf("summary:\n%s", summary)
			}
		})
	}
}

// TestBrokerSysQoS2Note: Mosquitto leaves the QoS 2 PUBLISH it receives out of its counter:
// a QoS 2 run says so and makes no comparison.
func TestBrokerSysQoS2Note(t *testing.T) {
	t.Parallel()
	res, summary := sysRun(t, "1", "2")
	b := res.BrokerSys
	if b.Comparable || !slices.Contains(b.Notes, result.SysNoteQoS2) {
		t.Errorf("broker_sys %+v", b)
	}
	if !strings.Contains(summary, "note: the broker's publish totals exclude QoS 2") ||
		strings.Contains(summary, "they agree") || strings.Contains(summary, "they differ") {
		t.Errorf("summary:\n%s", summary)
	}
}

// TestBrokerSysWithoutSys: a Mosquitto whose $SYS is off (sys_interval 0) publishes
// nothing there: the run succeeds and says so.
func TestBrokerSysWithoutSys(t *testing.T) {
	t.Parallel()
	res, summary := sysRun(t, "0", "0")
	b := res.BrokerSys
	if b.Read != 0 || len(b.Totals) != 0 || !slices.Contains(b.Notes, result.SysNoteNone) {
		t.Errorf("broker_sys %+v", b)
	}
	if !strings.Contains(summary, "broker $SYS      the broker published no $SYS topics") {
		t.Errorf("summary:\n%s", summary)
	}
}

// TestBrokerSysEmbedded: the embedded broker (mochi-mqtt) publishes its own $SYS tree,
// without publish/messages counters: its message counts are shown, not compared.
func TestBrokerSysEmbedded(t *testing.T) {
	t.Parallel()
	tier.Integration(t)
	res, summary := sysRun(t, "", "1")
	b := res.BrokerSys
	rx, ok := b.Total(result.SysMessagesReceived)
	t.Logf("embedded: version %q, read %d, totals %v, notes %q", b.Version, b.Read, b.Totals, b.Notes)
	if b.Read == 0 || b.Version == "" || !ok || rx < res.Messages.Published || b.Comparable {
		t.Errorf("broker_sys %+v", b)
	}
	if !strings.Contains(summary, "as the broker counts them") || !strings.Contains(summary, "no $SYS/broker/publish/messages counters") {
		t.Errorf("summary:\n%s", summary)
	}
}

// TestBrokerSysRefused: watching $SYS over WebSocket, or of a broker that is not there,
// is a usage error before the run.
func TestBrokerSysRefused(t *testing.T) {
	t.Parallel()
	tier.Integration(t)
	sysOf := func(broker string) ran {
		sp := quick("quick-conn-100", broker)
		sp.Watch.BrokerSys, sp.NoCheck = true, true
		return doSpec(t, sp)
	}
	r := sysOf("ws://127.0.0.1:1/mqtt")
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "watch.broker_sys") || !strings.Contains(r.err.Error(), "WebSocket") {
		t.Errorf("ws: %v\n%s", r.err, r.stderr)
	}
	r = sysOf("127.0.0.1:" + strconv.Itoa(testbroker.FreePort(t, "127.0.0.1")))
	if !errors.Is(r.err, fail.ErrUsage) || !strings.Contains(r.err.Error(), "watch.broker_sys: cannot reach") || strings.Contains(r.stderr, "connecting") {
		t.Errorf("nothing listening: %v\n%s", r.err, r.stderr)
	}
}

// TestBrokerSysAfterEarlierRun: against a Mosquitto that served an earlier run, the second
// run's broker_sys totals are the broker's counts over this run alone (the earlier run's
// are in its counters before the run), and equal mqblast's.
func TestBrokerSysAfterEarlierRun(t *testing.T) {
	tier.Integration(t)
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval 1"}})
	first := quick("quick-fanout-1-100", m.Addr, "parameters.warmup_sec=500ms")
	first.Duration = spec.Duration(2 * time.Second)
	doOK(t, first)
	sp := quick("quick-fanout-1-100", m.Addr, "parameters.warmup_sec=500ms")
	sp.Duration, sp.Watch.BrokerSys = spec.Duration(2*time.Second), true
	r := doOK(t, sp)
	b, msg := r.res.BrokerSys, r.res.Messages
	rx, _ := b.Total(result.SysPublishReceived)
	tx, _ := b.Total(result.SysPublishSent)
	t.Logf("mqblast: published %d received %d; broker: publish received %d sent %d (%d $SYS to the reader), comparable %v, notes %q",
		msg.Published, msg.Received, rx, tx, b.ReadCounted, b.Comparable, b.Notes)
	if !b.Comparable || rx != msg.Published || tx-b.ReadCounted != msg.Received {
		t.Errorf("the broker's counts over the run disagree with mqblast's\nsummary:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "they agree") {
		t.Errorf("summary:\n%s", r.stdout)
	}
}
