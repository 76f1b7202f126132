package scenario

import (
	"math"
	"strconv"
	"time"
)

// mixPlan is what a mixed scenario's plan knows of its groups.
type mixPlan struct {
	groups  []*ClientGroup
	conf    []*Group   // each group's connection settings (session expiry among the CONNECT properties)
	pub     []template // each group's publish topic (zero for a group that does not publish)
	resp    []template // each request group's response topic (zero for the others)
	pubBase []int      // each group's first publisher number
	pubs    []int      // each group's publishers
	m       *mixMatcher
	subOf   []int // each group's index in m.subs, -1 if it does not subscribe
	own     []int // each group's first index in ownBrokers, -1: the run's brokers
	ownN    []int
	brokers []string // the groups' own servers, "host:port"
	deliv   []float64
}

// newMixed lays a mixed scenario's groups out as segments: each group in file order, a
// publishing group's publishers (the first of its clients) before its other clients.
func (p *Plan) newMixed() {
	sh := p.shared
	s := sh.s
	mx := &mixPlan{groups: s.Groups, m: newMixMatcher(s.Groups)}
	sh.mix = mx
	number := 0
	for gid, g := range s.Groups {
		conf := g.Group
		if g.given&cgGivenSessionExpiry != 0 {
			conf.ConnectProperties = append(append([]Property(nil), g.ConnectProperties...),
				Property{Name: "session_expiry_interval", ID: 0x11, Num: uint32(g.SessionExpiry / time.Second)})
		}
		mx.conf = append(mx.conf, &conf)
		var t template
		if g.Publishes() {
			t = compileTemplate(g.Topics[0])
		}
		mx.pub = append(mx.pub, t)
		var rt template
		if g.has(BehaviourRequest) {
			rt = compileTemplate(g.ResponseTopic)
		}
		mx.resp = append(mx.resp, rt)
		np := g.Publishers()
		mx.pubBase = append(mx.pubBase, number)
		mx.pubs = append(mx.pubs, np)
		number += np
		sub := -1
		for k := range mx.m.subs {
			if mx.m.subs[k].gid == gid {
				sub = k
			}
		}
		mx.subOf = append(mx.subOf, sub)
		own := -1
		var addrs []string
		if sv := g.Server; sv != nil {
			addrs = sv.Brokers
			if len(addrs) == 0 {
				addrs = []string{sv.serverAddr()}
			}
			own = len(mx.brokers)
			mx.brokers = append(mx.brokers, addrs...)
		}
		mx.own, mx.ownN = append(mx.own, own), append(mx.ownN, len(addrs))

		pubRole, restRole := RoleIdle, RoleIdle
		switch {
		case g.has(BehaviourRoundTrip):
			pubRole = RoleRoundTrip
		case g.has(BehaviourRequest):
			pubRole = RoleRequester
		case g.has(BehaviourRespond):
			restRole = RoleSubscriber
		case g.has(BehaviourPublish) && g.has(BehaviourSubscribe):
			pubRole, restRole = RolePubSub, RoleSubscriber
		case g.has(BehaviourPublish):
			pubRole = RolePublisher
		case g.has(BehaviourSubscribe):
			restRole = RoleSubscriber
		}
		base := p.n
		if np > 0 {
			p.segs = append(p.segs, segment{role: pubRole, name: g.Name, group: mx.conf[gid], hi: np, base: base, gid: gid})
		}
		if np < g.ClientCount {
			p.segs = append(p.segs, segment{role: restRole, name: g.Name, group: mx.conf[gid], lo: np, hi: g.ClientCount, base: base, gid: gid})
		}
		if g.Subscribes() {
			sh.wholeSubscribing += g.ClientCount
		}
		p.n += g.ClientCount
	}
	sh.whole = p.n
}

// mixedClient is Client for a mixed scenario: client j of seg's group, i in the plan.
func (p *Plan) mixedClient(i int, seg *segment, j int) Client {
	sh := p.shared
	mx := sh.mix
	g := mx.groups[seg.gid]
	c := Client{
		Role:        seg.role,
		GroupName:   seg.name,
		GroupID:     seg.gid,
		Group:       seg.group,
		Index:       j,
		ID:          g.IDPrefix + strconv.Itoa(j),
		Source:      -1,
		OwnBroker:   -1,
		KeepAlive:   g.KeepAlive,
		PayloadSize: g.PayloadSize,
	}
	if seg.role.Publishes() {
		np := mx.pubs[seg.gid]
		c.Number = uint32(mx.pubBase[seg.gid] + j)
		c.Topic = mx.pub[seg.gid].expand(j, g.IDPrefix)
		c.Rate = g.PublishRate
		c.Phase = g.Start + time.Duration(float64(j)/float64(np)/g.PublishRate*float64(time.Second))
		if g.ExpectDelivery {
			c.Receivers = mx.m.deliveries(c.Topic)
			if seg.role == RoleRequester {
				c.Receivers += max(mx.m.responses(c.Topic), 1) // none here: a responder outside answers
			}
		}
	}
	c.Respond = g.Responds()
	switch seg.role {
	case RoleRoundTrip:
		c.Filters = []string{c.Topic}
	case RoleRequester:
		c.ResponseTopic = mx.resp[seg.gid].expand(j, g.IDPrefix)
		c.Filters = []string{c.ResponseTopic}
	case RoleSubscriber, RolePubSub:
		c.Filters = make([]string, len(g.Filters))
		sg := &mx.m.subs[mx.subOf[seg.gid]]
		for k := range sg.filters {
			c.Filters[k] = sg.filters[k].expand(j, g.IDPrefix)
		}
	}
	if sh.sources.total > 0 {
		c.Source = i % sh.sources.total
	}
	switch {
	case mx.own[seg.gid] >= 0:
		c.OwnBroker = mx.own[seg.gid] + j%mx.ownN[seg.gid]
	case len(sh.brokers) > 1:
		c.Broker = (seg.base + j) % len(sh.brokers)
	}
	return c
}

// OwnBrokers returns the "host:port" of the brokers of groups with their own server
// (Client.OwnBroker indexes it); nil when no group has one.
func (p *Plan) OwnBrokers() []string {
	if p.shared.mix == nil {
		return nil
	}
	return p.shared.mix.brokers
}

// GroupSummary describes one group of a plan for its figures: a plain scenario's plan has
// one, named after its scenario type.
type GroupSummary struct {
	Name       string
	Behaviours []Behaviour
	Clients    int // in the whole plan
	Publishers int
}

// Groups describes the groups of the whole plan, by GroupID: a mixed scenario's groups; nil
// for a plain scenario (one group, the run itself).
func (p *Plan) Groups() []GroupSummary {
	mx := p.shared.mix
	if mx == nil {
		return nil
	}
	out := make([]GroupSummary, len(mx.groups))
	for gid, g := range mx.groups {
		out[gid] = GroupSummary{Name: g.Name, Behaviours: g.Behaviours, Clients: g.ClientCount, Publishers: mx.pubs[gid]}
	}
	return out
}

// GroupOfPublisher returns the GroupID of the publisher numbered pub (Client.Number), -1
// when the plan has none of that number. For a plain scenario it is 0 for every number.
func (p *Plan) GroupOfPublisher(pub uint32) int {
	mx := p.shared.mix
	if mx == nil {
		return 0
	}
	for gid := range mx.groups {
		if int64(pub) >= int64(mx.pubBase[gid]) && int64(pub) < int64(mx.pubBase[gid]+mx.pubs[gid]) {
			return gid
		}
	}
	return -1
}

// GroupOfClient returns the GroupID of client i of this plan (0 ≤ i < Len()) without
// building the client.
func (p *Plan) GroupOfClient(i int) int {
	for k := range p.segs {
		n := p.segs[k].hi - p.segs[k].lo
		if i < n {
			return p.segs[k].gid
		}
		i -= n
	}
	return -1
}

// mixedStream is Stream for a mixed scenario's subscribing client c.
func (p *Plan) mixedStream(c *Client, pub uint32) (StreamKind, int) {
	mx := p.shared.mix
	gp := p.GroupOfPublisher(pub)
	if gp < 0 {
		return StreamUnknownPublisher, -1
	}
	g := mx.groups[gp]
	if !g.ExpectDelivery {
		return StreamNotExpected, -1
	}
	if c.Role == RoleRequester && pub == c.Number { // the responses to its own requests
		return StreamExpected, -1
	}
	topic := mx.pub[gp].expand(int(pub)-mx.pubBase[gp], g.IDPrefix)
	sg := &mx.m.subs[mx.subOf[c.GroupID]]
	own := false
	for k := range sg.filters {
		f := &sg.filters[k]
		j, ok := f.match(topic, sg.prefix)
		if !ok || (j >= 0 && j != c.Index) {
			continue
		}
		if f.shared && j < 0 {
			return StreamExpected, sg.share[k]
		}
		own = true
	}
	if own {
		return StreamExpected, -1
	}
	return StreamNotExpected, -1
}

// mixedOutside is ReceivedOutside for a shard of a mixed scenario's plan.
func (p *Plan) mixedOutside(pub uint32) bool {
	mx := p.shared.mix
	gp := p.GroupOfPublisher(pub)
	if gp < 0 || !mx.groups[gp].ExpectDelivery {
		return false
	}
	topic := mx.pub[gp].expand(int(pub)-mx.pubBase[gp], mx.groups[gp].IDPrefix)
	return mx.m.anyReceiver(topic, func(gid, j int) bool {
		if j >= 0 {
			return !p.subscribesIn(gid, j)
		}
		return !p.subscribesAllOf(gid)
	})
}

// mixedReceivesOutside is ReceivesOutside for a mixed plan: the publishers of every group
// that expects delivery, against every subscribing group's filters.
func (p *Plan) mixedReceivesOutside() bool {
	mx := p.shared.mix
	here := func(gid, j int) bool {
		if j >= 0 {
			return p.subscribesIn(gid, j)
		}
		return p.subscribesAnyOf(gid)
	}
	budget := receivesBudget
	for gp, g := range mx.groups {
		if mx.pubs[gp] == 0 || !g.ExpectDelivery {
			continue
		}
		for i := range mx.pubs[gp] {
			if p.Publishes(uint32(mx.pubBase[gp] + i)) {
				continue
			}
			if budget--; budget < 0 {
				return true
			}
			if mx.m.anyReceiver(mx.pub[gp].expand(i, g.IDPrefix), here) {
				return true
			}
		}
	}
	return false
}

// subscribesAnyOf reports whether a client of group gid subscribes in this plan.
func (p *Plan) subscribesAnyOf(gid int) bool {
	for _, seg := range p.segs {
		if seg.gid == gid && seg.role.Subscribes() && seg.hi > seg.lo {
			return true
		}
	}
	return false
}

// subscribesIn reports whether client j of group gid subscribes in this plan.
func (p *Plan) subscribesIn(gid, j int) bool {
	for _, seg := range p.segs {
		if seg.gid == gid && seg.role.Subscribes() && j >= seg.lo && j < seg.hi {
			return true
		}
	}
	return false
}

// subscribesAllOf reports whether every client of group gid is in this plan.
func (p *Plan) subscribesAllOf(gid int) bool {
	n := 0
	for _, seg := range p.segs {
		if seg.gid == gid && seg.role.Subscribes() {
			n += seg.hi - seg.lo
		}
	}
	return n == p.shared.mix.groups[gid].ClientCount
}

// countMixed counts the deliveries per second of every publishing group of the whole plan.
func (sh *planShared) countMixed() {
	mx := sh.mix
	mx.deliv = make([]float64, len(mx.groups))
	buf := make([]byte, 0, 64)
	for gid, g := range mx.groups {
		np := mx.pubs[gid]
		if np == 0 || !g.ExpectDelivery {
			continue
		}
		t := &mx.pub[gid]
		total := 0
		copies := func(topic string) int {
			n := mx.m.deliveries(topic)
			if g.has(BehaviourRequest) {
				n += max(mx.m.responses(topic), 1)
			}
			return n
		}
		if !t.indexed {
			total = copies(t.raw) * np
		} else {
			for j := range np {
				buf = appendParts(buf[:0], t.parts, j, g.IDPrefix)
				total += copies(string(buf))
			}
		}
		mx.deliv[gid] = float64(total) * g.PublishRate
		sh.deliveries += mx.deliv[gid]
	}
}

// mixedEstimate completes Estimate for a mixed scenario's plan: each publishing segment's
// messages and bytes at its group's rate, size and QoS.
func (p *Plan) mixedEstimate(e *Estimate, subscribing int) {
	sh := p.shared
	mx := sh.mix
	sh.once.Do(sh.countMixed)
	share := 0.0
	if sh.wholeSubscribing > 0 {
		share = float64(subscribing) / float64(sh.wholeSubscribing)
	}
	const ack = 4
	for _, seg := range p.segs {
		g := mx.groups[seg.gid]
		if !seg.role.Publishes() {
			continue
		}
		n := seg.hi - seg.lo
		if mx.pub[seg.gid].indexed {
			e.Topics += n
		} else {
			e.Topics = max(e.Topics, 1)
		}
		rate := float64(n) * g.PublishRate
		e.PublishPerSec += rate
		props := 0
		for i := range g.PublishProperties {
			props += g.PublishProperties[i].size()
		}
		topicLen := int(math.Round(mx.pub[seg.gid].avgLen(g.ClientCount, g.IDPrefix)))
		out := publishSize(topicLen, g.QoS, g.ProtocolVersion, props, g.PayloadSize)
		e.BytesOutPerSec += rate * float64(out)
		switch g.QoS {
		case 1:
			e.BytesInPerSec += rate * ack
		case 2:
			e.BytesInPerSec += rate * 2 * ack
			e.BytesOutPerSec += rate * ack
		}
		if g.QoS > 0 {
			inflight := min(int64(sh.s.Parameters.MaxInflight), int64(math.Ceil(g.PublishRate)))
			e.MemoryBytes += int64(n) * inflight * inflightEntry
		}
		if big := int64(out); big > 1<<10 {
			e.MemoryBytes += int64(n) * 2 * big
			e.SocketMemoryBytes += int64(n) * 2 * big
		}
	}
	// What the broker delivers to this plan's subscribing clients, at each publishing
	// group's size and QoS.
	for gid, g := range mx.groups {
		d := mx.deliv[gid] * share
		if d == 0 {
			continue
		}
		e.ReceivePerSec += d
		topicLen := int(math.Round(mx.pub[gid].avgLen(mx.pubs[gid], g.IDPrefix)))
		e.BytesInPerSec += d * float64(publishSize(topicLen, g.QoS, g.ProtocolVersion, 0, g.PayloadSize))
		switch g.QoS {
		case 1:
			e.BytesOutPerSec += d * ack
		case 2:
			e.BytesOutPerSec += d * 2 * ack
			e.BytesInPerSec += d * ack
		}
	}
}

// MaxGroups is the most groups a scenario lists: a group's number fits a byte.
const MaxGroups = 255

// GroupRuns maps an index (a client's plan index, a publisher number) to its group by runs
// of consecutive indexes of one group: a plan's clients and publishers come group by group,
// so a worker of a million holds a few runs where a byte per index was 30 KB.
type GroupRuns struct {
	End []int   // where each run ends (exclusive), ascending; the first begins at 0
	GID []uint8 // each run's group
}

// RunsOf returns the runs of table, the group of each index.
func RunsOf(table []uint8) GroupRuns {
	var g GroupRuns
	for _, gid := range table {
		g.add(1, gid)
	}
	return g
}

// Of returns the group of index i, -1 when no run holds it.
func (g GroupRuns) Of(i int) int {
	lo, hi := 0, len(g.End)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g.End[m] <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(g.End) || i < 0 {
		return -1
	}
	return int(g.GID[lo])
}

// add appends a run of n indexes of group gid.
func (g *GroupRuns) add(n int, gid uint8) {
	if n <= 0 {
		return
	}
	end := n
	if k := len(g.End); k > 0 {
		end += g.End[k-1]
		if g.GID[k-1] == gid {
			g.End[k-1] = end
			return
		}
	}
	g.End, g.GID = append(g.End, end), append(g.GID, gid)
}

// GroupTables returns, for a mixed scenario's plan, the groups of its clients (by plan
// index) and of the publisher numbers of the whole plan (Client.Number), as runs a
// recorder looks up per event; ok is false for a plain scenario.
func (p *Plan) GroupTables() (clients, publishers GroupRuns, ok bool) {
	mx := p.shared.mix
	if mx == nil {
		return GroupRuns{}, GroupRuns{}, false
	}
	for _, seg := range p.segs {
		clients.add(seg.hi-seg.lo, uint8(seg.gid))
	}
	for gid := range mx.groups {
		publishers.add(mx.pubs[gid], uint8(gid))
	}
	return clients, publishers, true
}

// GroupCounts returns, by GroupID, this plan's clients and its publishing clients (a
// shard's share of each group); nil, nil for a plain scenario.
func (p *Plan) GroupCounts() (clients, publishers []int) {
	mx := p.shared.mix
	if mx == nil {
		return nil, nil
	}
	clients, publishers = make([]int, len(mx.groups)), make([]int, len(mx.groups))
	for _, seg := range p.segs {
		clients[seg.gid] += seg.hi - seg.lo
		if seg.role.Publishes() {
			publishers[seg.gid] += seg.hi - seg.lo
		}
	}
	return clients, publishers
}

// Publishers returns the publisher numbers of the whole plan: Client.Number is below it.
func (p *Plan) Publishers() int {
	if mx := p.shared.mix; mx != nil {
		return mx.pubBase[len(mx.pubBase)-1] + mx.pubs[len(mx.pubs)-1]
	}
	if g := p.shared.s.Publishers; g != nil && p.shared.s.Type.hasPublishers() {
		return g.ClientCount
	}
	return 0
}

// Reconnects says whether the plan's clients reconnect when a held connection drops: some
// does (any), and, in a mixed run whose groups' policies differ, whether client i does
// (client; nil: every client as any says).
func (p *Plan) Reconnects() (any bool, client func(i int) bool) {
	mx := p.shared.mix
	if mx == nil {
		return p.shared.s.Parameters.Reconnect == ReconnectBackoff, nil
	}
	on := make([]bool, len(mx.groups))
	n := 0
	for gid, g := range mx.groups {
		if on[gid] = g.Reconnect == ReconnectBackoff; on[gid] {
			n++
		}
	}
	if n == 0 || n == len(on) {
		return n > 0, nil
	}
	return true, func(i int) bool {
		gid := p.GroupOfClient(i)
		return gid >= 0 && on[gid]
	}
}

// GroupSettings returns the connection settings of each group of the plan (CONNECT and
// PUBLISH properties among them): a plain scenario's publishers and subscribers (nil when
// absent), or a mixed scenario's groups by GroupID.
func (p *Plan) GroupSettings() []*Group {
	if mx := p.shared.mix; mx != nil {
		return mx.conf
	}
	return []*Group{p.shared.s.Publishers, p.shared.s.Subscribers}
}

// Storm is a reconnect storm of a plan: a group's churn.
type Storm struct {
	GroupID int
	Group   string
	At      time.Duration // from the start of publishing
	Clean   bool          // the clients come back with a clean session
	Down    time.Duration // how long they stay away
	Clients int           // the group's first Clients clients by index (of the whole plan)
	// Rate, if above 0, is steady churn: from At on, Rate of the Clients per second, in
	// index order, round and round (StormPos).
	Rate float64
}

// Storms returns the reconnect storms of the plan's groups, in group order; nil for a
// plain scenario.
func (p *Plan) Storms() []Storm {
	mx := p.shared.mix
	if mx == nil {
		return nil
	}
	var out []Storm
	for gid, g := range mx.groups {
		if c := g.Churn; c != nil {
			out = append(out, Storm{GroupID: gid, Group: g.Name, At: c.At, Clean: c.CleanSession, Down: c.Down, Clients: g.Churned(), Rate: c.Rate})
		}
	}
	return out
}

// InStorm reports whether client i of this plan (0 ≤ i < Len()) is one of st's clients.
func (p *Plan) InStorm(st Storm, i int) bool { return p.StormPos(st, i) >= 0 }

// StormPos returns the position of client i of this plan (0 ≤ i < Len()) among st's
// clients (its index in its group, the same in every shard), -1 when it is not one.
func (p *Plan) StormPos(st Storm, i int) int {
	for k := range p.segs {
		seg := &p.segs[k]
		n := seg.hi - seg.lo
		if i < n {
			if seg.gid == st.GroupID && seg.lo+i < st.Clients {
				return seg.lo + i
			}
			return -1
		}
		i -= n
	}
	return -1
}

// StormClients returns how many of this plan's clients st takes (a shard's share of them).
func (p *Plan) StormClients(st Storm) int {
	n := 0
	for _, seg := range p.segs {
		if seg.gid == st.GroupID {
			n += max(min(seg.hi, st.Clients)-seg.lo, 0)
		}
	}
	return n
}

// ShareGroups returns, by share index (Stream's share), the GroupID of the first group
// that subscribes through that share name; nil for a plain scenario.
func (p *Plan) ShareGroups() []uint8 {
	mx := p.shared.mix
	if mx == nil {
		return nil
	}
	out := make([]uint8, len(mx.m.shares))
	seen := make([]bool, len(out))
	for _, sg := range mx.m.subs {
		for _, k := range sg.share {
			if k >= 0 && !seen[k] {
				out[k], seen[k] = uint8(sg.gid), true
			}
		}
	}
	return out
}

// GroupNumbers returns, by GroupID, the publisher numbers (Client.Number) of each group's
// publishers in the whole plan, [from, to); nil for a plain scenario.
func (p *Plan) GroupNumbers() [][2]uint32 {
	mx := p.shared.mix
	if mx == nil {
		return nil
	}
	out := make([][2]uint32, len(mx.groups))
	for gid := range mx.groups {
		out[gid] = [2]uint32{uint32(mx.pubBase[gid]), uint32(mx.pubBase[gid] + mx.pubs[gid])}
	}
	return out
}
