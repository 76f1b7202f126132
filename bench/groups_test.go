package bench

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mqblast/mqblast/broker"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
)

// mixedJSON is a mixed run small enough for a test: held devices of which some publish
// telemetry and all listen for commands, a shared-subscription backend, a wildcard
// monitor, a command group and a round-trip group, at QoS 1.
const mixedJSON = `{
  "name": "mixed",
  "groups": [
    {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 200, "fraction": 0.1,
     "topics": "mixed/devices/$clientid/telemetry", "filters": "mixed/devices/$clientindex/commands", "qos": 1,
     "protocol_version": 5, "keep_alive_sec": 30},
    {"name": "idle", "behaviours": "hold", "client_count": 100, "keep_alive_sec": 20},
    {"name": "backend", "behaviours": "subscribe", "client_count": 3, "protocol_version": 5, "qos": 1,
     "filters": "$share/backend/mixed/devices/+/telemetry"},
    {"name": "monitor", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "mixed/devices/#"},
    {"name": "commands", "behaviours": "publish", "client_count": 4, "topics": "mixed/devices/$clientindex/commands",
     "qos": 1, "publish_rate": 20, "payload_size": 100, "start_sec": 0.5},
    {"name": "echo", "behaviours": "round-trip", "client_count": 2, "qos": 1, "topics": "mixed/echo/$clientid"}
  ],
  "parameters": {"duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 2, "publish_rate": 10, "connection_rate": 2000}
}`

// TestMixedRun runs a mixed scenario against Mosquitto and the embedded broker: each group
// connects all its clients, its messages are accounted for (expected = received + lost +
// in flight, nothing lost at QoS 1), and the groups' figures add up to the run's.
func TestMixedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against two brokers")
	}
	for _, b := range twoBrokers(t) {
		t.Run(b.name, func(t *testing.T) {
			res := runJSON(t, b.addr, mixedJSON, nil)
			for _, g := range res.Groups {
				t.Logf("%-8s clients %3d connected %3d published %4d expected %4d received %4d delivered %4d latency p50 %d µs",
					g.Name, g.Clients, g.Connections.Established, g.Messages.Published, g.Messages.Expected, g.Messages.Received,
					g.Delivered, g.LatencyUS.P50)
			}
			checkGroups(t, res)
			g := groupsByName(res)
			// Telemetry reaches the backend's share group and the monitor; commands their
			// device and the monitor; echoes their sender.
			dev, cmd, echo := g["devices"], g["commands"], g["echo"]
			if dev.Publishers != 20 || cmd.Publishers != 4 || g["idle"].Publishers != 0 {
				t.Errorf("publishers: devices %d commands %d idle %d", dev.Publishers, cmd.Publishers, g["idle"].Publishers)
			}
			if dev.Messages.Expected != 2*dev.Messages.Published || cmd.Messages.Expected != 2*cmd.Messages.Published ||
				echo.Messages.Expected != echo.Messages.Published {
				t.Errorf("expected copies: devices %+v commands %+v echo %+v", dev.Messages, cmd.Messages, echo.Messages)
			}
			if got, want := g["backend"].Delivered, dev.Messages.Received/2; got != want {
				t.Errorf("backend delivered %d, want half of the devices' received %d", got, want)
			}
			if got, want := g["monitor"].Delivered, dev.Messages.Received/2+cmd.Messages.Received/2; got != want {
				t.Errorf("monitor delivered %d, want %d", got, want)
			}
			if got, want := dev.Delivered, cmd.Messages.Received/2; got != want {
				t.Errorf("devices delivered %d commands, want %d", got, want)
			}
			// The commands group started half a second later at 20/s: 4 × 20 × 1.5 s.
			if p := cmd.Messages.Published; p < 100 || p > 140 {
				t.Errorf("commands published %d, want about 120 (20/s each from 0.5 s to 2 s)", p)
			}
			if g["idle"].Connections.Established != 100 || g["idle"].Messages.Published != 0 || g["idle"].Delivered != 0 {
				t.Errorf("idle: %+v %+v", g["idle"].Connections, g["idle"].Messages)
			}
		})
	}
}

func groupsByName(res *result.Result) map[string]result.Group {
	out := map[string]result.Group{}
	for _, g := range res.Groups {
		out[g.Name] = g
	}
	return out
}

// checkGroups checks the accounting of a mixed run's result: each group's clients all
// connected, each group's messages accounted for at QoS 1, and the groups adding up to the
// run.
func checkGroups(t *testing.T, res *result.Result) {
	t.Helper()
	checkGroupSums(t, res, true)
}

// checkGroupSums checks that each group's figures add up and the groups' to the run's;
// qos1 adds that nothing is lost or duplicated and everything published is acknowledged.
func checkGroupSums(t *testing.T, res *result.Result, qos1 bool) {
	t.Helper()
	if len(res.Groups) == 0 {
		t.Fatal("no groups in the result")
	}
	var sum result.Messages
	var connected, clients, delivered int64
	for _, g := range res.Groups {
		c, m := g.Connections, g.Messages
		if c.Established != int64(g.Clients) || c.Failed != 0 || c.Target != g.Clients {
			t.Errorf("group %s: %d clients, connections %+v", g.Name, g.Clients, c)
		}
		if m.Scheduled != m.Published+m.UnsentTotal {
			t.Errorf("group %s: scheduled %d != published %d + unsent %d", g.Name, m.Scheduled, m.Published, m.UnsentTotal)
		}
		if m.Expected != m.Received+m.Lost+m.InFlightAtEnd+m.InFlightLost+m.RefusedCopies+m.ResponsesUnsent {
			t.Errorf("group %s: expected %d != received %d + lost %d + in flight %d + %d + refused %d + responses unsent %d", g.Name,
				m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.InFlightLost, m.RefusedCopies, m.ResponsesUnsent)
		}
		if qos1 && (m.Lost != 0 || m.Duplicated != 0 || m.Acked != m.Published) {
			t.Errorf("group %s at QoS 1: %+v", g.Name, m)
		}
		if g.Publishers > 0 && (m.Published == 0 || g.LatencyUS.Count == 0) {
			t.Errorf("group %s publishes, but: published %d, latency %+v", g.Name, m.Published, g.LatencyUS)
		}
		sum.Scheduled += m.Scheduled
		sum.Published += m.Published
		sum.Expected += m.Expected
		sum.Received += m.Received
		sum.Lost += m.Lost
		sum.Acked += m.Acked
		connected += c.Established
		clients += int64(g.Clients)
		delivered += g.Delivered
	}
	run := res.Messages
	if sum.Scheduled != run.Scheduled || sum.Published != run.Published || sum.Expected != run.Expected ||
		sum.Received != run.Received || sum.Lost != run.Lost || sum.Acked != run.Acked {
		t.Errorf("groups add up to %+v, the run has %+v", sum, run)
	}
	if delivered != run.Received {
		t.Errorf("groups' clients received %d, the run %d", delivered, run.Received)
	}
	if connected != res.Connections.Established || clients != int64(res.Connections.Target) {
		t.Errorf("groups: %d of %d connected; the run %d of %d", connected, clients, res.Connections.Established, res.Connections.Target)
	}
	var lat int64
	for _, g := range res.Groups {
		lat += g.LatencyUS.Count
	}
	// The intervals' group records add up to each group's figures.
	for i, g := range res.Groups {
		var pub, conn, lat int64
		for _, iv := range res.Intervals {
			if i < len(iv.Groups) {
				pub += iv.Groups[i].Published
				conn += iv.Groups[i].Connected
				lat += iv.Groups[i].LatencyUS.Count
			}
		}
		if pub != g.Messages.Published || conn != g.Connections.Established || lat != g.LatencyUS.Count {
			t.Errorf("group %s: intervals add up to published %d, connected %d, latencies %d; the group has %d, %d, %d",
				g.Name, pub, conn, lat, g.Messages.Published, g.Connections.Established, g.LatencyUS.Count)
		}
	}
	if lat != res.LatencyUS.Count {
		t.Errorf("groups' latency counts add up to %d, the run's %d", lat, res.LatencyUS.Count)
	}
}

// stormJSON: MQTT 5 devices with persistent sessions listening for commands, of which half
// drop at 1 s and come back 0.5 s later (with the session the broker kept, or a clean one:
// %s), while 4 command clients send 20 commands/s QoS 1 each to devices 0 to 3.
const stormJSON = `{
  "name": "storm",
  "groups": [
    {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 40, "fraction": 0.25,
     "topics": "storm/devices/$clientid/telemetry", "filters": "storm/devices/$clientindex/commands", "qos": 1,
     "protocol_version": 5, "clean_session": false, "session_expiry_sec": 60,
     "churn": {"fraction": 0.5, "at_sec": 1, "down_sec": 0.5, "clean_session": %s}},
    {"name": "backend", "behaviours": "subscribe", "client_count": 2, "protocol_version": 5, "qos": 1,
     "filters": "$share/backend/storm/devices/+/telemetry"},
    {"name": "commands", "behaviours": "publish", "client_count": 4, "topics": "storm/devices/$clientindex/commands",
     "qos": 1, "publish_rate": 20}
  ],
  "parameters": {"duration_sec": 3, "warmup_sec": 0.5, "drain_sec": 3, "publish_rate": 10}
}`

// TestMixedStorm: a reconnect storm ends the connections of its clients and they come
// back, counted and timed in their group; the commands sent to them meanwhile are kept
// by their persistent sessions and received on return (none lost), or, when they come
// back with clean sessions, lost; every group's figures add up either way.
func TestMixedStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto")
	}
	for _, clean := range []bool{false, true} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			mq := testbroker.StartMosquitto(t, testbroker.Options{}) // no sessions of an earlier run
			res := runJSON(t, mq.Addr, fmt.Sprintf(stormJSON, strconv.FormatBool(clean)), nil)
			g := groupsByName(res)
			dev, cmd := g["devices"], g["commands"]
			for _, x := range res.Groups {
				t.Logf("%-8s connected %2d reconnected %2d published %4d unsent %3d expected %4d received %4d lost %3d dup %d in flight %d+%d delivered %4d (%d on return)",
					x.Name, x.Connections.Established, x.Connections.Reconnected, x.Messages.Published, x.Messages.UnsentTotal,
					x.Messages.Expected, x.Messages.Received, x.Messages.Lost, x.Messages.Duplicated,
					x.Messages.InFlightAtEnd, x.Messages.InFlightLost, x.Delivered, x.DeliveredOnReturn)
			}
			c := dev.Churn
			if c == nil || c.Clients != 20 || c.Ended != 20 || c.Clean != clean || c.DownS != 0.5 {
				t.Fatalf("devices' storm: %+v", c)
			}
			if dev.Connections.Reconnected != 20 || dev.Connections.ReconnectLatencyUS == nil ||
				dev.Connections.ReconnectLatencyUS.Count != 20 || res.Connections.Reconnected != 20 {
				t.Errorf("reconnects: group %d (latency %+v), run %d", dev.Connections.Reconnected,
					dev.Connections.ReconnectLatencyUS, res.Connections.Reconnected)
			}
			if g["backend"].Connections.Reconnected != 0 || dev.Connections.Dropped != 0 {
				t.Errorf("the storm is the devices' and no drop: backend reconnected %d, devices dropped %d",
					g["backend"].Connections.Reconnected, dev.Connections.Dropped)
			}
			// The storm took publishing devices away for half a second: their schedule's
			// messages then are unsent (disconnected).
			if dev.Messages.Unsent["disconnected"] == 0 {
				t.Errorf("devices: nothing unsent while away: %+v", dev.Messages)
			}
			m := cmd.Messages
			if m.Expected != m.Received+m.Lost+m.InFlightAtEnd+m.InFlightLost {
				t.Errorf("commands: expected %d != received %d + lost %d + in flight %d + %d", m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.InFlightLost)
			}
			if !clean && m.Lost != 0 {
				t.Errorf("commands to persistent sessions: %d lost (the broker keeps them for the session's return)", m.Lost)
			}
			// Devices 0 to 3 were away half a second from commands at 20/s each: their
			// persistent sessions kept about 40 for their return; clean ones nothing.
			if !clean && (dev.DeliveredOnReturn < 20 || dev.DeliveredOnReturn > 60 || res.Messages.DeliveredOnReturn < dev.DeliveredOnReturn) {
				t.Errorf("delivered on return: devices %d, run %d; want about 40", dev.DeliveredOnReturn, res.Messages.DeliveredOnReturn)
			}
			if clean && dev.DeliveredOnReturn > 2 {
				t.Errorf("clean sessions kept %d for their return", dev.DeliveredOnReturn)
			}
			// Devices 0 to 3 were away half a second from commands at 20/s each.
			if clean && m.Lost < 20 {
				t.Errorf("commands to clean sessions: %d lost, want about 40 (4 devices away 0.5 s at 20/s)", m.Lost)
			}
			checkGroupSums(t, res, false)
		})
	}
}

// TestMixedOwnServer: a group with a server of its own connects there, the others to the
// run's broker: with a second Mosquitto every client connects and the talkers' messages
// flow on the run's broker; with nothing listening on the group's server, that group's
// clients all fail and the others are untouched.
func TestMixedOwnServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against two Mosquittos")
	}
	run, fleet := testbroker.StartMosquitto(t, testbroker.Options{}), testbroker.StartMosquitto(t, testbroker.Options{})
	closed := fmt.Sprintf("127.0.0.1:%d", testbroker.FreePort(t, "127.0.0.1"))
	const doc = `{
  "name": "own-server",
  "groups": [
    {"name": "fleet", "behaviours": "hold", "client_count": 300, "server": {"hostname": "%s", "port": %s}},
    {"name": "talkers", "behaviours": "publish", "client_count": 5, "topics": "own/$clientid", "qos": 1},
    {"name": "backend", "behaviours": "subscribe", "client_count": 1, "filters": "own/#", "qos": 1}
  ],
  "parameters": {"duration_sec": 1.5, "warmup_sec": 0.5, "drain_sec": 2, "publish_rate": 10}
}`
	for _, c := range []struct {
		name, addr string
		up         bool
	}{{"second mosquitto", fleet.Addr, true}, {"nothing listening", closed, false}} {
		t.Run(c.name, func(t *testing.T) {
			host, port, _ := strings.Cut(c.addr, ":")
			res := runJSON(t, run.Addr, fmt.Sprintf(doc, host, port), nil)
			g := groupsByName(res)
			f, talk := g["fleet"], g["talkers"]
			if c.up && (f.Connections.Established != 300 || f.Connections.Failed != 0) {
				t.Errorf("fleet on its own server: %+v", f.Connections)
			}
			if !c.up && (f.Connections.Established != 0 || f.Connections.Failed != 300) {
				t.Errorf("fleet with nothing on its server: %+v", f.Connections)
			}
			if talk.Connections.Established != 5 || g["backend"].Connections.Established != 1 {
				t.Errorf("talkers %+v backend %+v", talk.Connections, g["backend"].Connections)
			}
			if m := talk.Messages; m.Published == 0 || m.Received != m.Expected || m.Lost != 0 {
				t.Errorf("talkers' messages: %+v", m)
			}
			// The result's broker lists the run's, then the groups' own servers.
			if len(res.Broker) != 2 || res.Broker[0] != run.Addr || res.Broker[1] != c.addr {
				t.Errorf("result's broker %v", res.Broker)
			}
		})
	}
}

// TestMixedHoldStorm: a run whose groups only hold has its storm too, timed from the start
// of holding: the storm's clients drop and come back.
func TestMixedHoldStorm(t *testing.T) {
	emb, err := broker.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	res := runJSON(t, emb.Addr(), `{"name": "hold-storm", "groups": [
	  {"name": "fleet", "behaviours": "hold", "client_count": 50, "keep_alive_sec": 5,
	   "churn": {"fraction": 0.5, "at_sec": 0.5, "down_sec": 0.2, "clean_session": true}},
	  {"name": "quiet", "behaviours": "hold", "client_count": 5}],
	  "parameters": {"duration_sec": 1.5}}`, nil)
	g := groupsByName(res)
	f := g["fleet"]
	if c := f.Churn; c == nil || c.Ended != 25 || c.Clients != 25 || !c.Clean || f.Connections.Reconnected != 25 {
		t.Errorf("fleet: churn %+v, reconnected %d", f.Churn, f.Connections.Reconnected)
	}
	if q := g["quiet"]; q.Connections.Reconnected != 0 || q.Connections.Established != 5 || q.Churn != nil {
		t.Errorf("quiet: %+v", q.Connections)
	}
	if res.Connections.Established != 55 || res.Connections.Reconnected != 25 || res.Messages.Published != 0 {
		t.Errorf("run: %+v %+v", res.Connections, res.Messages)
	}
}

// TestMixedReconnectPolicies: a group takes the run's reconnect policy unless it gives its
// own. Mosquitto killed and restarted 1.5 s into the run: the sensors (the run's backoff)
// come back, the apps (reconnect "off") stay dropped.
func TestMixedReconnectPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts Mosquitto during a 4 s run")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	res := runJSON(t, m.Addr, `{"name": "policies", "groups": [
		{"name": "sensors", "behaviours": "publish", "client_count": 10, "topics": "pol/$clientindex", "qos": 1},
		{"name": "apps", "behaviours": "subscribe", "client_count": 10, "filters": "pol/#", "qos": 1, "reconnect": "off"}],
		"parameters": {"duration_sec": 4, "warmup_sec": 0, "publish_rate": 10, "reconnect": "backoff"}}`, func() {
		time.Sleep(1500 * time.Millisecond)
		m.Kill(t)
		time.Sleep(200 * time.Millisecond)
		m.Restart(t)
	})
	g := groupsByName(res)
	s, a := g["sensors"].Connections, g["apps"].Connections
	if s.Dropped != 10 || s.Reconnected != 10 {
		t.Errorf("sensors (the run's backoff): dropped %d, reconnected %d; want 10 and 10", s.Dropped, s.Reconnected)
	}
	if a.Dropped != 10 || a.Reconnected != 0 {
		t.Errorf("apps (reconnect off): dropped %d, reconnected %d; want 10 and 0", a.Dropped, a.Reconnected)
	}
	checkAccounts(t, res.Messages)
}

// TestMixedChurnRate: steady churn of 10 devices a second from 1 s to the end of a 4 s run,
// persistent sessions, each away 200 ms: about 27 connections ended (none later than a tick
// and its 200 ms away before the end) and every one back, the
// devices' QoS 1 messages all accounted for and none lost (in flight re-sent to the kept
// session); the churn's clients taken in index order round the group.
func TestMixedChurnRate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs against Mosquitto for 4 s")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	res := runJSON(t, m.Addr, `{"name": "churn-rate", "groups": [
		{"name": "devices", "behaviours": "publish", "client_count": 20, "topics": "cr/$clientindex", "qos": 1,
		 "clean_session": false, "churn": {"rate": 10, "at_sec": 1, "down_sec": 0.2}},
		{"name": "backend", "behaviours": "subscribe", "client_count": 1, "filters": "cr/#", "qos": 1}],
		"parameters": {"duration_sec": 4, "warmup_sec": 0, "drain_sec": 2, "publish_rate": 5}}`, nil)
	d := groupsByName(res)["devices"]
	ch := d.Churn
	if ch == nil || ch.RatePerS != 10 || ch.Clients != 20 || ch.Ended < 20 || ch.Ended > 27 {
		t.Fatalf("churn %+v: want 20-27 ended: 10/s from 1 s to 3.7 s (a tick and the 200 ms away before the end)", ch)
	}
	if d.Connections.Reconnected != ch.Ended || d.Connections.Failed != 0 {
		t.Errorf("devices: reconnected %d of %d ended, failed %d", d.Connections.Reconnected, ch.Ended, d.Connections.Failed)
	}
	msg := res.Messages
	checkAccounts(t, msg)
	if msg.Lost != 0 || msg.Unsent["disconnected"] == 0 {
		t.Errorf("lost %d, unsent %v: want none lost and some unsent while away", msg.Lost, msg.Unsent)
	}
}
