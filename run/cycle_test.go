package run

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// cycleReachRun: 4 devices each publish 60 messages at QoS 1, cycling over three topics
// that reach different receivers: temp (2 clients of "temp", and "all"), alarm (the one
// client of "alarm", "all", and the 2 clients of "mix" by their own filter), log ("all",
// and the share group of mix's clients). Each message expects its topic's copies: 3, 4 or
// 2; a client of mix takes a device's messages on two streams.
const cycleReachRun = `{
  "name": "cycle-reach",
  "groups": [
    {"name": "dev", "behaviours": "publish", "client_count": 4, "qos": 1,
     "topics": ["plant/$clientindex/temp", "plant/$clientindex/alarm", "plant/$clientindex/log"]},
    {"name": "temp", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": "plant/+/temp"},
    {"name": "alarm", "behaviours": "subscribe", "client_count": 1, "qos": 1, "id_prefix": "cyc-alarm-", "filters": "plant/+/alarm"},
    {"name": "all", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "plant/#"},
    {"name": "mix", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": ["$share/g/plant/+/log", "plant/+/alarm"]}
  ],
  "parameters": {"publish_rate": 20, "message_count": 60, "duration_sec": 4, "warmup_sec": 0.5, "drain_sec": 2}
}`

// outsideSub is mosquitto_sub on filter of addr, started by the test: the topic of each
// message it received, by the last level of the topic.
type outsideSub struct {
	mu     sync.Mutex
	seen   map[string]int64
	total  int64
	cmd    *exec.Cmd
	closed chan struct{}
}

// startOutsideSub starts mosquitto_sub on filter at QoS 1 and returns once it is
// subscribed.
func startOutsideSub(t *testing.T, addr, filter string) *outsideSub {
	t.Helper()
	if _, err := exec.LookPath("mosquitto_sub"); err != nil {
		t.Skip("no mosquitto_sub (mosquitto-clients)")
	}
	host, port, _ := net.SplitHostPort(addr)
	o := &outsideSub{seen: map[string]int64{}, closed: make(chan struct{})}
	// Line-buffered: mosquitto_sub's debug lines (the SUBACK) wait in a pipe's buffer.
	o.cmd = exec.Command("stdbuf", "-oL", "mosquitto_sub", "-h", host, "-p", port, "-i", "cycle-outside", "-q", "1", "-d", "-F", "%t", "-t", filter)
	var errOut syncBuffer
	o.cmd.Stderr = &errOut
	out, err := o.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := o.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = o.cmd.Process.Kill()
		_ = o.cmd.Wait()
	})
	subscribed := make(chan struct{})
	go func() {
		defer close(o.closed)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "SUBACK") {
				once.Do(func() { close(subscribed) })
			}
			if strings.HasPrefix(line, "Client ") || !strings.Contains(line, "/") { // -d's debug lines
				continue
			}
			o.mu.Lock()
			o.seen[line[strings.LastIndexByte(line, '/')+1:]]++
			o.total++
			o.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-subscribed:
	case <-time.After(30 * time.Second):
		t.Fatalf("mosquitto_sub did not subscribe in 30 s: %s", errOut.String())
	}
	return o
}

// counts returns what o received by last topic level, and in all.
func (o *outsideSub) counts() (map[string]int64, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]int64, len(o.seen))
	for k, v := range o.seen {
		out[k] = v
	}
	return out, o.total
}

// waitTotal waits until o received n messages (or d passed) and returns its counts.
func (o *outsideSub) waitTotal(n int64, d time.Duration) (map[string]int64, int64) {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		by, total := o.counts()
		if total >= n || time.Now().After(deadline) {
			return by, total
		}
	}
}

// TestTopicCycleReach: devices cycle over three topics that reach different subscribers
// (2 clients on temp alone, 1 on alarm alone, one on all, and 2 on alarm by their own
// filter and on log through a share group), at QoS 1 against Mosquitto, in one process
// and in two: every figure equals what the broker delivered, counted topic by topic by a
// mosquitto_sub outside the run: each message's expected copies are its topic's (3 x temp
// + 4 x alarm + 2 x log), every one received, each group's delivered its topics' copies,
// none unexpected, out of order or lost. With
// the alarm subscriber taken over by another client of its id 60 messages in (its session
// ends, no reconnect), the copies lost are exactly the alarm copies it did not get: the
// temp and all groups still got every copy of theirs, and the document adds up. With the
// broker killed 60 messages in and restarted a second later (the clients reconnecting),
// the document still adds up, each message's copies its topic's.
func TestTopicCycleReach(t *testing.T) {
	t.Parallel()
	for _, procs := range []int{1, 2} {
		for _, fault := range []string{"", "takeover", "kill"} {
			name := fmt.Sprintf("procs%d", procs)
			if fault != "" {
				name += "/" + fault
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				m := testbroker.StartMosquitto(t, testbroker.Options{})
				outside := startOutsideSub(t, m.Addr, "plant/#")
				sp := quickFile("cycle-reach", m.Addr, cycleReachRun, nil)
				sp.NoCheck, sp.Procs, sp.Outputs.Format = true, spec.Procs(procs), "json"
				if fault == "kill" {
					sp.Scenario.Set = []string{"parameters.reconnect=backoff"}
				}
				g := goSpec(context.Background(), t, sp)
				if fault != "" {
					if _, n := outside.waitTotal(60, 30*time.Second); n < 60 {
						t.Fatalf("the outside subscriber saw %d messages in 30 s", n)
					}
				}
				switch fault {
				case "takeover":
					host, port, _ := net.SplitHostPort(m.Addr)
					if out, err := exec.Command("mosquitto_pub", "-h", host, "-p", port, "-i", "cyc-alarm-0",
						"-t", "takeover/x", "-m", "x").CombinedOutput(); err != nil {
						t.Fatalf("mosquitto_pub: %v\n%s", err, out)
					}
				case "kill":
					m.Kill(t)
					time.Sleep(time.Second)
					m.Restart(t)
				}
				r := g.wait()
				if r.err != nil || r.res == nil {
					t.Fatalf("%v\n%s", r.err, r.said())
				}
				res := checkDoc(t, r)
				msg := res.Messages
				if fault == "kill" {
					checkCycleKilled(t, res)
					return
				}
				by, total := outside.waitTotal(240, 5*time.Second)
				if msg.Published != 240 || total != 240 || by["temp"] != 80 || by["alarm"] != 80 || by["log"] != 80 {
					t.Fatalf("published %d; outside saw %d %v: want 240, 80 on each topic", msg.Published, total, by)
				}
				delivered := map[string]int64{}
				for _, gr := range res.Groups {
					delivered[gr.Name] = gr.Delivered
				}
				// What the broker delivered to the run's groups, by the outside count of
				// each topic.
				want := 3*by["temp"] + 4*by["alarm"] + 2*by["log"]
				if msg.Expected != want {
					t.Errorf("expected %d, want 3 x %d + 4 x %d + 2 x %d = %d", msg.Expected, by["temp"], by["alarm"], by["log"], want)
				}
				if delivered["temp"] != 2*by["temp"] || delivered["all"] != total || delivered["mix"] != 2*by["alarm"]+by["log"] {
					t.Errorf("delivered %v: want temp %d, all %d, mix %d", delivered, 2*by["temp"], total, 2*by["alarm"]+by["log"])
				}
				if msg.UnexpectedTotal != 0 || msg.Duplicated != 0 || msg.OutOfOrder != 0 || msg.Unmeasured != 0 {
					t.Errorf("unexpected %v, duplicated %d, out of order %d, unmeasured %d", msg.Unexpected, msg.Duplicated, msg.OutOfOrder, msg.Unmeasured)
				}
				if msg.Acked != msg.Published || msg.OwedAtEnd != 0 || msg.InFlightAtEnd+msg.InFlightLost != 0 {
					t.Errorf("acked %d of %d, owed %d, in flight %d + %d", msg.Acked, msg.Published, msg.OwedAtEnd, msg.InFlightAtEnd, msg.InFlightLost)
				}
				if fault == "" {
					if msg.Received != msg.Expected || msg.Lost != 0 || delivered["alarm"] != by["alarm"] {
						t.Errorf("received %d of %d, lost %d, alarm delivered %d of %d", msg.Received, msg.Expected, msg.Lost, delivered["alarm"], by["alarm"])
					}
				} else {
					// The alarm subscriber's missing copies, and nothing else, are lost.
					if msg.Lost == 0 || delivered["alarm"]+msg.Lost != by["alarm"] || msg.Received+msg.Lost != msg.Expected ||
						res.Connections.Dropped != 1 {
						t.Errorf("lost %d, alarm delivered %d (+ lost = %d, want %d), received %d of %d, dropped %d",
							msg.Lost, delivered["alarm"], delivered["alarm"]+msg.Lost, by["alarm"], msg.Received, msg.Expected, res.Connections.Dropped)
					}
				}
				var dev *result.Group
				for i := range res.Groups {
					if res.Groups[i].Name == "dev" {
						dev = &res.Groups[i]
					}
				}
				if dev == nil || dev.Messages.Expected != msg.Expected || dev.Messages.Lost != msg.Lost {
					t.Errorf("group dev: %+v", dev)
				}
				t.Logf("expected %d received %d lost %d; delivered %v; outside %v", msg.Expected, msg.Received, msg.Lost, delivered, by)
			})
		}
	}
}

// checkCycleKilled checks a cycle-reach run whose broker was killed and restarted: the
// connections dropped and came back, each message written expected its topic's copies
// (3, 4, 2 in turn: about three times the messages written; every group's delivered
// within its topics' share), and the dev group's figures are the run's.
func checkCycleKilled(t *testing.T, res *result.Result) {
	t.Helper()
	msg, c := res.Messages, res.Connections
	if c.Dropped == 0 || c.Reconnected == 0 {
		t.Errorf("dropped %d, reconnected %d: the kill did not reach the clients", c.Dropped, c.Reconnected)
	}
	// n messages in turn from the first topic expect 3n or 3n + 1 copies; one encoded but
	// not written (its connection gone) shifts a publisher's turn by one, a copy either way.
	if d := msg.Expected - 3*msg.Published; msg.Published == 0 || d < -msg.Published/10 || d > 4+msg.Published/10 ||
		msg.Expected != msg.Received+msg.Lost+msg.OwedAtEnd+msg.InFlightAtEnd+msg.InFlightLost {
		t.Errorf("published %d, expected %d = received %d + lost %d + owed %d + in flight %d + %d?",
			msg.Published, msg.Expected, msg.Received, msg.Lost, msg.OwedAtEnd, msg.InFlightAtEnd, msg.InFlightLost)
	}
	delivered := map[string]int64{}
	for _, gr := range res.Groups {
		delivered[gr.Name] = gr.Delivered
		if gr.Name == "dev" && (gr.Messages.Expected != msg.Expected || gr.Messages.Lost != msg.Lost ||
			gr.Messages.InFlightLost != msg.InFlightLost || gr.Messages.Received != msg.Received) {
			t.Errorf("group dev: %+v, the run's: %+v", gr.Messages, msg)
		}
	}
	// Each publisher's messages go to temp, alarm, log in turn: a third of them, within
	// one a publisher, on each topic.
	third := msg.Published/3 + 4
	if delivered["all"] > msg.Published || delivered["temp"] > 2*third || delivered["alarm"] > third || delivered["mix"] > 3*third ||
		delivered["temp"]+delivered["alarm"]+delivered["all"]+delivered["mix"] != msg.Received {
		t.Errorf("delivered %v of %d published, received %d", delivered, msg.Published, msg.Received)
	}
	if msg.UnexpectedTotal != 0 || msg.OutOfOrder != 0 {
		t.Errorf("unexpected %v, out of order %d", msg.Unexpected, msg.OutOfOrder)
	}
	t.Logf("published %d expected %d received %d lost %d owed %d in flight %d/%d (dropped %d); delivered %v",
		msg.Published, msg.Expected, msg.Received, msg.Lost, msg.OwedAtEnd, msg.InFlightAtEnd, msg.InFlightLost, msg.InFlightDropped, delivered)
}
