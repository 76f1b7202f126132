package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mqblast/mqblast/broker"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/internal/tier"
	"github.com/mqblast/mqblast/result"
)

// The interop tier: every built-in scenario type at QoS 0, 1 and 2, at MQTT 3.1.1 and 5.0
// where the broker speaks it, against each of the five brokers (Mosquitto, the embedded
// broker, RabbitMQ, aedes, gmqtt), in short runs of a few clients. One broker process
// serves all its cells, each with client ids and topics of its own, several cells at a
// time. Each cell's document must add up (result.CheckDocument), and where the broker
// differs by design the difference must be in broker_behaviour and nowhere in lost,
// duplicated or the client's saturation. $MQBLAST_INTEROP_TABLE names a file to write
// the outcome of every cell to (the table of docs/brokers.md); $MQBLAST_INTEROP_ONLY, a
// regular expression, runs only the cells whose BROKER/CLASS/vV/qosQ it matches.

// interopBroker is one broker of the tier and what it does by design.
type interopBroker struct {
	name  string
	start func(t *testing.T) string // starts it for the test; its MQTT address
	v5    bool                      // it speaks MQTT 5.0
	sub2  int                       // the QoS it grants a subscription that asks QoS 2
	max5  int                       // the Maximum QoS its 5.0 CONNACK announces
	// puback2: it answers a QoS 2 PUBLISH with a PUBACK (it takes QoS 2 as QoS 1).
	puback2 bool
	share   bool // it takes $share/ filters
	// pidShared: it shares one packet identifier space between both directions: it
	// refuses a resumed session's SUBSCRIBE whose identifier is one of its own PUBLISHes'
	// in flight (SUBACK 0x91, which at 3.1.1 is not a valid code), and a round trip's
	// PUBREL of such an identifier gets PUBCOMP 0x92 (not found).
	pidShared bool
	// qos2Again: it may send a kept session's QoS 2 message again, in a new exchange, after
	// a take-over: aedes 1.2 re-sends to the resumed session the PUBLISH of an exchange it
	// had released with PUBREL when the take-over came while the PUBREL was on its way (the
	// new connection's queue is a copy taken before the PUBREC was stored, written back
	// over it), now and then under load.
	qos2Again bool
	// takeoverLoss: it may lose a kept session's QoS 1 or 2 message published while the
	// session is being taken over, now and then under load: mochi 2.7.9 copies the old
	// connection's in-flight messages to the new one and only then puts the new one in its
	// client map, so a message routed to the client id in between goes to the old
	// connection's in-flight set, which it then clears (a hook on its OnQosPublish saw each
	// such message handed to a taken-over client, one for each copy the run counted lost).
	// The run must count those copies lost, and nothing else may be missing.
	takeoverLoss bool
}

var interopBrokers = []interopBroker{
	// First: it takes 10-15 s to accept MQTT, while the others run (go test runs two
	// brokers' subtests at a time on two cores).
	{name: "rabbitmq", sub2: 1, puback2: true, start: func(t *testing.T) string { return testbroker.StartRabbitMQ(t).Addr }},
	{name: "mosquitto", v5: true, sub2: 2, max5: 2, share: true,
		start: func(t *testing.T) string { return testbroker.StartMosquitto(t, testbroker.Options{}).Addr }},
	{name: "embedded", v5: true, sub2: 2, max5: 2, share: true, pidShared: true, takeoverLoss: true, start: func(t *testing.T) string {
		b, err := broker.Start("127.0.0.1:0", io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b.Addr()
	}},
	{name: "aedes", sub2: 2, qos2Again: true, start: func(t *testing.T) string { return testbroker.StartAedes(t).Addr }},
	// gmqtt v0.5.0's 5.0 CONNACK says Maximum QoS 1 when it is configured for QoS 2 (its
	// server/client.go), and takes QoS 2 PUBLISHes all the same.
	{name: "gmqtt", v5: true, sub2: 2, max5: 1, share: true, start: func(t *testing.T) string { return testbroker.StartGMQTT(t).Addr }},
}

// interopCell is one run of the tier.
type interopCell struct {
	class string // p2p, fanin, fanout, shared, roundtrip, retain, conn, pub, sub, session
	v     string // "4" (3.1.1) or "5"
	qos   int
	id    string // its client id prefix and topic root, unique in the test
	sp    *Spec  // its run, the broker left out
	// during runs while the run does (nil: nothing), given the broker's address and the
	// run going on.
	during func(addr string, g *going) error
	r      ran
	err    error // of during
}

func (c *interopCell) name() string {
	if c.class == "conn" {
		return fmt.Sprintf("%s/v%s", c.class, c.v)
	}
	return fmt.Sprintf("%s/v%s/qos%d", c.class, c.v, c.qos)
}

// Short runs: 1.5 s of publishing (0.3 s of it warm-up), 0.7 s of drain.
var interopTiming = sets("parameters.duration_sec", 1.5, "parameters.warmup_sec", "300ms", "parameters.drain_sec", "700ms")

// interopCells are the cells of broker b; n numbers them (ids and topics).
func interopCells(b interopBroker, n *int) []*interopCell {
	var cells []*interopCell
	versions := []string{"4"}
	if b.v5 {
		versions = append(versions, "5")
	}
	add := func(class, v string, qos int, sp *Spec) *interopCell {
		*n++
		c := &interopCell{class: class, v: v, qos: qos, id: fmt.Sprintf("io%03d", *n), sp: sp}
		cells = append(cells, c)
		return c
	}
	// run is a cell of the built-in scenario name, changed by more.
	run := func(class, v string, qos int, name string, more ...string) *interopCell {
		return add(class, v, qos, quick(name, "", append(slices.Clone(interopTiming), more...)...))
	}
	groups := func(c *interopCell, pubs, subs int, pubTopic, subTopic string) {
		c.sp.Scenario.Set = append(c.sp.Scenario.Set, sets("publishers.protocol_version", c.v, "publishers.qos", c.qos,
			"publishers.id_prefix", c.id+"p", "publishers.client_count", pubs, "publishers.topics", pubTopic)...)
		if subs > 0 {
			c.sp.Scenario.Set = append(c.sp.Scenario.Set, sets("subscribers.protocol_version", c.v, "subscribers.qos", c.qos,
				"subscribers.id_prefix", c.id+"s", "subscribers.client_count", subs, "subscribers.topics", subTopic)...)
		}
	}
	next := func() string { return fmt.Sprintf("io%03d", *n+1) } // the id of the cell added next
	for _, v := range versions {
		for qos := 0; qos <= 2; qos++ {
			c := run("p2p", v, qos, "quick-p2p-100")
			groups(c, 10, 10, c.id+"/$clientindex", c.id+"/$clientindex")
			c = run("fanin", v, qos, "quick-fanin-100-1")
			groups(c, 10, 1, c.id+"/$clientindex", c.id+"/+")
			c = run("fanout", v, qos, "quick-fanout-1-100")
			groups(c, 1, 10, c.id, c.id)
			c = run("shared", v, qos, "quick-sharedsub-100-5")
			groups(c, 10, 2, c.id+"/$clientindex", "$share/"+c.id+"/"+c.id+"/#")
			c = run("roundtrip", v, qos, "quick-roundtrip-10")
			groups(c, 5, 0, "ping/$clientid", "")
			c = run("retain", v, qos, "quick-p2p-100", "publishers.retain=true")
			groups(c, 10, 10, c.id+"/$clientindex", c.id+"/$clientindex")
			id := next()
			add("pub", v, qos, pubSpec("", id+"/$clientindex", sets("publishers.client_count", 5, "parameters.publish_rate", 10,
				"publishers.protocol_version", v, "publishers.qos", qos, "publishers.id_prefix", id+"p", "parameters.duration_sec", 1.5)...))
			id = next()
			add("sub", v, qos, subSpec("", id+"/$clientindex", sets("subscribers.client_count", 5, "subscribers.protocol_version", v,
				"subscribers.qos", qos, "subscribers.id_prefix", id+"s", "parameters.duration_sec", 1.5)...))
			if qos > 0 {
				c = run("session", v, qos, "quick-p2p-100", "parameters.reconnect=backoff", "subscribers.clean_session=false",
					"parameters.duration_sec=4")
				groups(c, 5, 5, c.id+"/$clientindex", c.id+"/$clientindex")
				if v == "5" {
					c.sp.Scenario.Set = append(c.sp.Scenario.Set, `subscribers.connect_properties=[{"name":"session_expiry_interval","value":300}]`)
				}
				takeover := takeOver(c.id+"s", 5, v, 500*time.Millisecond)
				c.during = func(addr string, g *going) error {
					// Once every client is connected and publishing began: the subscribers'
					// sessions exist and hold their subscriptions (a take-over before that,
					// when a loaded box starts the run late, finds no session to take).
					deadline := time.Now().Add(15 * time.Second)
					for p := g.progress(); !strings.Contains(p, "established 10/10") || !strings.Contains(p, "sent "); p = g.progress() {
						if time.Now().After(deadline) {
							return fmt.Errorf("the run had not connected its 10 clients and begun publishing within 15 s:\n%s", p)
						}
						time.Sleep(20 * time.Millisecond)
					}
					return takeover(addr)
				}
			}
		}
		id := next()
		add("conn", v, 0, quick("quick-conn-100", "", sets("publishers.client_count", 20, "publishers.protocol_version", v,
			"publishers.id_prefix", id+"c", "parameters.duration_sec", 1.5)...))
	}
	if !b.v5 {
		c := run("p2p", "5", 1, "quick-p2p-100")
		groups(c, 10, 10, c.id+"/$clientindex", c.id+"/$clientindex")
	}
	for _, c := range cells {
		c.sp.NoCheck, c.sp.Outputs.Format = true, "json"
		c.sp.AcceptDowngrade = c.v == "5" && b.v5 && c.qos > b.max5 && c.class != "sub" && c.class != "conn"
	}
	return cells
}

// interopParallel is how many runs of one broker run at once.
const interopParallel = 6

// TestInterop: the interop tier (see the top of this file).
func TestInterop(t *testing.T) {
	tier.Integration(t)
	testbroker.Binary(t, "../cmd/mqblast") // under -race it skips before any broker starts
	start := time.Now()
	var mu sync.Mutex
	rows := map[string][]string{}
	n := 0
	only := os.Getenv("MQBLAST_INTEROP_ONLY")
	for _, b := range interopBrokers {
		cells := interopCells(b, &n)
		if only != "" { // while working on the tier: the cells whose broker/name match
			re := regexp.MustCompile(only)
			cells = slices.DeleteFunc(cells, func(c *interopCell) bool { return !re.MatchString(b.name + "/" + c.name()) })
			if len(cells) == 0 {
				continue
			}
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			addr := b.start(t)
			t0 := time.Now()
			sem := make(chan struct{}, interopParallel)
			var wg sync.WaitGroup
			for _, c := range cells {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					c.sp.Brokers = []string{addr}
					g := goSpec(context.Background(), t, c.sp)
					done := make(chan error, 1)
					if c.during != nil {
						go func() { done <- c.during(addr, g) }()
					}
					c.r = g.wait()
					if c.during != nil {
						c.err = <-done
					}
				}()
			}
			wg.Wait()
			t.Logf("%s: %d cells in %v", b.name, len(cells), time.Since(t0).Round(100*time.Millisecond))
			for _, c := range cells {
				t.Run(c.name(), func(t *testing.T) {
					out := checkInteropCell(t, b, c)
					mu.Lock()
					rows[b.name] = append(rows[b.name], c.name()+": "+out)
					mu.Unlock()
				})
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("interop tier: %v", time.Since(start).Round(100*time.Millisecond))
		if p := os.Getenv("MQBLAST_INTEROP_TABLE"); p != "" {
			var b strings.Builder
			for _, br := range interopBrokers {
				fmt.Fprintf(&b, "## %s\n", br.name)
				for _, row := range rows[br.name] {
					fmt.Fprintln(&b, row)
				}
			}
			if err := os.WriteFile(filepath.Clean(p), []byte(b.String()), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
}

// checkInteropCell asserts what cell c against broker b must show, and returns its outcome
// in a line: how it ended, the counts, the behaviours the result reported.
func checkInteropCell(t *testing.T, b interopBroker, c *interopCell) string {
	t.Helper()
	r := c.r
	if c.err != nil {
		t.Errorf("the session take-over: %v", c.err)
	}
	if c.v == "5" && !b.v5 {
		// A broker without 5.0: the run fails, saying so.
		if !r.failed() || !strings.Contains(r.said(), "not support MQTT 5.0") {
			t.Errorf("5.0 on a 3.1.1 broker: %v, want a failed run and \"not support MQTT 5.0\"\n%s", r.err, tailText(r.stderr, 2000))
		}
		return fmt.Sprintf("%s: %s", outcomeOf(r), lastLine(r.said()))
	}
	if r.err != nil {
		t.Errorf("%v\n%s", r.err, tailText(r.stderr, 3000))
	}
	if r.res == nil {
		return fmt.Sprintf("%s, no result: %s", outcomeOf(r), lastLine(r.said()))
	}
	if err := result.CheckDocument([]byte(r.stdout)); err != nil {
		t.Errorf("the document does not add up:\n%v", err)
	}
	res := r.res
	m := res.Messages
	out := fmt.Sprintf("%s; published %d, expected %d, received %d, lost %d, duplicated %d, redelivered %d, unexpected %d",
		outcomeOf(r), m.Published, m.Expected, m.Received, m.Lost, m.Duplicated, m.Redelivered, m.UnexpectedTotal)
	if m.NotSharedCopies > 0 {
		out += fmt.Sprintf(", not shared %d", m.NotSharedCopies)
	}
	if res.Connections.Dropped > 0 {
		out += fmt.Sprintf("; dropped %v, reconnected %d", res.Connections.DroppedBy, res.Connections.Reconnected)
	}
	var behs []string
	for _, x := range res.BrokerBehaviour {
		behs = append(behs, fmt.Sprintf("%s=%d", x.What, x.Count))
	}
	sort.Strings(behs)
	if len(behs) > 0 {
		out += "; broker_behaviour: " + strings.Join(behs, ", ")
	}
	t.Log(out)
	for _, e := range res.Errors {
		t.Logf("error %s x%d: %s", e.Kind, e.Count, e.Example)
	}

	// What the broker does by design, and the behaviours that say so.
	want := map[string]bool{}
	hasSubs := c.class != "pub" && c.class != "roundtrip" && c.class != "conn"
	if c.qos == 2 && b.sub2 < 2 && (hasSubs || c.class == "roundtrip") {
		want[fmt.Sprintf("granted_qos_%d_for_qos_2", b.sub2)] = true
	}
	if c.v == "5" && c.qos > b.max5 && c.class != "sub" && c.class != "conn" {
		want[fmt.Sprintf("max_qos_%d_for_qos_%d", b.max5, c.qos)] = true
	}
	if c.qos == 2 && b.puback2 && c.class != "sub" && c.class != "conn" {
		want["puback_for_qos_2"] = true
	}
	notShared := c.class == "shared" && !b.share
	if notShared {
		want["not_shared"] = true
	}
	for _, x := range res.BrokerBehaviour {
		switch {
		case want[x.What]:
			delete(want, x.What)
		case c.class == "session" && strings.HasPrefix(x.What, "disconnect:"): // the take-over
		case c.class == "session" && b.pidShared && x.What == "subscribe_refused:packet_identifier_in_use":
		case c.class == "roundtrip" && b.pidShared && x.What == "pubcomp_id_not_found": // now and then, at 5.0 QoS 2
		case c.class == "session" && b.qos2Again && x.What == result.BehaviourQoS2Again: // now and then, under load
		default:
			t.Errorf("broker_behaviour %s (%d): %s, not what %s does by design", x.What, x.Count, x.Evidence, b.name)
		}
	}
	for w := range want {
		t.Errorf("broker_behaviour lacks %s: %s does it by design, and the result must say so", w, b.name)
	}

	if saturated(res) {
		t.Errorf("client saturated: %v", res.Client.SaturationEvidence)
	}
	if c.class != "session" && m.Redelivered != 0 {
		t.Errorf("redelivered %d without a reconnect", m.Redelivered)
	}
	dup := m.Duplicated
	if c.class == "session" && b.qos2Again {
		// The broker's copies sent again, each one reported as its breach of exactly once.
		if x := res.Behaviour(result.BehaviourQoS2Again); x != nil {
			dup -= x.Count
		}
	}
	lost := m.Lost
	if c.class == "session" && b.takeoverLoss && lost > 0 {
		// Lost at the take-over by the broker: counted as lost (the document adds up, checked
		// above), received + lost = expected, and no more than the copies due while the
		// sessions changed hands can be (a second's worth of every stream).
		if lost > m.Expected/4 || m.Received+lost != m.Expected {
			t.Errorf("lost %d of %d expected, received %d: more than a take-over loses", lost, m.Expected, m.Received)
		}
		t.Logf("lost %d at the take-over: %s loses them by design", lost, b.name)
		lost = 0
	}
	if lost != 0 || dup != 0 || m.InFlightLost != 0 || m.InFlightAtEnd != 0 || m.UnsentTotal != 0 {
		t.Errorf("lost %d, duplicated %d, in flight lost %d, in flight at the end %d, unsent %v: %s",
			m.Lost, m.Duplicated, m.InFlightLost, m.InFlightAtEnd, m.Unsent, out)
	}
	switch c.class {
	case "conn":
		if res.Connections.Established != 20 || res.Connections.Dropped != 0 {
			t.Errorf("connections %d established of 20, %d dropped", res.Connections.Established, res.Connections.Dropped)
		}
		return out
	case "sub":
		if !m.ExpectedUnknown || m.Received != 0 || m.Subscribed != 5 {
			t.Errorf("sub: expected unknown %v, received %d, subscribed %d", m.ExpectedUnknown, m.Received, m.Subscribed)
		}
		return out
	case "pub":
		if m.Published == 0 || m.Expected != 0 {
			t.Errorf("pub: published %d, expected %d", m.Published, m.Expected)
		}
	case "session":
		// Each of the 5 taken over and back; under load a reconnect can come while the
		// intruder still holds the session, which the broker then takes over once more.
		if res.Connections.Dropped < 5 || res.Connections.Reconnected < 5 {
			t.Errorf("session: %d dropped, %d reconnected, want the 5 subscribers taken over and back", res.Connections.Dropped, res.Connections.Reconnected)
		}
	default:
		if m.Published == 0 || m.Expected == 0 {
			t.Errorf("published %d, expected %d: the cell measured nothing", m.Published, m.Expected)
		}
	}
	if c.qos > 0 && m.Acked+m.RefusedTotal != m.Published {
		t.Errorf("QoS %d: acked %d + refused %d != published %d", c.qos, m.Acked, m.RefusedTotal, m.Published)
	}
	switch {
	case notShared && (m.Received != 0 || m.NotSharedCopies != m.Expected):
		t.Errorf("a broker that does not share: received %d, not shared copies %d of %d expected", m.Received, m.NotSharedCopies, m.Expected)
	case !notShared && m.Received+m.Lost-lost != m.Expected: // lost: 0, or the broker's take-over losses
		t.Errorf("received %d of %d expected", m.Received, m.Expected)
	}
	if m.UnexpectedTotal != 0 && !notShared {
		t.Errorf("unexpected %v", m.Unexpected)
	}
	return out
}

// outcomeOf is how a cell's run ended as the command line's exit code says it: "exit 0"
// for a run that succeeded, "exit 1" for one that failed without a kind, else its kind.
func outcomeOf(r ran) string {
	switch {
	case r.err == nil:
		return "exit 0"
	case r.failed():
		return "exit 1"
	}
	return "failed: " + r.kind().Error()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}
