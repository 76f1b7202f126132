package scenario

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// count reads a count as the Open MQTT Benchmark Suite writes it: 50K, 1M, 1000.
func count(t *testing.T, s string) float64 {
	t.Helper()
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1e3, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1e6, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad count %q in a built-in name", s)
	}
	return n * mult
}

// want is what a built-in scenario's name encodes.
type want struct {
	typ                  Type
	pubs, subs, topics   float64
	receive, connectRate float64
	publish              float64 // 0: not encoded
	duration             time.Duration
	qos                  byte
	payload              int
	version              Version
}

var (
	msgName  = regexp.MustCompile(`^(?:singlenode-)?(fanout|p2p|sharedsub)-(\w+)-(\w+)-(\w+)-(\w+)$`)
	connName = regexp.MustCompile(`^singlenode-conn-tcp-(\w+)-(\w+)$`)
)

// quickWant lists the built-ins whose names do not follow the suite's pattern.
var quickWant = map[string]want{
	"quick-conn-100":        {typ: TypeConnections, pubs: 100, connectRate: 100, duration: 5 * time.Second},
	"quick-p2p-100":         {typ: TypePointToPoint, pubs: 100, subs: 100, topics: 100, publish: 1000, receive: 1000, duration: 10 * time.Second, qos: 1},
	"quick-fanout-1-100":    {typ: TypeFanOut, pubs: 1, subs: 100, topics: 1, publish: 10, receive: 1000, duration: 10 * time.Second, qos: 1},
	"quick-fanin-100-1":     {typ: TypeFanIn, pubs: 100, subs: 1, topics: 100, publish: 1000, receive: 1000, duration: 10 * time.Second, qos: 1},
	"quick-sharedsub-100-5": {typ: TypeSharedSubscription, pubs: 100, subs: 5, topics: 100, publish: 1000, receive: 1000, duration: 10 * time.Second, qos: 1, version: V5},
	"quick-roundtrip-10":    {typ: TypeRoundTrip, pubs: 10, topics: 10, publish: 100, receive: 100, duration: 10 * time.Second, qos: 1},
	"roundtrip-200-64K":     {typ: TypeRoundTrip, pubs: 200, topics: 200, publish: 200, receive: 200, duration: 5 * time.Minute, qos: 1, payload: 65536},
}

func nameWant(t *testing.T, name string) want {
	t.Helper()
	if w, ok := quickWant[name]; ok {
		return w
	}
	if m := connName.FindStringSubmatch(name); m != nil {
		return want{typ: TypeConnections, pubs: count(t, m[1]), connectRate: count(t, m[2]), qos: 1}
	}
	m := msgName.FindStringSubmatch(name)
	if m == nil {
		t.Fatalf("built-in %q has no known name pattern; add it to quickWant", name)
	}
	w := want{typ: map[string]Type{"fanout": TypeFanOut, "p2p": TypePointToPoint, "sharedsub": TypeSharedSubscription}[m[1]],
		pubs: count(t, m[2]), subs: count(t, m[3]), topics: count(t, m[4]), receive: count(t, m[5]), qos: 1}
	if w.typ == TypeSharedSubscription {
		w.version = V5
	}
	if name == "fanout-20-1000-20-2M" {
		w.qos = 0 // the published EMQX test uses QoS 0
	}
	return w
}

// TestBuiltins checks that every built-in scenario validates, expands to the counts its name
// encodes, and has the suite's parameters.
func TestBuiltins(t *testing.T) {
	t.Parallel()
	names := BuiltinNames()
	if len(names) < 16 {
		t.Fatalf("only %d built-ins: %v", len(names), names)
	}
	infos := Builtins()
	for k, name := range names {
		if strings.HasPrefix(name, "iot-fleet-") {
			continue // TestBuiltinFleets
		}
		if strings.HasPrefix(name, "production-shaped-") {
			continue // TestBuiltinProductionShaped
		}
		t.Run(name, func(t *testing.T) {
			w := nameWant(t, name)
			s, ok := Builtin(name)
			if !ok {
				t.Fatal("Builtin: not found")
			}
			if s.Name != name {
				t.Errorf("name field %q", s.Name)
			}
			if s.HasServer() {
				t.Error("a built-in names a server; run could not start the embedded broker")
			}
			p, err := NewPlan(s)
			if err != nil {
				t.Fatal(err)
			}
			e := p.Estimate()
			check := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-6*want {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			if s.Type != w.typ {
				t.Errorf("type %q, want %q", s.Type, w.typ)
			}
			check("publishers", float64(s.Publishers.ClientCount), w.pubs)
			subs := 0
			if s.Subscribers != nil {
				subs = s.Subscribers.ClientCount
			}
			check("subscribers", float64(subs), w.subs)
			check("connections", float64(e.Connections), w.pubs+w.subs)
			check("plan length", float64(p.Len()), w.pubs+w.subs)
			check("topics", float64(e.Topics), w.topics)
			check("receive rate", e.ReceivePerSec, w.receive)
			if w.publish > 0 {
				check("publish rate", e.PublishPerSec, w.publish)
			}
			if w.connectRate > 0 {
				check("connection rate", s.Parameters.ConnectionRate, w.connectRate)
			}
			par := s.Parameters
			if w.duration == 0 {
				w.duration = 30 * time.Minute
				if par.KeepAlive != 300*time.Second {
					t.Errorf("keepalive %v, want 300s", par.KeepAlive)
				}
			}
			if par.Duration != w.duration {
				t.Errorf("duration %v, want %v", par.Duration, w.duration)
			}
			if w.payload == 0 {
				w.payload = MinPayloadSize
			}
			if s.Type != TypeConnections && par.PayloadSize != w.payload {
				t.Errorf("payload %d, want %d", par.PayloadSize, w.payload)
			}
			if w.version == 0 {
				w.version = V311
			}
			for _, g := range []*Group{s.Publishers, s.Subscribers} {
				if g == nil {
					continue
				}
				if s.Type != TypeConnections && g.QoS != w.qos {
					t.Errorf("QoS %d, want %d", g.QoS, w.qos)
				}
				if g.ProtocolVersion != w.version || !g.CleanSession {
					t.Errorf("version %v clean %v, want %v and clean", g.ProtocolVersion, g.CleanSession, w.version)
				}
			}
			// The per-client view agrees with the estimate: the receivers of every publisher add
			// up to the receive rate.
			if s.Type != TypeConnections && p.Len() <= 200_000 {
				sum := 0.0
				for i := range p.Len() {
					if c := p.Client(i); c.Role.Publishes() {
						sum += c.Rate * float64(c.Receivers)
					}
				}
				check("sum of client receivers", sum, w.receive)
			}
			// The listing and the JSON.
			info := infos[k]
			if info.Name != name || info.Clients != e.Clients || info.ReceivePerSec != e.ReceivePerSec || info.Description == "" {
				t.Errorf("Info %+v", info)
			}
			data, _ := BuiltinJSON(name)
			if !json.Valid(data) {
				t.Error("BuiltinJSON is not JSON")
			}
		})
	}
	if _, ok := Builtin("nosuch"); ok {
		t.Error("Builtin(nosuch) found")
	}
	if _, ok := BuiltinJSON("../scenario.go"); ok {
		t.Error("BuiltinJSON reads outside the library")
	}
}

// TestBuiltinIsFresh checks that a caller's changes do not leak into the library.
func TestBuiltinIsFresh(t *testing.T) {
	t.Parallel()
	s, _ := Builtin("quick-p2p-100")
	s.Publishers.ClientCount = 1
	s2, _ := Builtin("quick-p2p-100")
	if s2.Publishers.ClientCount != 100 {
		t.Error("Builtin returned a shared scenario")
	}
}
