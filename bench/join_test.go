package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mqblast/mqblast/reactor"
	"github.com/mqblast/mqblast/result"
	"github.com/mqblast/mqblast/scenario"
)

// A scripted run for the recorders of a whole plan and of its parts: what each publisher
// published and had in flight, and what each subscriber received.
type (
	pubScript struct {
		pub      int
		n        int      // messages published
		inFlight []uint32 // in flight at the end
		dropped  []uint32 // in flight when a session ended
	}
	recvScript struct {
		sub int // the subscriber's index in its group
		pub uint32
		seq uint32
		// group, if set, names the subscriber's group (a file with groups); "": the
		// subscribers of a plain file.
		group string
	}
)

// recordScript plays the script on the recorders of plan p (two loops), as the part of the
// run p is, and returns the part's result: its total and its join.
func recordScript(t *testing.T, p *scenario.Plan, pubs []pubScript, recvs []recvScript) *result.Result {
	t.Helper()
	rec := NewRecorder(2)
	rec.Stream, rec.StreamCycle, rec.StreamAlso = p.Stream, p.StreamCycle, p.StreamAlso
	rec.Placement = &Placement{Publishes: p.Publishes, Outside: p.ReceivedOutside}
	now := time.Now().UnixNano()
	rec.SetStart(now - int64(time.Millisecond))
	rec.SetWindow(now-int64(time.Millisecond), now+int64(time.Hour))
	type key struct {
		role  scenario.Role
		index int
	}
	type named struct {
		group string
		index int
	}
	local, byGroup := map[key]int{}, map[named]int{}
	for i := range p.Len() {
		c := p.Client(i)
		local[key{c.Role, c.Index}] = i
		byGroup[named{c.GroupName, c.Index}] = i
	}
	for _, e := range pubs {
		i, ok := local[key{scenario.RolePublisher, e.pub}]
		if !ok {
			continue
		}
		c := p.Client(i)
		end := reactor.PublisherEnd{Number: uint32(c.Index), Receivers: c.Receivers, TopicReceivers: c.TopicReceivers}
		for seq := range e.n {
			r := end.ReceiversOf(uint32(seq)) // a cycling publisher's: its topic's
			rec.Published(i%2, i, r, 0, now, now, 0)
			end.Expected += int64(r)
		}
		if len(e.dropped) > 0 {
			end.InFlight = e.dropped
			rec.InFlightDropped(i%2, i, &end)
		}
		end.InFlight, end.Scheduled = e.inFlight, int64(e.n)
		rec.PublisherEnd(i%2, i, &end)
	}
	for _, e := range recvs {
		i, ok := local[key{scenario.RoleSubscriber, e.sub}]
		if e.group != "" {
			i, ok = byGroup[named{e.group, e.sub}]
		}
		if ok {
			rec.Received(i%2, i, reactor.Message{Due: now, Now: now, Publisher: e.pub, Seq: e.seq})
		}
	}
	s := result.NewSnapshot()
	rec.Take(0, s)
	rec.Take(1, s)
	fix, join := rec.Finish()
	s.Add(fix)
	res := &result.Result{Schema: result.Schema}
	res.SetTotal(s)
	res.Join = join
	return res
}

// reread writes r as a document and reads it back, as merge reads a shard's file.
func reread(t *testing.T, r *result.Result) *result.Result {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var out result.Result
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// joinFigures are the figures a join corrects, with the identities' terms.
func joinFigures(m result.Messages) string {
	return fmt.Sprintf("expected %d received %d lost %d in_flight_at_end %d in_flight_lost %d duplicated %d out_of_order %d",
		m.Expected, m.Received, m.Lost, m.InFlightAtEnd, m.InFlightLost, m.Duplicated, m.OutOfOrder)
}

// TestJoinAcrossParts: a fan-out and a shared-subscription run whose publishers end with
// messages in flight (some delivered to some receivers) and whose share group's members
// receive copies twice, recorded as one process and as parts: three shards merged (from
// their documents), three workers gathered, and a shard of two workers merged with the two
// other shards. Every way gives the one process's lost, in_flight_at_end, in_flight_lost,
// received and duplicated; the parts' own figures, summed without their joins, do not.
func TestJoinAcrossParts(t *testing.T) {
	t.Parallel()
	fanout := func() (*scenario.Scenario, []pubScript, []recvScript) {
		s := builtin(t, "quick-fanout-1-100", map[string]string{"publishers.client_count": "2", "subscribers.client_count": "6"})
		var pubs []pubScript
		var recvs []recvScript
		for pub := range 2 {
			pubs = append(pubs, pubScript{pub: pub, n: 20, inFlight: []uint32{15, 16, 17, 18, 19}, dropped: []uint32{3, 4}})
			for sub := range 6 {
				for seq := range uint32(15) {
					if seq == uint32(sub) && seq != 3 { // lost: acknowledged, never delivered
						continue
					}
					if (seq == 3 || seq == 4) && sub != 1 { // dropped with the session: subscriber 1 got them
						continue
					}
					recvs = append(recvs, recvScript{sub, uint32(pub), seq, ""})
				}
				// In flight at the end: 15 reached everyone, 16 the even subscribers, 17
				// subscriber 5 of publisher 1 only, 18 and 19 nobody.
				recvs = append(recvs, recvScript{sub, uint32(pub), 15, ""})
				if sub%2 == 0 {
					recvs = append(recvs, recvScript{sub, uint32(pub), 16, ""})
				}
				if sub == 5 && pub == 1 {
					recvs = append(recvs, recvScript{sub, uint32(pub), 17, ""})
				}
			}
		}
		return s, pubs, recvs
	}
	shared := func() (*scenario.Scenario, []pubScript, []recvScript) {
		s := builtin(t, "quick-sharedsub-100-5", map[string]string{"publishers.client_count": "3", "subscribers.client_count": "6"})
		var pubs []pubScript
		var recvs []recvScript
		for pub := range 3 {
			pubs = append(pubs, pubScript{pub: pub, n: 30, inFlight: []uint32{25, 26, 27, 28, 29}})
			for seq := range uint32(25) {
				if seq == 7 && pub == 2 { // lost
					continue
				}
				// Round robin over the members, and every fifth again to the next member.
				m := int(seq+uint32(pub)) % 6
				recvs = append(recvs, recvScript{m, uint32(pub), seq, ""})
				if seq%5 == 0 {
					recvs = append(recvs, recvScript{(m + 1) % 6, uint32(pub), seq, ""})
				}
			}
			// In flight: 25 reached a member, 26 two members, 27-29 none.
			recvs = append(recvs, recvScript{pub, uint32(pub), 25, ""}, recvScript{3, uint32(pub), 26, ""}, recvScript{4, uint32(pub), 26, ""})
		}
		return s, pubs, recvs
	}
	// Two devices cycle over three topics: c/j/0 read by a's 2 clients, all and the share
	// group m of mix's 2 clients, c/j/1 by b's client, all and mix's 2 clients (their own
	// filter), c/j/2 by the share group sh (3 members) and all. A client of mix takes a
	// device's messages on two streams: its share group's and its own.
	cycle := func() (*scenario.Scenario, []pubScript, []recvScript) {
		s, err := scenario.Parse("cycle.json", []byte(`{"name": "cycle", "groups": [
  {"name": "dev", "behaviours": "publish", "client_count": 2, "qos": 1, "topics": "c/$clientindex/{0..2}"},
  {"name": "a", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": "c/+/0"},
  {"name": "b", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "c/+/1"},
  {"name": "sh", "behaviours": "subscribe", "client_count": 3, "qos": 1, "filters": "$share/g/c/+/2"},
  {"name": "all", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "c/#"},
  {"name": "mix", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": ["$share/m/c/+/0", "c/+/1"]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var pubs []pubScript
		var recvs []recvScript
		to := func(group string, sub, pub int, seq uint32) {
			recvs = append(recvs, recvScript{sub: sub, pub: uint32(pub), seq: seq, group: group})
		}
		for pub := range 2 {
			pubs = append(pubs, pubScript{pub: pub, n: 30, inFlight: []uint32{25, 26, 27, 28, 29}, dropped: []uint32{3, 4}})
			for seq := range uint32(25) {
				if seq%7 != uint32(pub) && seq != 3 { // lost to all: every seventh; all got the dropped ones
					to("all", 0, pub, seq)
				}
				if seq == 3 || seq == 4 { // dropped with the session: only all got them
					continue
				}
				switch seq % 3 {
				case 0:
					to("a", 0, pub, seq)
					if seq != 12 { // lost
						to("a", 1, pub, seq)
					}
					if seq != 9 { // lost to the share group
						to("mix", int(seq/3+uint32(pub))%2, pub, seq)
					}
				case 1:
					to("b", 0, pub, seq)
					to("mix", 0, pub, seq)
					if seq != 7 { // lost
						to("mix", 1, pub, seq)
					}
				case 2:
					m := int(seq+uint32(pub)) % 3
					to("sh", m, pub, seq)
					if seq%4 == 0 { // to a second member too
						to("sh", (m+1)%3, pub, seq)
					}
				}
			}
			// In flight: 25 (c/j/1) reached b and all, 26 (c/j/2) one member, 27 (c/j/0)
			// a's client 0, 28 and 29 nobody.
			to("b", 0, pub, 25)
			to("all", 0, pub, 25)
			to("mix", 1, pub, 25)
			to("mix", 0, pub, 27)
			to("sh", 2, pub, 26)
			to("a", 0, pub, 27)
		}
		to("a", 0, 0, 1) // c/0/1, which a does not read: unexpected
		return s, pubs, recvs
	}
	for name, mk := range map[string]func() (*scenario.Scenario, []pubScript, []recvScript){"fanout": fanout, "shared": shared, "cycle": cycle} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, pubs, recvs := mk()
			plan, err := scenario.NewPlan(s)
			if err != nil {
				t.Fatal(err)
			}
			whole := recordScript(t, plan, pubs, recvs)
			want := joinFigures(whole.Messages)
			m := whole.Messages
			if whole.Join != nil || m.InFlightAtEnd == 0 || m.Lost == 0 || (name == "fanout") == (m.Duplicated > 0) {
				t.Fatalf("one process: %s, join %+v: want no join, something in flight, lost and (shared) duplicated", want, whole.Join)
			}
			if m.Expected != m.Received+m.Lost+m.InFlightAtEnd+m.InFlightLost {
				t.Fatalf("one process: %s: the identity does not hold", want)
			}
			if name == "cycle" && (m.Expected != 200 || m.Unexpected["not_expected"] != 1 || m.OutOfOrder != 0) {
				// 2 x 10 messages to each topic, 4, 4 and 2 copies each
				t.Fatalf("one process: %s, unexpected %v: want 200 expected, one not_expected", want, m.Unexpected)
			}
			var shards, workers, alone []*result.Result
			for i := range 3 {
				r := recordScript(t, plan.Shard(i, 3), pubs, recvs)
				if r.Join == nil {
					t.Errorf("shard %d/3 left no join", i)
				}
				workers = append(workers, r)
				shards = append(shards, reread(t, r))
				a := *r
				a.Join = nil
				alone = append(alone, &a)
			}
			if got := joinFigures(result.Merge(shards).Messages); got != want {
				t.Errorf("3 shards merged:\n got %s\nwant %s", got, want)
			}
			gathered := result.MergeParts(workers)
			if got := joinFigures(gathered.Messages); got != want {
				t.Errorf("3 workers gathered:\n got %s\nwant %s", got, want)
			}
			if j := gathered.Join.Prune(plan.Publishes, plan.ReceivedOutside); j != nil {
				t.Errorf("the whole run's workers leave a join: %+v", j)
			}
			// Shard 0 of 3 run in two workers, merged with the other two shards.
			shard0 := plan.Shard(0, 3)
			w0 := result.MergeParts([]*result.Result{recordScript(t, shard0.Shard(0, 2), pubs, recvs),
				recordScript(t, shard0.Shard(1, 2), pubs, recvs)})
			w0.Join = w0.Join.Prune(shard0.Publishes, shard0.ReceivedOutside)
			nested := result.Merge([]*result.Result{reread(t, w0), shards[1], shards[2]})
			if got := joinFigures(nested.Messages); got != want {
				t.Errorf("a shard of two workers and two shards merged:\n got %s\nwant %s", got, want)
			}
			if nested.Join != nil || nested.Messages.Inexact != "" {
				t.Errorf("merged: join %+v, inexact %q", nested.Join, nested.Messages.Inexact)
			}
			if got := joinFigures(result.Merge(alone).Messages); got == want {
				t.Errorf("the parts without their joins give the one process's figures too (%s): the script tests nothing", got)
			}
		})
	}
}

// TestJoinNotNeededP2P: a P2P run cut in three parts keeps each pair in one part, so its
// parts leave no join, even with messages in flight at the end.
func TestJoinNotNeededP2P(t *testing.T) {
	t.Parallel()
	s := builtin(t, "quick-p2p-100", map[string]string{"publishers.client_count": "6", "subscribers.client_count": "6"})
	plan, err := scenario.NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	var pubs []pubScript
	var recvs []recvScript
	for pub := range 6 {
		pubs = append(pubs, pubScript{pub: pub, n: 10, inFlight: []uint32{8, 9}})
		for seq := range uint32(9) {
			recvs = append(recvs, recvScript{pub, uint32(pub), seq, ""})
		}
	}
	want := joinFigures(recordScript(t, plan, pubs, recvs).Messages)
	var shards []*result.Result
	for i := range 3 {
		r := recordScript(t, plan.Shard(i, 3), pubs, recvs)
		if r.Join != nil {
			t.Errorf("shard %d/3 of a P2P run left a join: %+v", i, r.Join)
		}
		shards = append(shards, reread(t, r))
	}
	if got := joinFigures(result.Merge(shards).Messages); got != want {
		t.Errorf("3 shards merged:\n got %s\nwant %s", got, want)
	}
}
