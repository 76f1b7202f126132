package scenario

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// TestTopicTreeModulo: a topic template with $clientindex%N builds a tree, and the plan's
// expected copies follow the expanded topics exactly: a device's receivers are the
// subscribers whose filters match its own topic, and each subscriber's streams are the
// devices whose topics match.
func TestTopicTreeModulo(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/good/topic-tree.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("topic-tree.json", data)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	// By hand: site3 takes j%5 == 3, each line1 client j%2 == 1, all every device, one
	// device 14.
	matches := func(group string, j int) bool {
		switch group {
		case "site3":
			return j%5 == 3
		case "line1":
			return j%2 == 1
		case "all":
			return true
		case "one":
			return j == 14
		}
		return false
	}
	var devices []Client
	var subs []int
	for i := range p.Len() {
		c := p.Client(i)
		switch {
		case c.GroupName == "bursts":
		case c.Role.Publishes():
			devices = append(devices, c)
		default:
			subs = append(subs, i)
		}
	}
	if len(devices) != 50 || len(subs) != 5 {
		t.Fatalf("%d devices, %d subscribers", len(devices), len(subs))
	}
	total := 0
	for _, d := range devices {
		want := fmt.Sprintf("site/%d/line/%d/dev/%d", d.Index%5, d.Index%2, d.Index)
		if d.Topic != want {
			t.Errorf("device %d publishes to %q, want %q", d.Index, d.Topic, want)
		}
		receivers := 0
		for _, i := range subs {
			c := p.Client(i)
			expect := matches(c.GroupName, d.Index)
			if expect {
				receivers++
			}
			kind, _ := p.Stream(i, d.Number)
			if (kind == StreamExpected) != expect {
				t.Errorf("subscriber %s/%d, device %d (%s): stream %v, want expected %v", c.GroupName, c.Index, d.Index, d.Topic, kind, expect)
			}
		}
		if d.Receivers != receivers {
			t.Errorf("device %d (%s): %d receivers, want %d", d.Index, d.Topic, d.Receivers, receivers)
		}
		total += receivers
	}
	// 10 for site3, 25 x 2 for line1, 50 for all, 1 for one.
	if total != 111 {
		t.Errorf("%d expected streams, want 111", total)
	}
	if e := p.Estimate(); e.Topics != 54 || int(e.ReceivePerSec) != 111*20 {
		t.Errorf("estimate: %d topics, %v deliveries/s; want 54 and %d", e.Topics, e.ReceivePerSec, 111*20)
	}
	// Ten sites' worth of devices on 5 topics: the estimate counts distinct topics.
	s2, _ := Parse("topic-tree.json", []byte(strings.Replace(string(data), `line/$clientindex%2/dev/$clientindex`, `x`, 1)))
	if p2, err := NewPlan(s2); err != nil {
		t.Fatal(err)
	} else if e := p2.Estimate(); e.Topics != 5+4 {
		t.Errorf("site/$clientindex%%5/x: estimate of %d topics, want 5", e.Topics)
	}
}

// TestTopicCycleReach: a device cycles over three topics that reach different receivers,
// and the plan says so topic by topic: each topic's copies (TopicReceivers), and for each
// subscriber which of the device's messages its stream takes (StreamCycle), a share
// group's the same for its every member.
func TestTopicCycleReach(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, `{
  "name": "cycle-reach",
  "groups": [
    {"name": "dev", "behaviours": "publish", "client_count": 3, "qos": 1, "topics": "site/$clientindex/{0..2}"},
    {"name": "a", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": "site/+/0"},
    {"name": "b", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "site/+/1"},
    {"name": "own", "behaviours": "subscribe", "client_count": 3, "qos": 1, "filters": ["site/$clientindex/1", "site/$clientindex/2"]},
    {"name": "sh", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": "$share/g/site/+/0"},
    {"name": "all", "behaviours": "subscribe", "client_count": 1, "qos": 1, "filters": "site/#"}
  ]
}`)
	type want struct {
		positions []int
		share     bool
	}
	// The estimate's receive rate: each device's mean copies (4 + 3 + 2) / 3 at its rate.
	if e, rate := p.Estimate(), p.Scenario().Groups[0].PublishRate; math.Abs(e.ReceivePerSec-3*3*rate) > 1e-9 {
		t.Errorf("estimated %v copies/s, want 3 devices x 3 copies x %v/s", e.ReceivePerSec, rate)
	}
	wants := map[string]want{"a": {[]int{0}, false}, "b": {[]int{1}, false}, "own": {[]int{1, 2}, false},
		"sh": {[]int{0}, true}, "all": {nil, false}}
	for i := range p.Len() {
		d := p.Client(i)
		if !d.Role.Publishes() {
			continue
		}
		// site/j/0: a's 2, sh's group, all; site/j/1: b, own's client j, all; site/j/2: own's j, all.
		if got := fmt.Sprint(d.TopicReceivers); got != "[4 3 2]" {
			t.Errorf("%s: receivers by topic %s, want [4 3 2]", d.ID, got)
		}
		for k := range p.Len() {
			c := p.Client(k)
			if c.Role.Publishes() {
				continue
			}
			kind, share := p.Stream(k, d.Number)
			pos, n := p.StreamCycle(k, d.Number)
			w := wants[c.GroupName]
			if c.GroupName == "own" && c.Index != d.Index {
				if kind != StreamNotExpected {
					t.Errorf("%s of %s: %v, want not expected", c.ID, d.ID, kind)
				}
				continue
			}
			if kind != StreamExpected || (share >= 0) != w.share || fmt.Sprint(pos) != fmt.Sprint(w.positions) ||
				(pos != nil && n != 3) {
				t.Errorf("%s of %s: %v share %d, positions %v of %d; want expected, shared %v, positions %v of 3",
					c.ID, d.ID, kind, share, pos, n, w.share, w.positions)
			}
		}
	}
}

// TestTopicCycleStreamAlso: a client that takes a device's first topic through a share
// group and its second through its own filter receives the device's messages on two
// streams: Stream and StreamCycle give the share group's (the first topic's), StreamAlso
// its own (the second's).
func TestTopicCycleStreamAlso(t *testing.T) {
	t.Parallel()
	p := mustParsePlan(t, `{
  "name": "cycle-also",
  "groups": [
    {"name": "dev", "behaviours": "publish", "client_count": 2, "qos": 1, "topics": "d/$clientindex/{0..2}"},
    {"name": "mix", "behaviours": "subscribe", "client_count": 2, "qos": 1, "filters": ["$share/g/d/+/0", "d/+/1"]}
  ]
}`)
	for i := range p.Len() {
		c := p.Client(i)
		if c.Role.Publishes() {
			if got := fmt.Sprint(c.TopicReceivers); got != "[1 2 0]" {
				t.Errorf("%s: receivers by topic %s, want [1 2 0]", c.ID, got)
			}
			continue
		}
		kind, share := p.Stream(i, 1)
		pos, n := p.StreamCycle(i, 1)
		also := p.StreamAlso(i, 1)
		if kind != StreamExpected || share < 0 || fmt.Sprint(pos, n) != "[0] 3" ||
			len(also) != 1 || also[0].Share != -1 || fmt.Sprint(also[0].Positions, also[0].N) != "[1] 3" {
			t.Errorf("%s: %v share %d positions %v of %d, also %+v; want the share group's [0] of 3, and its own [1] of 3",
				c.ID, kind, share, pos, n, also)
		}
	}
}
