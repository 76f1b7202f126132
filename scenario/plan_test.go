package scenario

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustPlan(t testing.TB, name string) *Plan {
	t.Helper()
	s, ok := Builtin(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mustPlanOf plans a built-in scenario, or a file when name ends in ".json".
func mustPlanOf(t *testing.T, name string) *Plan {
	t.Helper()
	if !strings.HasSuffix(name, ".json") {
		return mustPlan(t, name)
	}
	s, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustParsePlan(t *testing.T, js string) *Plan {
	t.Helper()
	s, err := Parse("t.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// withRun completes the clients of a plain scenario's plan with what every one of them
// takes from the run: the parameters' keepalive and payload size, its publisher number,
// no server of its own.
func withRun(p *Plan, cs []Client) []Client {
	par := p.Scenario().Parameters
	for i := range cs {
		c := &cs[i]
		c.KeepAlive, c.PayloadSize, c.OwnBroker = par.KeepAlive, par.PayloadSize, -1
		if c.Role.Publishes() {
			c.Number = uint32(c.Index)
		}
	}
	return cs
}

func TestClientFanOut(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, "singlenode-fanout-5-1000-5-250K")
	got := []Client{p.Client(0), p.Client(999), p.Client(1000), p.Client(1004)}
	g := p.Scenario()
	want := withRun(p, []Client{
		{Role: RoleSubscriber, GroupName: "subscribers", Group: g.Subscribers, Index: 0, ID: "test-subscriber-0",
			Filters: []string{"test/0", "test/1", "test/2", "test/3", "test/4"}, Source: -1},
		{Role: RoleSubscriber, GroupName: "subscribers", Group: g.Subscribers, Index: 999, ID: "test-subscriber-999",
			Filters: []string{"test/0", "test/1", "test/2", "test/3", "test/4"}, Source: -1},
		{Role: RolePublisher, GroupName: "publishers", Group: g.Publishers, Index: 0, ID: "test-publisher-0",
			Topic: "test/0", Rate: 50, Receivers: 1000, Source: -1},
		{Role: RolePublisher, GroupName: "publishers", Group: g.Publishers, Index: 4, ID: "test-publisher-4",
			Topic: "test/4", Rate: 50, Phase: 16 * time.Millisecond, Receivers: 1000, Source: -1},
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clients (-want +got):\n%s", diff)
	}
	for _, i := range []int{-1, p.Len()} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Client(%d) did not panic", i)
				}
			}()
			p.Client(i)
		}()
	}
}

func TestClientRoles(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, "quick-roundtrip-10")
	c := p.Client(3)
	if c.Role != RoleRoundTrip || c.Topic != "ping/quick-ping-3" || len(c.Filters) != 1 || c.Filters[0] != c.Topic || c.Receivers != 1 {
		t.Errorf("round-trip client %+v", c)
	}
	p = mustPlan(t, "quick-conn-100")
	c = p.Client(99)
	if c.Role != RoleIdle || c.Topic != "" || c.Filters != nil || c.Rate != 0 || c.ID != "quick-conn-99" {
		t.Errorf("idle client %+v", c)
	}
	if RoleIdle.Publishes() || RoleIdle.Subscribes() || !RoleRoundTrip.Publishes() || !RoleRoundTrip.Subscribes() {
		t.Error("role predicates")
	}
	if RoleSubscriber.String() != "subscriber" || Role(9).String() != "Role(9)" {
		t.Error("role names")
	}
}

// TestClientPublish checks a Publish plan: publishers only, each with its own topic and
// phase, and no receivers.
func TestClientPublish(t *testing.T) {
	t.Parallel()
	p := mustPlanOf(t, "testdata/good/publish.json")
	s := p.Scenario()
	if p.Len() != 10 {
		t.Fatalf("Len = %d, want 10 (the subscriber group of 0 adds none)", p.Len())
	}
	got := []Client{p.Client(0), p.Client(9)}
	want := withRun(p, []Client{
		{Role: RolePublisher, GroupName: "publishers", Group: s.Publishers, Index: 0, ID: "bench-pub-0",
			Topic: "bench/0/bench-pub-0", Rate: 5, Source: -1},
		{Role: RolePublisher, GroupName: "publishers", Group: s.Publishers, Index: 9, ID: "bench-pub-9",
			Topic: "bench/9/bench-pub-9", Rate: 5, Phase: 180 * time.Millisecond, Source: -1},
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clients (-want +got):\n%s", diff)
	}
	if c := got[0]; !c.Role.Publishes() || c.Role.Subscribes() || !c.Group.Retain || c.Group.QoS != 1 {
		t.Errorf("publisher %+v", c)
	}
	// Topics bench/N/bench-pub-N are 19 bytes. A QoS 1 v5 PUBLISH with its 5-byte property
	// (message_expiry_interval) has remaining length 2 + 19 + 2 + 1 + 5 + 64 = 93: 95 bytes
	// out; a 4-byte PUBACK comes in for each, and nothing else.
	e := p.Estimate()
	wantE := Estimate{
		Clients: 10, Publishers: 10, Connections: 10, FileDescriptors: 10 + FDOverhead, Topics: 10,
		PublishPerSec: 50, BytesOutPerSec: 50 * 95, BytesInPerSec: 50 * 4,
		MemoryBytes:       MemoryBase + 10*MemoryPerConnection + 10*5*inflightEntry,
		SocketMemoryBytes: 10 * SocketMemoryPerConnection,
		ConnectTime:       10 * time.Millisecond,
	}
	if diff := cmp.Diff(wantE, e); diff != "" {
		t.Errorf("estimate (-want +got):\n%s", diff)
	}
}

// TestClientSubscribe checks a Subscribe plan: subscribers only, with their filters
// expanded, publishing nothing.
func TestClientSubscribe(t *testing.T) {
	t.Parallel()
	p := mustPlanOf(t, "testdata/good/subscribe.json")
	s := p.Scenario()
	if p.Len() != 20 {
		t.Fatalf("Len = %d, want 20", p.Len())
	}
	got := []Client{p.Client(0), p.Client(19)}
	want := withRun(p, []Client{
		{Role: RoleSubscriber, GroupName: "subscribers", Group: s.Subscribers, Index: 0, ID: "bench-sub-0",
			Filters: []string{"bench/0/#", "ctl/bench-sub-0"}, Source: -1},
		{Role: RoleSubscriber, GroupName: "subscribers", Group: s.Subscribers, Index: 19, ID: "bench-sub-19",
			Filters: []string{"bench/19/#", "ctl/bench-sub-19"}, Source: -1},
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("clients (-want +got):\n%s", diff)
	}
	if c := got[0]; c.Role.Publishes() || !c.Role.Subscribes() || c.Group.QoS != 2 {
		t.Errorf("subscriber %+v", c)
	}
	par := s.Parameters
	if par.PublishRate != 0 || par.Warmup != 0 || par.Drain != 0 || par.MessageCount != 0 {
		t.Errorf("Subscribe defaults: rate %v warmup %v drain %v count %d", par.PublishRate, par.Warmup, par.Drain, par.MessageCount)
	}
	e := p.Estimate()
	wantE := Estimate{
		Clients: 20, Subscribers: 20, Connections: 20, FileDescriptors: 20 + FDOverhead,
		MemoryBytes:       MemoryBase + 20*MemoryPerConnection,
		SocketMemoryBytes: 20 * SocketMemoryPerConnection,
		ConnectTime:       2 * time.Second,
	}
	if diff := cmp.Diff(wantE, e); diff != "" {
		t.Errorf("estimate (-want +got):\n%s", diff)
	}
	if e := p.Shard(1, 3).Estimate(); e.Subscribers != 7 || e.Publishers != 0 || e.ReceivePerSec != 0 {
		t.Errorf("shard estimate %+v", e)
	}
}

// TestSetTypeSubscribe turns a Fan-Out into a Subscribe scenario with Set: the publisher
// group must go, and the publish rate the file gives with it.
func TestSetTypeSubscribe(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-fanout-1-100")
	if err := s.Set("type", "Subscribe"); err != nil {
		t.Fatal(err)
	}
	err := s.Validate()
	var paths []string
	for _, e := range Errors(err) {
		paths = append(paths, e.Path)
	}
	if diff := cmp.Diff([]string{"publishers", "parameters.publish_rate"}, paths); diff != "" {
		t.Errorf("problems (-want +got):\n%s\n%v", diff, err)
	}
	for _, kv := range [][2]string{{"publishers", "null"}, {"parameters.publish_rate", "0"}} {
		if err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 100 || p.Client(0).Role != RoleSubscriber || p.Estimate().Publishers != 0 {
		t.Errorf("plan of %d clients, first %+v", p.Len(), p.Client(0))
	}
}

// TestPhases checks that publishers' phases interleave evenly within one period, so that the
// aggregate schedule is smooth.
func TestPhases(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, `{"type": "Fan-In", "publishers": {"client_count": 8, "topics": "t/$clientindex"},
		"subscribers": {"client_count": 1, "topics": "t/+"}, "parameters": {"publish_rate": 4}}`)
	var got []time.Duration
	for i := range p.Len() {
		if c := p.Client(i); c.Role == RolePublisher {
			got = append(got, c.Phase)
		}
	}
	want := []time.Duration{0, 31250 * time.Microsecond, 62500 * time.Microsecond, 93750 * time.Microsecond,
		125 * time.Millisecond, 156250 * time.Microsecond, 187500 * time.Microsecond, 218750 * time.Microsecond}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	// Shards keep the phases of the whole plan.
	if c := p.Shard(1, 2).Client(1); c.Index != 4 || c.Phase != 125*time.Millisecond {
		t.Errorf("shard client %+v", c)
	}
}

func TestDeliveries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ     string
		subs    int
		prefix  string
		filters string // JSON array
		topic   string
		want    int
	}{
		{"Fan-Out", 10, "s", `["a/b"]`, "a/b", 10},
		{"Fan-Out", 10, "s", `["a/+"]`, "a/b", 10},
		{"Fan-Out", 10, "s", `["a/#"]`, "a", 10},
		{"Fan-Out", 10, "s", `["#"]`, "a/b/c", 10},
		{"Fan-Out", 10, "s", `["#"]`, "$SYS/x", 0},
		{"Fan-Out", 10, "s", `["+/x"]`, "$SYS/x", 0},
		{"Fan-Out", 10, "s", `["a/+"]`, "a/b/c", 0},
		{"Fan-Out", 10, "s", `["a/+", "a/#"]`, "a/b", 10},
		{"Fan-Out", 10, "s", `["a/b/"]`, "a/b/", 10},
		{"Fan-Out", 10, "s", `["a/b"]`, "a/b/", 0},
		{"Fan-Out", 10, "s", `["+/+"]`, "/a", 10},
		{"Point-To-Point", 10, "s", `["t/$clientindex"]`, "t/7", 1},
		{"Point-To-Point", 10, "s", `["t/$clientindex"]`, "t/10", 0},
		{"Point-To-Point", 10, "s", `["t/$clientindex"]`, "t/07", 0},
		{"Point-To-Point", 10, "s", `["t/$clientindex"]`, "t/x", 0},
		{"Point-To-Point", 10, "sub-", `["t/$clientid/in"]`, "t/sub-3/in", 1},
		{"Point-To-Point", 10, "sub-", `["t/$clientid/in"]`, "t/pub-3/in", 0},
		{"Point-To-Point", 100, "s", `["t$clientindex$clientindex"]`, "t1212", 1},
		{"Point-To-Point", 100, "s", `["t$clientindex$clientindex"]`, "t1213", 0},
		{"Point-To-Point", 100, "s", `["d/$clientindex/+/$clientindex"]`, "d/5/x/5", 1},
		{"Point-To-Point", 100, "s", `["d/$clientindex/+/$clientindex"]`, "d/5/x/6", 0},
		{"Point-To-Point", 100, "s", `["d/$clientindex/#"]`, "d/42/a/b", 1},
		{"Point-To-Point", 100, "s", `["t/$clientindex", "t/$clientindex"]`, "t/4", 1},
		{"Point-To-Point", 100, "s", `["t/$clientindex", "t/+"]`, "t/4", 100},
		{"Point-To-Point", 10, "dev-$clientindex-eu", `["t/$clientid/in"]`, "t/dev-3-eu/in", 1},
		{"Point-To-Point", 10, "dev-$clientindex-eu", `["t/$clientid/in"]`, "t/dev-3/in", 0},
		{"Point-To-Point", 10, "dev-$clientindex-eu", `["t/$clientid/in"]`, "t/dev-3-eu-eu/in", 0},
		{"Point-To-Point", 100, "d$clientindex:3", `["t/$clientid"]`, "t/d007", 1},
		{"Point-To-Point", 100, "d$clientindex:3", `["t/$clientid"]`, "t/d099", 1},
		{"Point-To-Point", 100, "d$clientindex:3", `["t/$clientid"]`, "t/d7", 0},
		{"Point-To-Point", 100, "d$clientindex:3", `["t/$clientid"]`, "t/d0007", 0},
		{"Point-To-Point", 100, "s", `["t/$clientindex:2/x"]`, "t/07/x", 1},
		{"Point-To-Point", 100, "s", `["t/$clientindex:2/x"]`, "t/7/x", 0},
		{"Point-To-Point", 100, "s", `["t/$clientindex:2/x"]`, "t/99/x", 1},
		{"Shared-Subscription", 5, "s", `["$share/g/t/#"]`, "t/4", 1},
		{"Shared-Subscription", 5, "s", `["$share/g/t/#", "$share/h/t/+"]`, "t/4", 2},
		{"Shared-Subscription", 5, "s", `["$share/g/t/#", "$share/g/t/+"]`, "t/4", 1},
		{"Shared-Subscription", 5, "s", `["$share/g/t/#", "t/4"]`, "t/4", 6},
		{"Shared-Subscription", 5, "s", `["$share/g/u/#"]`, "t/4", 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.filters, c.topic), func(t *testing.T) {
			idField := "id_prefix"
			if strings.Contains(c.prefix, "$") {
				idField = "client_id"
			}
			js := fmt.Sprintf(`{"type": %q, "publishers": {"client_count": %d, "topics": "p"},
				"subscribers": {"client_count": %d, %q: %q, "topics": %s}}`,
				"Fan-In", c.subs+1, c.subs, idField, c.prefix, c.filters)
			s, err := Parse("t.json", []byte(js))
			if err != nil {
				t.Fatal(err)
			}
			s.applyIdentity() // Validate's: client_id gives the ids
			var buf [2]ClientGroup
			m := newMatcher(listOf(&buf, s.plainGroups(&buf)), true)
			if got := m.deliveries(c.topic); got != c.want {
				t.Errorf("deliveries(%q) = %d, want %d", c.topic, got, c.want)
			}
		})
	}
}

func TestIDsCollide(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a    string
		na   int
		b    string
		nb   int
		want bool
	}{
		{"p-", 10, "s-", 10, false},
		{"x", 10, "x", 10, true},
		{"c", 10, "c1", 10, false},   // c10 would need 11 c-clients
		{"c", 11, "c1", 10, true},    // c10 = c1+"0"
		{"c1", 10, "c", 11, true},    // either order
		{"c", 1000, "c0", 10, false}, // c0N never equals cN (no leading zeros)
		{"c", 1000, "c-", 10, false},
		{"", 100, "7", 1, true}, // "70" in both
	}
	for _, c := range cases {
		if got := idsCollide(c.a, c.na, c.b, c.nb); got != c.want {
			t.Errorf("idsCollide(%q, %d, %q, %d) = %v, want %v", c.a, c.na, c.b, c.nb, got, c.want)
		}
	}
}

// TestShards checks for n = 1..17 that the shards of a plan are disjoint, cover it, keep
// every client's id, topics, phase and receivers, and split each group evenly.
func TestShards(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"quick-fanout-1-100", "quick-p2p-100", "quick-sharedsub-100-5",
		"quick-roundtrip-10", "singlenode-fanout-5-1000-5-250K", "quick-conn-100",
		"testdata/good/publish.json", "testdata/good/subscribe.json"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			p := mustPlanOf(t, name)
			whole := make(map[string]Client, p.Len())
			for i := range p.Len() {
				c := p.Client(i)
				c.Source = 0
				whole[c.ID] = c
			}
			if len(whole) != p.Len() {
				t.Fatalf("%d distinct ids for %d clients", len(whole), p.Len())
			}
			for n := 1; n <= 17; n++ {
				seen := make(map[string]int, p.Len())
				perGroup := map[string][]int{}
				for i := range n {
					sh := p.Shard(i, n)
					groups := map[string]int{}
					for k := range sh.Len() {
						c := sh.Client(k)
						c.Source = 0
						if prev, dup := seen[c.ID]; dup {
							t.Fatalf("n=%d: %s in shards %d and %d", n, c.ID, prev, i)
						}
						seen[c.ID] = i
						if diff := cmp.Diff(whole[c.ID], c); diff != "" {
							t.Fatalf("n=%d shard %d: client differs from the whole plan's (-whole +shard):\n%s", n, i, diff)
						}
						groups[c.GroupName]++
					}
					for g, k := range groups {
						perGroup[g] = append(perGroup[g], k)
					}
				}
				if len(seen) != p.Len() {
					t.Fatalf("n=%d: shards hold %d of %d clients", n, len(seen), p.Len())
				}
				for g, counts := range perGroup {
					lo, hi := counts[0], counts[0]
					for _, k := range counts {
						lo, hi = min(lo, k), max(hi, k)
					}
					if hi-lo > 1 {
						t.Errorf("n=%d: %s split unevenly: %v", n, g, counts)
					}
				}
			}
		})
	}
}

// TestShardsLarge checks the 1M-client plan by ranges: each shard's groups are contiguous and
// follow each other.
func TestShardsLarge(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, "singlenode-conn-tcp-1M-5K")
	for n := 1; n <= 17; n++ {
		next, total := 0, 0
		rate := 0.0
		for i := range n {
			sh := p.Shard(i, n)
			if sh.Len() == 0 {
				t.Fatalf("n=%d: empty shard %d", n, i)
			}
			first, last := sh.Client(0), sh.Client(sh.Len()-1)
			if first.Index != next || last.Index != next+sh.Len()-1 {
				t.Fatalf("n=%d shard %d: indices %d..%d, want from %d", n, i, first.Index, last.Index, next)
			}
			next += sh.Len()
			total += sh.Len()
			rate += sh.ConnectRate()
			if e := sh.Estimate(); e.Connections != sh.Len() {
				t.Fatalf("estimate %+v", e)
			}
		}
		if total != 1_000_000 || next != 1_000_000 {
			t.Fatalf("n=%d: %d clients", n, total)
		}
		if rate < 4999.999 || rate > 5000.001 {
			t.Errorf("n=%d: shard connect rates add to %v, want 5000", n, rate)
		}
	}
	// A shard of a shard is a shard.
	sh := p.Shard(2, 3).Shard(1, 2)
	if sh.Len() != 166_667 || sh.Client(0).Index != 833_333 {
		t.Errorf("shard of shard: len %d first %d", sh.Len(), sh.Client(0).Index)
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 2}, {2, 2}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "out of range") {
					t.Errorf("Shard(%d, %d) did not panic: %v", bad[0], bad[1], r)
				}
			}()
			p.Shard(bad[0], bad[1])
		}()
	}
}

// TestPartTurns: Part cuts the plan as Shard does, and gives the parts turns at dialing:
// the parts of one lane follow each other without a gap or an overlap at the lane's rate,
// the lanes' rates add up to the plan's, every lane ends with the plan's connect phase, and
// the host dials at the plan's rate throughout. With as many lanes as parts, or no connect
// rate, a part is its shard.
func TestPartTurns(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"singlenode-conn-tcp-1M-5K", "iot-fleet-1M", "quick-p2p-100"} {
		p := mustPlan(t, name)
		phase := float64(p.Len()) / p.ConnectRate()
		for _, c := range [][2]int{{51, 2}, {51, 3}, {6, 2}, {7, 4}, {2, 2}, {5, 9}, {3, 1}} {
			n, lanes := c[0], c[1]
			var sum float64
			rates := map[int]float64{}
			for i := range n {
				pt, sh := p.Part(i, n, lanes), p.Shard(i, n)
				if pt.Len() != sh.Len() || !cmp.Equal(pt.Client(0), sh.Client(0)) || !cmp.Equal(pt.Client(pt.Len()-1), sh.Client(sh.Len()-1)) {
					t.Fatalf("%s n=%d lanes=%d: part %d has other clients than its shard", name, n, lanes, i)
				}
				if lanes >= n {
					if pt.ConnectRate() != sh.ConnectRate() || pt.ConnectDelay() != 0 {
						t.Errorf("%s n=%d lanes=%d: part %d dials at %v after %v, want its shard's %v from the start",
							name, n, lanes, i, pt.ConnectRate(), pt.ConnectDelay(), sh.ConnectRate())
					}
					continue
				}
				lane := i % lanes
				if r, ok := rates[lane]; ok && r != pt.ConnectRate() {
					t.Errorf("%s n=%d lanes=%d: part %d at %v, its lane at %v", name, n, lanes, i, pt.ConnectRate(), r)
				} else if !ok {
					rates[lane] = pt.ConnectRate()
					sum += pt.ConnectRate()
				}
				end := pt.ConnectDelay().Seconds() + float64(pt.Len())/pt.ConnectRate()
				if i+lanes < n {
					if next := p.Part(i+lanes, n, lanes).ConnectDelay().Seconds(); math.Abs(next-end) > 1e-6 {
						t.Errorf("%s n=%d lanes=%d: part %d ends at %.6f s, the next of its lane starts at %.6f s", name, n, lanes, i, end, next)
					}
				} else if math.Abs(end-phase) > 1e-6 {
					t.Errorf("%s n=%d lanes=%d: lane %d ends at %.6f s, the plan's connect phase at %.6f s", name, n, lanes, lane, end, phase)
				}
				if e := pt.Estimate(); math.Abs(e.ConnectTime.Seconds()-end) > 1e-6 {
					t.Errorf("%s n=%d lanes=%d: part %d's estimated connect time %v, want %.6f s", name, n, lanes, i, e.ConnectTime, end)
				}
			}
			if lanes < n && math.Abs(sum-p.ConnectRate()) > 1e-6 {
				t.Errorf("%s n=%d lanes=%d: lane rates add to %v, want %v", name, n, lanes, sum, p.ConnectRate())
			}
		}
	}
	// No connect rate: every part dials at once, as its shard.
	p := mustPlan(t, "quick-conn-100")
	p.shared.s.Parameters.ConnectionRate = 0
	if pt := p.Part(3, 4, 1); pt.ConnectRate() != 0 || pt.ConnectDelay() != 0 {
		t.Errorf("no connect rate: part at %v after %v", pt.ConnectRate(), pt.ConnectDelay())
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, "singlenode-p2p-50K-50K-50K-50K")
	e := p.Estimate()
	// Topics test/topic0 .. test/topic49999: 10 + 238890/50000 = 14.78 bytes on average,
	// rounded to 15. A QoS 1 PUBLISH is 1 + 1 (remaining length 35) + 2 + 15 + 2 + 16 = 37
	// bytes; a PUBACK 4.
	want := Estimate{
		Clients: 100_000, Publishers: 50_000, Subscribers: 50_000, Connections: 100_000,
		FileDescriptors: 100_000 + FDOverhead, Topics: 50_000,
		PublishPerSec: 50_000, ReceivePerSec: 50_000,
		BytesOutPerSec: 50_000*37 + 50_000*4, BytesInPerSec: 50_000*37 + 50_000*4,
		MemoryBytes:       MemoryBase + 100_000*MemoryPerConnection + 50_000*1*inflightEntry, // 1 msg/s in flight
		SocketMemoryBytes: 100_000 * SocketMemoryPerConnection,
		ConnectTime:       20 * time.Second,
	}
	if diff := cmp.Diff(want, e); diff != "" {
		t.Errorf("estimate (-want +got):\n%s", diff)
	}
	// Shards add up to the whole.
	var sum Estimate
	for i := range 7 {
		se := p.Shard(i, 7).Estimate()
		sum.Connections += se.Connections
		sum.PublishPerSec += se.PublishPerSec
		sum.ReceivePerSec += se.ReceivePerSec
		sum.BytesOutPerSec += se.BytesOutPerSec
	}
	if sum.Connections != e.Connections || !near(sum.PublishPerSec, e.PublishPerSec) ||
		!near(sum.ReceivePerSec, e.ReceivePerSec) || !near(sum.BytesOutPerSec, e.BytesOutPerSec) {
		t.Errorf("shards add to %+v, want %+v", sum, e)
	}
	// QoS 2 and big payloads.
	e = mustPlan(t, "roundtrip-200-64K").Estimate()
	if e.BytesOutPerSec < 200*65536 || e.MemoryBytes < 200*2*65536 {
		t.Errorf("64K round trip: %+v", e)
	}
}

func TestTotalDigits(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{0: 0, 1: 1, 10: 10, 11: 12, 100: 190, 50000: 238890, 1_000_000: 5_888_890} {
		if got := totalDigits(n, 0); got != want {
			t.Errorf("totalDigits(%d) = %d, want %d", n, got, want)
		}
	}
	for _, n := range []int{1, 10, 999, 1000, 1001, 123456} { // zero-padded to 3 digits: counted one by one
		sum := 0
		for j := range n {
			sum += max(len(strconv.Itoa(j)), 3)
		}
		if got := totalDigits(n, 3); got != sum {
			t.Errorf("totalDigits(%d, 3) = %d, want %d", n, got, sum)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-6*b && b-a < 1e-6*b }

// TestReceivedOutside: which publishers a shard runs, and which of its own have receivers
// in other shards: none for a P2P shard (each pair in one shard), a whole plan or a
// Round-Trip shard; every publisher of a fan-out or shared-subscription shard; for a
// fan-in, every publisher but in the shard that holds the one subscriber.
func TestReceivedOutside(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		outside func(shard int) bool
	}{{"quick-p2p-100", func(int) bool { return false }}, {"quick-roundtrip-10", func(int) bool { return false }},
		{"quick-fanout-1-100", func(int) bool { return true }}, {"quick-sharedsub-100-5", func(int) bool { return true }},
		{"quick-fanin-100-1", func(i int) bool { return i != 2 }}} {
		p := mustPlan(t, c.name)
		pubs := p.Scenario().Publishers.ClientCount
		for i := range 3 {
			sh := p.Shard(i, 3)
			for pub := range pubs {
				if got, want := sh.Publishes(uint32(pub)), pubs*i/3 <= pub && pub < pubs*(i+1)/3; got != want {
					t.Errorf("%s shard %d/3: Publishes(%d) = %v, want %v", c.name, i, pub, got, want)
				}
				if got := sh.ReceivedOutside(uint32(pub)); sh.Publishes(uint32(pub)) && got != c.outside(i) {
					t.Errorf("%s shard %d/3: ReceivedOutside(%d) = %v, want %v", c.name, i, pub, got, c.outside(i))
				}
				if p.ReceivedOutside(uint32(pub)) || !p.Publishes(uint32(pub)) {
					t.Errorf("%s whole: publisher %d: outside %v, publishes %v", c.name, pub, p.ReceivedOutside(uint32(pub)), p.Publishes(uint32(pub)))
				}
			}
		}
		if p.ReceivesOutside() {
			t.Errorf("%s whole: ReceivesOutside", c.name)
		}
		for _, n := range []int{2, 3, 7} {
			for i := range n {
				sh := p.Shard(i, n)
				if got, want := sh.ReceivesOutside(), receivesByStreams(sh, pubs); got != want {
					t.Errorf("%s shard %d/%d: ReceivesOutside = %v, its streams say %v", c.name, i, n, got, want)
				}
			}
		}
	}
	// Subscribers of one publisher each, by their own filters, not sharded with it.
	q := mustParsePlan(t, `{"type": "Fan-Out", "publishers": {"client_count": 4, "topics": "t/$clientindex"},
		"subscribers": {"client_count": 6, "topics": "t/$clientindex"}}`)
	some := 0
	for _, n := range []int{2, 3, 4} {
		for i := range n {
			sh := q.Shard(i, n)
			got, want := sh.ReceivesOutside(), receivesByStreams(sh, 4)
			if got != want {
				t.Errorf("own filters: shard %d/%d: ReceivesOutside = %v, its streams say %v", i, n, got, want)
			}
			if got {
				some++
			}
		}
	}
	if some == 0 {
		t.Error("own filters: no shard receives from outside: the case tests nothing")
	}
	// The fan-in's one subscriber is in the last shard: it alone receives from outside.
	p := mustPlan(t, "quick-fanin-100-1")
	for i := range 3 {
		if got := p.Shard(i, 3).ReceivesOutside(); got != (i == 2) {
			t.Errorf("quick-fanin-100-1 shard %d/3: ReceivesOutside = %v", i, got)
		}
	}
}

// receivesByStreams is ReceivesOutside by its definition: a client of shard q has an
// expected stream from one of the whole's pubs publishers that q does not run.
func receivesByStreams(q *Plan, pubs int) bool {
	for i := range q.Len() {
		for pub := range uint32(pubs) {
			if kind, _ := q.Stream(i, pub); kind == StreamExpected && !q.Publishes(pub) {
				return true
			}
		}
	}
	return false
}

// TestHoldsAndPayload: Holds is a Connections file or groups without a publisher (but a
// Subscribe file, which receives what others publish), and MaxPayloadSize the largest of
// the parameters' payload size and the publishing groups', for every scenario of the
// golden dumps.
func TestHoldsAndPayload(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases(t) {
		p, err := NewPlan(c.s)
		if err != nil {
			t.Fatal(err)
		}
		s := p.Scenario()
		if want := s.Type == TypeConnections || (s.Mixed() && p.Publishers() == 0); p.Holds() != want {
			t.Errorf("%s: Holds = %v, want %v", c.name, p.Holds(), want)
		}
		want := s.Parameters.PayloadSize
		for _, g := range s.Groups {
			if g.Publishes() {
				want = max(want, g.PayloadSize)
			}
		}
		if got := p.MaxPayloadSize(); got != want {
			t.Errorf("%s: MaxPayloadSize = %d, want %d", c.name, got, want)
		}
	}
}
