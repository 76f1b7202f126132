package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dumpPlan writes the plan of s, its shards and parts.
func dumpPlan(t *testing.T, s *Scenario) string {
	t.Helper()
	p, err := NewPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	js, err := json.Marshal(p.Scenario())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "scenario %s\n", js)
	var size bytes.Buffer
	WritePlanSize(&size, "ARG", p.Scenario(), p)
	fmt.Fprintf(&b, "validate:\n%s", size.String())
	d := &dumper{b: &b, settings: map[*Group]int{}}
	d.plan("plan", p, p)
	for i := range 3 {
		d.plan(fmt.Sprintf("shard %d/3", i), p.Shard(i, 3), p)
	}
	for _, nl := range [][2]int{{4, 2}, {7, 3}} {
		for i := range nl[0] {
			q := p.Part(i, nl[0], nl[1])
			fmt.Fprintf(&b, "part %d/%d lanes %d: len %d connect %s after %v", i, nl[0], nl[1], q.Len(), g17(q.ConnectRate()), q.ConnectDelay())
			if q.Len() > 0 {
				fmt.Fprintf(&b, " first %s last %s", q.Client(0).ID, q.Client(q.Len()-1).ID)
			}
			fmt.Fprintf(&b, "\n  estimate %s\n", estimateLine(q.Estimate()))
		}
	}
	return b.String()
}

// dumper writes plans, numbering the client settings (Client.Group) in the order it meets
// them: clients that share settings share one *Group.
type dumper struct {
	b        *strings.Builder
	settings map[*Group]int
}

func (d *dumper) plan(title string, q, whole *Plan) {
	b := d.b
	fmt.Fprintf(b, "== %s\n", title)
	fmt.Fprintf(b, "len %d publishers %d open %v max shards %d connect %s after %v sources %d\n",
		q.Len(), q.Publishers(), q.Open(), q.MaxShards(), g17(q.ConnectRate()), q.ConnectDelay(), q.Sources())
	fmt.Fprintf(b, "estimate %s\n", estimateLine(q.Estimate()))
	fmt.Fprintf(b, "brokers %q own %q\n", nilOr(q.Brokers()), nilOr(q.OwnBrokers()))
	if gs := q.Groups(); gs == nil {
		fmt.Fprintf(b, "groups nil\n")
	} else {
		for gid, g := range gs {
			fmt.Fprintf(b, "group %d %q %v clients %d publishers %d\n", gid, g.Name, g.Behaviours, g.Clients, g.Publishers)
		}
	}
	clients, pubs, ok := q.GroupTables()
	fmt.Fprintf(b, "group tables %v clients %v %v publishers %v %v\n", ok, clients.End, clients.GID, pubs.End, pubs.GID)
	gc, gp := q.GroupCounts()
	fmt.Fprintf(b, "group counts %v %v numbers %v shares %v\n", nilOr(gc), nilOr(gp), nilOr(q.GroupNumbers()), nilOr(q.ShareGroups()))
	on, client := q.Reconnects()
	fmt.Fprintf(b, "reconnects %v per client %v\n", on, client != nil)
	storms := q.Storms()
	fmt.Fprintf(b, "storms %d\n", len(storms))
	for _, st := range storms {
		fmt.Fprintf(b, "storm %+v clients here %d\n", st, q.StormClients(st))
	}

	// Clients: every one of a small plan (300 at most); of a large one the first and last 50
	// of each run of one group and role, and every 997th.
	type run struct{ lo, hi int }
	var runs []run
	var last string
	cs := make([]Client, q.Len())
	for i := range q.Len() {
		cs[i] = q.Client(i)
		key := cs[i].GroupName + "/" + cs[i].Role.String()
		if i == 0 || key != last {
			runs = append(runs, run{i, i})
		}
		runs[len(runs)-1].hi = i + 1
		last = key
	}
	pick := make([]bool, q.Len())
	for i := range pick {
		pick[i] = whole.Len() <= 300 || i%997 == 0
	}
	for _, r := range runs {
		for i := r.lo; i < r.hi && i < r.lo+50; i++ {
			pick[i] = true
		}
		for i := max(r.lo, r.hi-50); i < r.hi; i++ {
			pick[i] = true
		}
	}
	fmt.Fprintf(b, "runs %v\n", runs)
	for i, c := range cs {
		if !pick[i] {
			continue
		}
		sid, ok := d.settings[c.Group]
		if !ok {
			sid = len(d.settings)
			d.settings[c.Group] = sid
			g := c.Group
			fmt.Fprintf(b, "settings %d: prefix %q v%s count %d qos %d clean %v topics %q retain %v no_local %v rap %v rh %d connect %+v publish %+v\n",
				sid, g.IDPrefix, g.ProtocolVersion, g.ClientCount, g.QoS, g.CleanSession, g.Topics, g.Retain, g.NoLocal,
				g.RetainAsPublished, g.RetainHandling, g.ConnectProperties, g.PublishProperties)
		}
		fmt.Fprintf(b, "c%d %s %q/%d s%d i%d %q n%d t%q f%q rt%q resp %v r%s ph%v rcv%d ka%v pl%d src%d b%d own%d g%d",
			i, c.Role, c.GroupName, c.GroupID, sid, c.Index, c.ID, c.Number, c.Topic, c.Filters, c.ResponseTopic, c.Respond,
			g17(c.Rate), c.Phase, c.Receivers, c.KeepAlive, c.PayloadSize, c.Source, c.Broker, c.OwnBroker, q.GroupOfClient(i))
		if client != nil {
			fmt.Fprintf(b, " rec %v", client(i))
		}
		for _, st := range storms {
			fmt.Fprintf(b, " sp%d", q.StormPos(st, i))
		}
		b.WriteString("\n")
	}

	// Streams: of the first and last three clients of each run and every 9973rd, those that
	// subscribe, against some publisher numbers: the first and last three, the middle, those
	// of the same sample that publish and two past the end.
	n := whole.Publishers()
	numbers := map[uint32]bool{}
	for _, k := range []int{0, 1, 2, n / 2, n - 3, n - 2, n - 1, n, n + 1} {
		if k >= 0 {
			numbers[uint32(k)] = true
		}
	}
	var subs []int
	for _, r := range runs {
		for i := r.lo; i < r.hi; i++ {
			edge := i < r.lo+3 || i >= r.hi-3
			if !edge && i%9973 != 0 {
				continue
			}
			if cs[i].Role.Publishes() {
				numbers[cs[i].Number] = true
			}
			if cs[i].Role.Subscribes() {
				subs = append(subs, i)
			}
		}
	}
	nums := slices.Sorted(maps.Keys(numbers))
	for _, pub := range nums {
		fmt.Fprintf(b, "publisher %d: publishes here %v received outside %v group-of %d\n",
			pub, q.Publishes(pub), q.ReceivedOutside(pub), q.GroupOfPublisher(pub))
	}
	fmt.Fprintf(b, "receives outside %v\n", q.ReceivesOutside())
	for _, i := range subs {
		var line []string
		for _, pub := range nums {
			kind, share := q.Stream(i, pub)
			line = append(line, fmt.Sprintf("%d:%s/%d", pub, kind, share))
		}
		fmt.Fprintf(b, "stream %d: %s\n", i, strings.Join(line, " "))
	}
	if q.Len() > 0 {
		kind, share := q.Stream(0, 0)
		fmt.Fprintf(b, "stream 0 of 0: %s/%d\n", kind, share)
	}
}

// estimateLine writes every field of e, its rates to 12 significant digits.
func estimateLine(e Estimate) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 12, 64) }
	return fmt.Sprintf("clients %d publishers %d subscribers %d connections %d fds %d topics %d publish/s %s receive/s %s out B/s %s in B/s %s memory %d socket %d connect %v sources %d",
		e.Clients, e.Publishers, e.Subscribers, e.Connections, e.FileDescriptors, e.Topics, f(e.PublishPerSec), f(e.ReceivePerSec),
		f(e.BytesOutPerSec), f(e.BytesInPerSec), e.MemoryBytes, e.SocketMemoryBytes, e.ConnectTime, e.SourceAddresses)
}

// g17 writes x exactly.
func g17(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// nilOr tells a nil slice from an empty one.
func nilOr[T any](s []T) any {
	if s == nil {
		return "nil"
	}
	return s
}
