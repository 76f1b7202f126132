package run

import (
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mqblast/mqblast/internal/fail"
	"github.com/mqblast/mqblast/internal/testbroker"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/run/spec"
)

// fleetSets shorten iot-fleet-10K for a test: 8 s of publishing, the storm at 3 s.
var fleetSets = sets("parameters.duration_sec", 8, "parameters.warmup_sec", 1, "parameters.drain_sec", 3,
	"groups.devices.churn.at_sec", 3, "parameters.connection_rate", 5000)

// TestIoTFleet10K runs the built-in iot-fleet-10K (shortened) against Mosquitto and
// against the sink: 10,020 clients in three groups, every one connected; the storm ends
// 1,000 devices' connections and every one comes back, counted and timed; each group's
// messages add up (scheduled = published + unsent; expected = received + lost + in
// flight), the groups add up to the run, and against Mosquitto, which keeps the devices'
// persistent sessions, no command is lost.
func TestIoTFleet10K(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10,020 connections for ~20 s, twice")
	}
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	for _, c := range []struct {
		name   string
		broker string
		sink   *spec.Sink
	}{{"mosquitto", m.Addr, nil}, {"sink", "", &spec.Sink{}}} {
		t.Run(c.name, func(t *testing.T) {
			sp := quick("iot-fleet-10K", c.broker, fleetSets...)
			sp.Sink, sp.Outputs.Out = c.sink, filepath.Join(t.TempDir(), "r.json")
			r := doOK(t, sp)
			res, err := result.ReadFile(sp.Outputs.Out)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range res.Groups {
				t.Logf("%-8s clients %5d connected %5d reconnected %4d published %4d unsent %d expected %4d received %4d lost %d delivered %4d latency p99 %d µs churn %+v",
					g.Name, g.Clients, g.Connections.Established, g.Connections.Reconnected, g.Messages.Published,
					g.Messages.UnsentTotal, g.Messages.Expected, g.Messages.Received, g.Messages.Lost, g.Delivered, g.LatencyUS.P99, g.Churn)
			}
			if len(res.Groups) != 3 {
				t.Fatalf("%d groups", len(res.Groups))
			}
			dev, backend, cmd := res.Groups[0], res.Groups[1], res.Groups[2]
			if dev.Name != "devices" || dev.Clients != 10_000 || dev.Publishers != 100 || backend.Clients != 10 || cmd.Publishers != 10 {
				t.Errorf("groups: %+v %+v %+v", dev.Name, backend.Name, cmd.Name)
			}
			ch := dev.Churn
			if ch == nil || ch.Clients != 1000 || ch.Ended != 1000 {
				t.Errorf("storm %+v", ch)
			}
			if dev.Connections.Reconnected != 1000 || dev.Connections.ReconnectLatencyUS == nil || dev.Connections.ReconnectLatencyUS.Count != 1000 {
				t.Errorf("devices reconnected %d, latency %+v", dev.Connections.Reconnected, dev.Connections.ReconnectLatencyUS)
			}
			var connected, published, expected, received, lost, delivered int64
			for _, g := range res.Groups {
				c, msg := g.Connections, g.Messages
				if c.Established != int64(g.Clients) || c.Failed != 0 || c.Dropped != 0 {
					t.Errorf("group %s: %d clients, connections %+v", g.Name, g.Clients, c)
				}
				if msg.Scheduled != msg.Published+msg.UnsentTotal ||
					msg.Expected != msg.Received+msg.Lost+msg.InFlightAtEnd+msg.InFlightLost+msg.RefusedCopies {
					t.Errorf("group %s does not add up: %+v", g.Name, msg)
				}
				if g.Publishers > 0 && (msg.Published == 0 || g.LatencyUS.Count == 0) {
					t.Errorf("group %s: published %d, latency %+v", g.Name, msg.Published, g.LatencyUS)
				}
				connected += c.Established
				published += msg.Published
				expected += msg.Expected
				received += msg.Received
				lost += msg.Lost
				delivered += g.Delivered
			}
			run := res.Messages
			if connected != res.Connections.Established || published != run.Published || expected != run.Expected ||
				received != run.Received || lost != run.Lost || delivered != run.Received {
				t.Errorf("groups: connected %d published %d expected %d received %d lost %d delivered %d; run: %d %+v",
					connected, published, expected, received, lost, delivered, res.Connections.Established, run)
			}
			// Each telemetry message reaches the backend's share group once.
			if backend.Delivered != dev.Messages.Received {
				t.Errorf("backend received %d of the devices' %d", backend.Delivered, dev.Messages.Received)
			}
			if c.name == "mosquitto" && (cmd.Messages.Lost != 0 || dev.Messages.Lost != 0) {
				t.Errorf("lost with persistent sessions: commands %d, telemetry %d", cmd.Messages.Lost, dev.Messages.Lost)
			}
			if !strings.Contains(r.stderr+r.stdout, "reconnect storm of group devices: 1000 connections ended") {
				t.Errorf("the storm is not in the progress lines:\n%s", r.stderr)
			}
		})
	}
}

// mixedFile is a small mixed scenario: publishing devices listening for commands, idle
// clients, a shared-subscription backend and a command group.
const mixedFile = `{
  "name": "mixed-procs",
  "groups": [
    {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 200, "fraction": 0.1,
     "topics": "mp/devices/$clientid/telemetry", "filters": "mp/devices/$clientindex/commands", "qos": 1, "protocol_version": 5},
    {"name": "idle", "behaviours": "hold", "client_count": 100},
    {"name": "backend", "behaviours": "subscribe", "client_count": 4, "protocol_version": 5, "qos": 1,
     "filters": "$share/backend/mp/devices/+/telemetry"},
    {"name": "commands", "behaviours": "publish", "client_count": 4, "topics": "mp/devices/$clientindex/commands",
     "qos": 1, "publish_rate": 20}
  ],
  "parameters": {"duration_sec": 2, "warmup_sec": 0.5, "drain_sec": 2, "publish_rate": 10}
}`

// TestMixedProcs2: a mixed run in two worker processes on the embedded broker merges its
// groups: each group's clients and messages add up over the workers, its copies received
// in the other worker included, and nothing is lost at QoS 1.
func TestMixedProcs2(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.json")
	r := doOK(t, &Spec{Scenario: spec.Scenario{Name: "mixed.json", File: json.RawMessage(mixedFile)}, Procs: 2,
		Outputs: spec.Outputs{Out: out}})
	if !strings.Contains(r.stdout, "group backend    4 clients (subscribe): 4 connected") {
		t.Errorf("summary:\n%s", r.stdout)
	}
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Host.Procs != 2 || len(res.Groups) != 4 {
		t.Fatalf("procs %d, %d groups", res.Host.Procs, len(res.Groups))
	}
	want := map[string][2]int{"devices": {200, 20}, "idle": {100, 0}, "backend": {4, 0}, "commands": {4, 4}}
	var received, delivered int64
	for _, g := range res.Groups {
		m := g.Messages
		if w := want[g.Name]; g.Clients != w[0] || g.Publishers != w[1] || g.Connections.Established != int64(w[0]) {
			t.Errorf("group %s: %d clients, %d publishers, %d connected; want %v", g.Name, g.Clients, g.Publishers, g.Connections.Established, w)
		}
		if m.Expected != m.Received || m.Lost != 0 || m.Scheduled != m.Published+m.UnsentTotal {
			t.Errorf("group %s: %+v", g.Name, m)
		}
		received += m.Received
		delivered += g.Delivered
	}
	if received != res.Messages.Received || delivered != received || res.Messages.Lost != 0 || received == 0 {
		t.Errorf("groups received %d, delivered %d; the run %+v", received, delivered, res.Messages)
	}
	// The workers keep no intervals: the parent's come from their lines, groups' records
	// included.
	var connected int64
	for _, iv := range res.Intervals {
		for _, g := range iv.Groups {
			connected += g.Connected
		}
	}
	if connected != res.Connections.Established || connected != 308 {
		t.Errorf("the intervals' groups connected %d, the run %d (want 308)", connected, res.Connections.Established)
	}
}

// TestGroupsRefusedBeforeAnySocket: a run of a mixed scenario with a bad group is refused
// as invalid, with the problem's path, and opens no connection: a listener standing in for
// the broker accepts none.
func TestGroupsRefusedBeforeAnySocket(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	for _, c := range []struct{ file, path string }{
		{"groups-prefix-overlap", "groups[1].id_prefix: "},
		{"groups-fraction", "groups[0].fraction: 1.5 is not a fraction"},
		{"groups-storm", "groups[0].churn.fraction: 2 is a storm larger than the group"},
		{"groups-behaviours", `groups[0].behaviours[1]: "publsh" is not a behaviour`},
		{"groups-reach", "groups[0].topics: "},
	} {
		r := doSpec(t, quick(filepath.Join("..", "scenario", "testdata", "bad", c.file+".json"), ln.Addr().String()))
		if !errors.Is(r.err, fail.ErrInvalid) || !strings.Contains(r.err.Error(), c.path) {
			t.Errorf("%s: %v, want %v with %q:\n%s", c.file, r.err, fail.ErrInvalid, c.path, r.stderr)
		}
	}
	select {
	case <-accepted:
		t.Error("a refused scenario opened a connection")
	default:
	}
}

// TestMixedStormProcs2: a storm in a run of two worker processes, its share group's
// members and its devices spread over both: each worker storms its own devices, and the
// merge attributes what it finds across the workers (a share group's copy seen in both,
// messages in flight) to the groups, so that every group's figures add up, and add up to
// the run's; the persistent sessions lose nothing.
func TestMixedStormProcs2(t *testing.T) {
	t.Parallel()
	m := testbroker.StartMosquitto(t, testbroker.Options{})
	doc := `{"name": "storm-procs", "groups": [
	  {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 40, "fraction": 0.25,
	   "topics": "sp/devices/$clientid/telemetry", "filters": "sp/devices/$clientindex/commands", "qos": 1,
	   "protocol_version": 5, "clean_session": false, "session_expiry_sec": 60,
	   "churn": {"fraction": 0.5, "at_sec": 1, "down_sec": 0.5}},
	  {"name": "backend", "behaviours": "subscribe", "client_count": 2, "protocol_version": 5, "qos": 1,
	   "filters": "$share/backend/sp/devices/+/telemetry"},
	  {"name": "commands", "behaviours": "publish", "client_count": 4, "topics": "sp/devices/$clientindex/commands",
	   "qos": 1, "publish_rate": 20}],
	  "parameters": {"duration_sec": 3, "warmup_sec": 0.5, "drain_sec": 3, "publish_rate": 10}}`
	out := filepath.Join(t.TempDir(), "r.json")
	doOK(t, &Spec{Scenario: spec.Scenario{Name: "storm.json", File: json.RawMessage(doc)}, Brokers: []string{m.Addr}, Procs: 2,
		Outputs: spec.Outputs{Out: out}})
	res, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var received, expected, delivered int64
	for _, g := range res.Groups {
		msg := g.Messages
		t.Logf("%-8s published %d expected %d received %d lost %d dup %d delivered %d (%d on return) reconnected %d",
			g.Name, msg.Published, msg.Expected, msg.Received, msg.Lost, msg.Duplicated, g.Delivered, g.DeliveredOnReturn, g.Connections.Reconnected)
		if msg.Expected != msg.Received+msg.Lost+msg.InFlightAtEnd+msg.InFlightLost || msg.Lost != 0 {
			t.Errorf("group %s: %+v", g.Name, msg)
		}
		received += msg.Received
		expected += msg.Expected
		delivered += g.Delivered
	}
	if received != res.Messages.Received || expected != res.Messages.Expected || delivered != received {
		t.Errorf("groups: expected %d received %d delivered %d; run %+v", expected, received, delivered, res.Messages)
	}
	dev := res.Groups[0]
	if dev.Churn == nil || dev.Churn.Ended != 20 || dev.Churn.Clients != 20 || dev.Connections.Reconnected != 20 || dev.DeliveredOnReturn == 0 {
		t.Errorf("devices: churn %+v reconnected %d on return %d", dev.Churn, dev.Connections.Reconnected, dev.DeliveredOnReturn)
	}
}
