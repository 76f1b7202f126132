package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// craft writes the document testdata/v1/NAME.json changed by edit (on its JSON as decoded)
// into dir as file, and returns its path.
func craft(t *testing.T, dir, name, file string, edit func(doc map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata/v1", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// obj is the object at the dotted path of doc.
func obj(doc map[string]any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		doc = doc[k].(map[string]any)
	}
	return doc
}

// TestReadFileRefusesBadFigures: a document whose counts are negative, whose percentiles
// are negative or out of order, or whose accounting does not add up is refused on read,
// each problem naming the file and the field's JSON path, with the fix.
func TestReadFileRefusesBadFigures(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, doc string
		edit      func(doc map[string]any)
		want      []string
	}{
		{"published", "shard0", func(d map[string]any) { obj(d, "messages")["published"] = -5 },
			[]string{"p.json: messages.published: -5 is negative"}},
		{"p99", "p2p", func(d map[string]any) { obj(d, "latency_us")["p99"] = -5 },
			[]string{"p.json: latency_us.p99: -5 is negative"}},
		{"p99-below-p90", "p2p", func(d map[string]any) { obj(d, "latency_us")["p99"] = 400 },
			[]string{"p.json: latency_us.p99: 400 is below p90 447: percentiles never decrease"}},
		{"interval", "p2p", func(d map[string]any) {
			d["intervals"].([]any)[2].(map[string]any)["connect_latency_us"].(map[string]any)["max"] = -1
		}, []string{"p.json: intervals[2].connect_latency_us.max: -1 is negative"}},
		{"refused", "shard0", func(d map[string]any) { obj(d, "connections.refused")["not_authorized"] = -2 },
			[]string{"p.json: connections.refused.not_authorized: -2 is negative"}},
		{"unsent-cause", "shard0", func(d map[string]any) { obj(d, "messages.unsent")["disconnected"] = -1 },
			[]string{"p.json: messages.unsent.disconnected: -1 is negative"}},
		{"broker-host", "p2p", func(d map[string]any) {
			d["broker_host"] = map[string]any{"gaps": -3, "sources": []any{map[string]any{"url": "http://h/metrics", "scrapes_ok": 1, "scrapes_failed": -1}}}
		}, []string{"p.json: broker_host.gaps: -3 is negative", "p.json: broker_host.sources[0].scrapes_failed: -1 is negative"}},
		{"scheduled", "shard0", func(d map[string]any) { obj(d, "messages")["scheduled"] = 10001 },
			[]string{"p.json: messages.scheduled: 10001 is not published 9970 + unsent_total 30 (10000): the document does not add up"}},
		{"unsent-total", "shard0", func(d map[string]any) {
			m := obj(d, "messages")
			m["unsent_total"], m["scheduled"] = 31, 10001
		}, []string{"p.json: messages.unsent_total: 31 is not the sum of unsent 30 (30)"}},
		{"failed", "shard0", func(d map[string]any) { obj(d, "connections")["failed"] = 4 },
			[]string{"p.json: connections.failed: 4 is not the sum of refused 2 + the sum of failed_by_cause 1 (3)"}},
		{"unacknowledged", "shard0", func(d map[string]any) {
			m := obj(d, "messages")
			m["published_qos12"], m["acked"], m["unacknowledged"] = 100, 90, 9
			m["unacknowledged_by_step"] = map[string]any{"no_puback": 9}
		}, []string{"p.json: messages.published_qos12: 100 is not acked 90 + unacknowledged 9 (99)"}},
		{"unacknowledged-by-step", "shard0", func(d map[string]any) {
			m := obj(d, "messages")
			m["published_qos12"], m["acked"], m["unacknowledged"] = 100, 90, 10
			m["unacknowledged_by_step"] = map[string]any{"no_pubrec": 4, "no_pubcomp": 5}
		}, []string{"p.json: messages.unacknowledged: 10 is not the sum of unacknowledged_by_step 9 (9)"}},
		{"reconnect-failed", "shard0", func(d map[string]any) {
			c := obj(d, "connections")
			c["reconnect_failed"], c["reconnect_failed_by_cause"] = 52, map[string]any{"refused": 50}
		}, []string{"p.json: connections.reconnect_failed: 52 is not the sum of reconnect_failed_by_cause 50 (50)"}},
		{"expected", "p2p", func(d map[string]any) { obj(d, "messages")["received"] = 6000 },
			[]string{"p.json: messages.expected: 6004 is not received 6000 + lost 0 + in_flight_at_end 0 + in_flight_lost 0 (6000)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := craft(t, dir, c.doc, "p.json", c.edit)
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("read")
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
			for _, w := range append(c.want, "p.json: not a result document as mqblast writes one",
				"give the file that mqblast run --out or mqblast merge -o wrote") {
				if !strings.Contains(got, w) {
					t.Errorf("%q does not say %q", got, w)
				}
			}
		})
	}
}

// TestReadFileTakesWhatItCannotJudge: the documents of every earlier writer in testdata
// read, and so do documents without the fields an identity needs (an earlier writer's),
// with fields a later writer adds, a shard's (its publishers expect copies other shards
// receive) and a Subscribe run's (its publishers are outside the plan): an identity is
// checked only where it holds.
func TestReadFileTakesWhatItCannotJudge(t *testing.T) {
	docs, err := filepath.Glob("testdata/v1/*.json")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("testdata/v1/want/*.json")
	for _, p := range append(docs, more...) {
		// Merge's output for a Connections run and a hand-made messaging document whose
		// unsent causes are null (no run writes that, and merge refuses whole runs): its
		// scheduled and expected do not add up, and the check says so.
		if filepath.Base(p) == "merged-conn-result.json" {
			if _, err := ReadFile(p); err == nil {
				t.Errorf("%s: read, but its scheduled and expected do not add up", p)
			}
			continue
		}
		if _, err := ReadFile(p); err != nil {
			t.Errorf("%v", err)
		}
	}
	dir := t.TempDir()
	for name, c := range map[string]struct {
		doc  string
		edit func(doc map[string]any)
	}{
		"older": {"p2p", func(d map[string]any) {
			m := obj(d, "messages")
			delete(m, "in_flight_lost")
			delete(m, "unsent_total")
			m["received"] = 6000
			delete(obj(d, "latency_us"), "p999")
		}},
		"unsent-null": {"shard0", func(d map[string]any) { obj(d, "messages")["unsent"] = nil }},
		"later": {"p2p", func(d map[string]any) {
			obj(d, "messages")["expected"] = nil // not known
			obj(d, "connections")["joined"] = map[string]any{"offset_us": -40}
			d["run_id"] = "abc"
		}},
		"shard": {"shard0", func(d map[string]any) { obj(d, "messages")["received"] = 19999 }},
		"subscribe": {"p2p", func(d map[string]any) {
			obj(d, "scenario")["type"] = "Subscribe"
			m := obj(d, "messages")
			m["expected"], m["received"] = 0, 6004
		}},
		"no-scenario": {"p2p", func(d map[string]any) {
			delete(d, "scenario")
			obj(d, "messages")["received"] = 6100
		}},
	} {
		if _, err := ReadFile(craft(t, dir, c.doc, name+".json", c.edit)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNotShared: a 3.1.1 Shared-Subscription run whose granted subscriptions received
// nothing counts its missing copies as not_shared_copies, not lost, and the document adds
// up; at 5.0, with a copy received, or with a connection lost, they stay lost.
func TestNotShared(t *testing.T) {
	run := func(version string, received, dropped int64) *Result {
		r := &Result{Schema: Schema, Scenario: json.RawMessage(`{"type":"Shared-Subscription","subscribers":{"protocol_version":` + version + `}}`)}
		s := NewSnapshot()
		s.Subscribed, s.Published, s.Scheduled, s.Acked, s.Expected, s.Received = 5, 100, 100, 100, 100, received
		if dropped > 0 {
			s.Dropped["closed_by_broker"] = dropped
		}
		r.SetTotal(s)
		return r
	}
	r := run("4", 0, 0)
	if m := r.Messages; m.NotSharedCopies != 100 || m.Lost != 0 || len(r.BrokerBehaviour) != 1 || r.BrokerBehaviour[0].What != "not_shared" ||
		r.BrokerBehaviour[0].Count != 5 {
		t.Errorf("not shared: %+v, %+v", m, r.BrokerBehaviour)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := CheckDocument(buf.Bytes()); err != nil {
		t.Errorf("the document does not add up: %v", err)
	}
	for _, c := range []struct {
		v                 string
		received, dropped int64
	}{{"5", 0, 0}, {"4", 1, 0}, {"4", 0, 2}} {
		if m := run(c.v, c.received, c.dropped).Messages; m.NotSharedCopies != 0 || m.Lost != 100-c.received {
			t.Errorf("version %s, received %d, dropped %d: not shared %d, lost %d", c.v, c.received, c.dropped, m.NotSharedCopies, m.Lost)
		}
	}
}
