package bench

import (
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/mqblast/mqblast/codec"
	"github.com/mqblast/mqblast/internal/testbroker"
)

// brokerCounters reads Mosquitto's $SYS/broker/publish/messages/{received,sent} with a
// small client of its own. The retained values arrive on subscribe, but Mosquitto refreshes
// its $SYS tree only when its loop wakes, so they can be one interval old: it keeps reading
// (pinging to wake the broker) until want(received, sent) holds or 10 s pass, and returns
// the latest values and how many $SYS messages it read (Mosquitto counts those as sent).
func brokerCounters(t *testing.T, addr string, want func(received, sent, read int64) bool) (received, sent, read int64) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck
	// A broker working off a backlog counts late, at a pace the host sets: the wait ends
	// when its counters have not moved for 5 s (or after a minute), not at a fixed time.
	deadline, end := time.Now().Add(5*time.Second), time.Now().Add(time.Minute)
	out := codec.AppendConnect(nil, &codec.Connect{ClientID: []byte("sys-reader"), CleanStart: true, KeepAlive: 30}, codec.V311)
	out = codec.AppendSubscribe(out, &codec.Subscribe{ID: 1, Filters: []codec.Subscription{
		{Filter: []byte("$SYS/broker/publish/messages/received")}, {Filter: []byte("$SYS/broker/publish/messages/sent")},
	}}, codec.V311)
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	received, sent = -1, -1
	var buf []byte
	tmp := make([]byte, 4096)
	for received < 0 || sent < 0 || !want(received, sent, read) {
		if now := time.Now(); now.After(deadline) || now.After(end) {
			return received, sent, read
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(tmp)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			_, _ = c.Write(codec.AppendPingreq(nil))
			continue
		}
		if err != nil {
			t.Fatalf("reading $SYS: %v", err)
		}
		buf = append(buf, tmp[:n]...)
		for {
			h, body, used, err := codec.Split(buf, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if used == 0 {
				break
			}
			if h.Type == codec.TypePublish {
				read++
				var p codec.Publish
				if err := codec.DecodePublish(h, body, codec.V311, &p); err != nil {
					t.Fatal(err)
				}
				v, err := strconv.ParseInt(string(p.Payload), 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", p.Topic, p.Payload)
				}
				switch string(p.Topic) {
				case "$SYS/broker/publish/messages/received":
					if v != received {
						deadline = time.Now().Add(5 * time.Second)
					}
					received = v
				case "$SYS/broker/publish/messages/sent":
					if v != sent {
						deadline = time.Now().Add(5 * time.Second)
					}
					sent = v
				}
			}
			buf = buf[used:]
		}
	}
	return received, sent, read
}

// TestCountsAgreeWithBroker: the run's published and received totals equal Mosquitto's own
// counters (QoS 0 and 1: Mosquitto 2.0's counters leave QoS 2 out).
func TestCountsAgreeWithBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	for _, qos := range []string{"0", "1"} {
		t.Run("qos"+qos, func(t *testing.T) {
			m := testbroker.StartMosquitto(t, testbroker.Options{Extra: []string{"sys_interval 1"}})
			res := runScenario(t, m.Addr, "quick-fanout-1-100", map[string]string{
				"publishers.qos": qos, "subscribers.qos": qos, "parameters.duration_sec": "1500ms",
				"parameters.warmup_sec": "500ms",
			})
			// The broker's "sent" also counts the $SYS messages its reader got.
			agree := func(rx, tx, read int64) bool {
				return rx == res.Messages.Published && tx >= res.Messages.Received && tx <= res.Messages.Received+read
			}
			brx, btx, read := brokerCounters(t, m.Addr, agree)
			t.Logf("run: published %d received %d; broker: received %d sent %d (%d of them $SYS to the reader)",
				res.Messages.Published, res.Messages.Received, brx, btx, read)
			if !agree(brx, btx, read) {
				t.Errorf("the broker's counters disagree with the run's")
			}
		})
	}
}
