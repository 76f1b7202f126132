package scenario

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fleetJSON is a small mixed scenario: a fleet of held devices of which some publish, a
// shared-subscription backend, a wildcard monitor, a command group and a round-trip group.
const fleetJSON = `{
  "name": "fleet",
  "groups": [
    {"name": "devices", "behaviours": ["publish", "subscribe"], "client_count": 200, "fraction": 0.05,
     "topics": "devices/$clientid/telemetry", "filters": "devices/$clientindex/commands", "qos": 1,
     "protocol_version": 5, "clean_session": false, "session_expiry_sec": 300, "keep_alive_sec": 30,
     "churn": {"fraction": 0.1, "at_sec": 5}},
    {"name": "backend", "behaviours": "subscribe", "client_count": 3, "protocol_version": 5,
     "filters": "$share/backend/devices/+/telemetry"},
    {"name": "monitor", "behaviours": "subscribe", "client_count": 1, "filters": "devices/#"},
    {"name": "commands", "behaviours": "publish", "client_count": 4, "topics": "devices/$clientindex/commands",
     "publish_rate": 2, "payload_size": 100, "start_sec": 1},
    {"name": "echo", "behaviours": "round-trip", "client_count": 2, "topics": "echo/$clientid"}
  ],
  "parameters": {"duration_sec": 10, "publish_rate": 5, "keep_alive_sec": 60}
}`

func TestMixedDecode(t *testing.T) {
	t.Parallel()
	s, err := Parse("fleet.json", []byte(fleetJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Type != TypeMixed || !s.Mixed() || len(s.Groups) != 5 {
		t.Fatalf("type %q, %d groups", s.Type, len(s.Groups))
	}
	d, b, c := s.Groups[0], s.Groups[1], s.Groups[3]
	if d.IDPrefix != "mqblast-devices-" || d.PublishRate != 5 || d.KeepAlive != 30*time.Second || b.KeepAlive != time.Minute {
		t.Errorf("defaults: prefix %q rate %v keepalive %v, %v", d.IDPrefix, d.PublishRate, d.KeepAlive, b.KeepAlive)
	}
	if d.Publishers() != 10 || c.Publishers() != 4 || b.Publishers() != 0 || s.Groups[4].Publishers() != 2 {
		t.Errorf("publishers %d %d %d", d.Publishers(), c.Publishers(), b.Publishers())
	}
	if d.Churned() != 20 || d.Churn.CleanSession {
		t.Errorf("churn %d clean %v (want 20, the group's persistent session)", d.Churned(), d.Churn.CleanSession)
	}
	if c.PayloadSize != 100 || d.PayloadSize != MinPayloadSize {
		t.Errorf("payload %d, %d", c.PayloadSize, d.PayloadSize)
	}

	// The effective scenario reads back as the same scenario.
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("effective", js)
	if err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if err := s2.Validate(); err != nil {
		t.Fatal(err)
	}
	p1, p2 := mustNewPlan(t, s), mustNewPlan(t, s2)
	for i := range p1.Len() {
		a, b := p1.Client(i), p2.Client(i)
		a.Group, b.Group = nil, nil
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("client %d after a round trip (-before +after):\n%s", i, diff)
		}
	}

	// --set reaches a group's fields by its name.
	if err := s.Set("groups.devices.client_count", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("groups.devices.churn.at_sec", "2"); err != nil {
		t.Fatal(err)
	}
	if s.Groups[0].ClientCount != 1000 || s.Groups[0].Churn.At != 2*time.Second {
		t.Errorf("after --set: %d clients, storm at %v", s.Groups[0].ClientCount, s.Groups[0].Churn.At)
	}
	err = s.Set("groups.devcies.qos", "1")
	if err == nil || !strings.Contains(err.Error(), `did you mean "devices"`) {
		t.Errorf("--set of an unknown group: %v", err)
	}
}

func mustNewPlan(t *testing.T, s *Scenario) *Plan {
	t.Helper()
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMixedPlan(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, fleetJSON)
	if p.Len() != 210 {
		t.Fatalf("Len %d", p.Len())
	}
	// Devices first: its 10 publishers, then the 190 that only subscribe.
	d0, d9, d10 := p.Client(0), p.Client(9), p.Client(10)
	if d0.Role != RolePubSub || d9.Role != RolePubSub || d10.Role != RoleSubscriber {
		t.Errorf("roles %v %v %v", d0.Role, d9.Role, d10.Role)
	}
	if d0.GroupName != "devices" || d0.GroupID != 0 || d0.ID != "mqblast-devices-0" || d0.Topic != "devices/mqblast-devices-0/telemetry" {
		t.Errorf("device 0: %+v", d0)
	}
	if diff := cmp.Diff([]string{"devices/10/commands"}, d10.Filters); diff != "" {
		t.Error(diff)
	}
	// Device telemetry reaches one backend share and the monitor.
	if d0.Receivers != 2 || d9.Number != 9 || d0.Rate != 5 || d0.KeepAlive != 30*time.Second {
		t.Errorf("device: receivers %d number %d rate %v keepalive %v", d0.Receivers, d9.Number, d0.Rate, d0.KeepAlive)
	}
	if want := 9 * time.Second / 10 / 5; d9.Phase != want {
		t.Errorf("phase %v, want %v", d9.Phase, want)
	}
	if d0.Group.ConnectProperties[len(d0.Group.ConnectProperties)-1].Num != 300 {
		t.Errorf("session expiry not among the CONNECT properties: %+v", d0.Group.ConnectProperties)
	}
	// Commands: numbered after the devices' publishers, to one device each (and the
	// monitor), starting a second late.
	c1 := p.Client(204 + 1)
	if c1.GroupName != "commands" || c1.Role != RolePublisher || c1.Number != 11 || c1.Receivers != 2 ||
		c1.Topic != "devices/1/commands" || c1.Phase != time.Second+time.Second/4/2 || c1.PayloadSize != 100 {
		t.Errorf("command client: %+v", c1)
	}
	e1 := p.Client(209)
	if e1.Role != RoleRoundTrip || e1.Number != 15 || e1.Receivers != 1 || e1.Filters[0] != e1.Topic {
		t.Errorf("echo client: %+v", e1)
	}
	// Streams: a backend member receives device telemetry on the share group's stream;
	// device 1 its own commands only; the monitor everything of the devices.
	backend0 := 200
	for _, c := range []struct {
		client int
		pub    uint32
		kind   StreamKind
		share  int
	}{
		{backend0, 3, StreamExpected, 0},
		{backend0, 11, StreamNotExpected, -1},
		{1, 11, StreamExpected, -1},
		{2, 11, StreamNotExpected, -1},
		{203, 11, StreamExpected, -1},
		{203, 3, StreamExpected, -1},
		{209, 15, StreamExpected, -1},
		{209, 14, StreamNotExpected, -1},
		{204, 3, StreamNotSubscribed, -1},
		{backend0, 99, StreamUnknownPublisher, -1},
	} {
		kind, share := p.Stream(c.client, c.pub)
		if kind != c.kind || share != c.share {
			t.Errorf("Stream(%d, %d) = %v, %d; want %v, %d", c.client, c.pub, kind, share, c.kind, c.share)
		}
	}
	if g := p.GroupOfPublisher(11); g != 3 {
		t.Errorf("GroupOfPublisher(11) = %d", g)
	}
	if g := p.GroupOfClient(205); g != 3 {
		t.Errorf("GroupOfClient(205) = %d", g)
	}
	// The estimate adds the groups up; the receivers of every client agree with it.
	e := p.Estimate()
	if e.Clients != 210 || e.Publishers != 16 || e.Subscribers != 206 {
		t.Errorf("estimate %+v", e)
	}
	sum := 0.0
	for i := range p.Len() {
		if c := p.Client(i); c.Role.Publishes() {
			sum += c.Rate * float64(c.Receivers)
		}
	}
	if want := 10*5*2 + 4*2*2 + 2*5.0; math.Abs(e.ReceivePerSec-want) > 1e-9 || math.Abs(sum-want) > 1e-9 {
		t.Errorf("receive %v, receivers sum %v, want %v", e.ReceivePerSec, sum, want)
	}
	if want := 10*5 + 4*2 + 2*5.0; e.PublishPerSec != want {
		t.Errorf("publish %v, want %v", e.PublishPerSec, want)
	}
}

// TestMixedShards: shards of a mixed plan are disjoint, cover it, keep every client as the
// whole has it, and know which publishers they run and whose copies cross to other shards.
func TestMixedShards(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, fleetJSON)
	whole := map[string]Client{}
	for i := range p.Len() {
		c := p.Client(i)
		whole[c.ID] = c
	}
	const n = 3
	seen := 0
	var rate float64
	for k := range n {
		q := p.Shard(k, n)
		rate += q.Estimate().ReceivePerSec
		// The runs a recorder looks groups up in agree with the plan's own walk.
		clients, pubs, ok := q.GroupTables()
		if !ok || len(clients.End) > len(p.Groups()) {
			t.Fatalf("shard %d: group runs %v, %+v", k, ok, clients)
		}
		for i := -1; i <= q.Len(); i++ {
			want := q.GroupOfClient(i)
			if i < 0 {
				want = -1
			}
			if got := clients.Of(i); got != want {
				t.Errorf("shard %d: client %d in group %d, want %d", k, i, got, want)
			}
		}
		for pub := range uint32(q.Publishers() + 2) {
			if got, want := pubs.Of(int(pub)), q.GroupOfPublisher(pub); got != want {
				t.Errorf("shard %d: publisher %d in group %d, want %d", k, pub, got, want)
			}
		}
		for i := range q.Len() {
			c := q.Client(i)
			w, ok := whole[c.ID]
			if !ok {
				t.Fatalf("shard %d: client %s not in the whole", k, c.ID)
			}
			c.Source, w.Source = 0, 0
			if diff := cmp.Diff(w, c); diff != "" {
				t.Fatalf("shard %d: client %s differs:\n%s", k, c.ID, diff)
			}
			if q.GroupOfClient(i) != c.GroupID {
				t.Errorf("GroupOfClient(%d) = %d, want %d", i, q.GroupOfClient(i), c.GroupID)
			}
			if c.Role.Publishes() && !q.Publishes(c.Number) {
				t.Errorf("shard %d does not know it publishes %d", k, c.Number)
			}
			seen++
		}
		// ReceivedOutside agrees with the streams of the clients of the other shards.
		ids := map[string]bool{}
		for i := range q.Len() {
			ids[q.Client(i).ID] = true
		}
		for pub := uint32(0); pub < 16; pub++ {
			want := false
			for i := range p.Len() {
				if kind, _ := p.Stream(i, pub); kind == StreamExpected && !ids[p.Client(i).ID] {
					want = true
				}
			}
			if got := q.ReceivedOutside(pub); got != want {
				t.Errorf("shard %d: ReceivedOutside(%d) = %v, want %v", k, pub, got, want)
			}
		}
		if got, want := q.ReceivesOutside(), receivesByStreams(q, p.Publishers()); got != want {
			t.Errorf("shard %d: ReceivesOutside = %v, its streams say %v", k, got, want)
		}
	}
	for _, n := range []int{2, 5, 11} {
		for k := range n {
			q := p.Shard(k, n)
			if got, want := q.ReceivesOutside(), receivesByStreams(q, p.Publishers()); got != want {
				t.Errorf("shard %d/%d: ReceivesOutside = %v, its streams say %v", k, n, got, want)
			}
		}
	}
	if p.ReceivesOutside() {
		t.Error("the whole plan receives nothing from outside itself")
	}
	if seen != p.Len() {
		t.Errorf("shards hold %d clients, want %d", seen, p.Len())
	}
	if e := p.Estimate(); math.Abs(rate-e.ReceivePerSec) > 1e-9 {
		t.Errorf("shards receive %v/s, the whole %v/s", rate, e.ReceivePerSec)
	}
	if p.ReceivedOutside(0) {
		t.Error("the whole plan sends nothing outside itself")
	}
}

// TestBuiltinFleets: the iot-fleet built-ins are what docs/scenario.md says they are.
func TestBuiltinFleets(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		devices int
		at      time.Duration
	}{{"iot-fleet-10K", 10_000, 20 * time.Second}, {"iot-fleet-100K", 100_000, time.Minute}, {"iot-fleet-1M", 1_000_000, 2 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := Builtin(c.name)
			if !ok {
				t.Fatal("not found")
			}
			p := mustNewPlan(t, s)
			d := s.Groups[0]
			if d.Name != "devices" || d.ClientCount != c.devices || d.Publishers() != c.devices/100 || d.KeepAlive != time.Minute ||
				d.QoS != 1 || d.PublishRate != 1 || d.Churned() != c.devices/10 || d.Churn.At != c.at {
				t.Errorf("devices: %+v", d)
			}
			if b := s.Groups[1]; b.Name != "backend" || b.ClientCount != 10 || !strings.HasPrefix(b.Filters[0], "$share/") {
				t.Errorf("backend: %+v", b)
			}
			e := p.Estimate()
			// Each telemetry message reaches the backend's share group once; each command its
			// one device.
			if want := float64(c.devices/100 + 10); e.ReceivePerSec != want || e.PublishPerSec != want {
				t.Errorf("publish %v/s receive %v/s, want %v", e.PublishPerSec, e.ReceivePerSec, want)
			}
			if e.Clients != c.devices+20 {
				t.Errorf("clients %d", e.Clients)
			}
			if c.devices == 10_000 && s.Parameters.Duration != time.Minute {
				t.Errorf("duration %v", s.Parameters.Duration)
			}
		})
	}
}

// TestGroupRuns: runs of a table find every index's group as the table does.
func TestGroupRuns(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		table := make([]uint8, rng.IntN(40))
		for i := range table {
			if i == 0 || rng.IntN(4) == 0 {
				table[i] = uint8(rng.IntN(3))
			} else {
				table[i] = table[i-1]
			}
		}
		g := RunsOf(table)
		for i := -2; i < len(table)+2; i++ {
			want := -1
			if i >= 0 && i < len(table) {
				want = int(table[i])
			}
			if got := g.Of(i); got != want {
				t.Fatalf("%v: index %d in group %d, want %d (runs %+v)", table, i, got, want, g)
			}
		}
		for k := 1; k < len(g.GID); k++ {
			if g.GID[k] == g.GID[k-1] {
				t.Fatalf("%v: runs %+v not merged", table, g)
			}
		}
	}
}

// TestBuiltinProductionShaped: production-shaped-1K uses every production-shaped piece: a
// client id and a username per device, a JSON template measured by a text mark, Poisson
// arrivals and a topic tree; gateways with bursts, mixed sizes and two topics each; and the
// wildcard subscribers expect every copy.
func TestBuiltinProductionShaped(t *testing.T) {
	t.Parallel()
	s, ok := Builtin("production-shaped-1K")
	if !ok {
		t.Fatal("not found")
	}
	p := mustNewPlan(t, s)
	dev, gw := p.Client(7), p.Client(1003)
	if dev.GroupName != "devices" || dev.ID != "dev-7" || dev.Username != "dev-7" || dev.Group.Arrival != ArrivalPoisson ||
		dev.Measure != MeasureMark || dev.PayloadTemplate == nil || dev.Topic != "site/7/line/3/dev/7" || dev.Receivers != 4 {
		t.Errorf("device 7: %s %q user %q arrival %q measure %v template %v topic %q receivers %d",
			dev.GroupName, dev.ID, dev.Username, dev.Group.Arrival, dev.Measure, dev.PayloadTemplate != nil, dev.Topic, dev.Receivers)
	}
	if gw.GroupName != "gateways" || gw.ID != "gw-3" || gw.Group.Arrival != ArrivalBurst || gw.Group.BurstSize != 5 ||
		gw.PayloadSizes == nil || len(gw.Topics) != 2 || gw.Receivers != 1 {
		t.Errorf("gateway 3: %s %q arrival %q burst %d sizes %v topics %q receivers %d",
			gw.GroupName, gw.ID, gw.Group.Arrival, gw.Group.BurstSize, gw.PayloadSizes != nil, gw.Topics, gw.Receivers)
	}
	// 1,000 devices at 0.5/s each to 4 backend readers, 20 gateways at 1/s each to one.
	if e := p.Estimate(); e.PublishPerSec != 520 || e.ReceivePerSec != 2020 || e.Clients != 1025 {
		t.Errorf("publish %v/s receive %v/s clients %d, want 520, 2020, 1025", e.PublishPerSec, e.ReceivePerSec, e.Clients)
	}
}
