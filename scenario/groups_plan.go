package scenario

import "time"

// reports says whether the plan reports its groups: a file with groups does; a plain file's
// plan is one group, the run itself (see planShared.plain).
func (sh *planShared) reports() bool { return sh.plain == "" }

// reported returns the GroupID a plan reports for its group gid: gid, or 0 for a plain
// file's.
func (sh *planShared) reported(gid int) int {
	if !sh.reports() {
		return 0
	}
	return gid
}

// OwnBrokers returns the "host:port" of the brokers of groups with their own server
// (Client.OwnBroker indexes it); nil when no group has one.
func (p *Plan) OwnBrokers() []string { return p.shared.ownBrokers }

// GroupSummary describes one group of a plan for its figures.
type GroupSummary struct {
	Name       string
	Behaviours []Behaviour
	Clients    int // in the whole plan
	Publishers int
}

// Groups describes the groups of the whole plan, by GroupID: a mixed scenario's groups; nil
// for a plain scenario (one group, the run itself).
func (p *Plan) Groups() []GroupSummary {
	sh := p.shared
	if !sh.reports() {
		return nil
	}
	out := make([]GroupSummary, len(sh.groups))
	for gid, g := range sh.groups {
		out[gid] = GroupSummary{Name: g.Name, Behaviours: g.Behaviours, Clients: g.ClientCount, Publishers: sh.g[gid].pubs}
	}
	return out
}

// GroupOfPublisher returns the GroupID of the publisher numbered pub (Client.Number), -1
// when the plan has none of that number. For a plain scenario it is 0 for every number.
func (p *Plan) GroupOfPublisher(pub uint32) int {
	if !p.shared.reports() {
		return 0
	}
	return p.shared.groupOf(pub)
}

// groupOf returns the group of the publisher numbered pub, -1 when the plan has none.
func (sh *planShared) groupOf(pub uint32) int {
	for gid := range sh.g {
		if pg := &sh.g[gid]; int64(pub) >= int64(pg.pubBase) && int64(pub) < int64(pg.pubBase+pg.pubs) {
			return gid
		}
	}
	return -1
}

// GroupOfClient returns the GroupID of client i of this plan (0 ≤ i < Len()) without
// building the client.
func (p *Plan) GroupOfClient(i int) int {
	gid := p.groupOfClient(i)
	if gid < 0 {
		return -1
	}
	return p.shared.reported(gid)
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
// recorder looks up per event; ok is false for a plain scenario, whose recorder looks no
// group up.
func (p *Plan) GroupTables() (clients, publishers GroupRuns, ok bool) {
	sh := p.shared
	if !sh.reports() {
		return GroupRuns{}, GroupRuns{}, false
	}
	for _, seg := range p.segs {
		clients.add(seg.hi-seg.lo, uint8(seg.gid))
	}
	for gid := range sh.g {
		publishers.add(sh.g[gid].pubs, uint8(gid))
	}
	return clients, publishers, true
}

// GroupCounts returns, by GroupID, this plan's clients and its publishing clients (a
// shard's share of each group); nil, nil for a plain scenario.
func (p *Plan) GroupCounts() (clients, publishers []int) {
	sh := p.shared
	if !sh.reports() {
		return nil, nil
	}
	clients, publishers = make([]int, len(sh.groups)), make([]int, len(sh.groups))
	for _, seg := range p.segs {
		clients[seg.gid] += seg.hi - seg.lo
		if seg.role.Publishes() {
			publishers[seg.gid] += seg.hi - seg.lo
		}
	}
	return clients, publishers
}

// Publishers returns the publisher numbers of the whole plan: Client.Number is below it.
// A Connections file's plan counts its clients, which hold and publish nothing.
func (p *Plan) Publishers() int {
	sh := p.shared
	if sh.plain == TypeConnections {
		return sh.whole
	}
	n := 0
	for gid := range sh.g {
		n += sh.g[gid].pubs
	}
	return n
}

// Holds reports whether the plan's clients only connect and hold: no group publishes and
// the plan does not receive what others publish (Open), so that its run has no messaging
// phase: a Connections file, or groups that hold or subscribe with no publisher among
// them.
func (p *Plan) Holds() bool {
	for gid := range p.shared.g {
		if p.shared.g[gid].pubs > 0 {
			return false
		}
	}
	return !p.Open()
}

// MaxPayloadSize returns the largest payload of the plan's messages, the measurement
// header included: the parameters' payload_size, or a publishing group's above it.
func (p *Plan) MaxPayloadSize() int {
	sh := p.shared
	n := sh.s.Parameters.PayloadSize
	for gid, g := range sh.groups {
		if sh.g[gid].pubs > 0 {
			n = max(n, g.PayloadSize)
		}
	}
	return n
}

// Reconnects says whether the plan's clients reconnect when a held connection drops: some
// does (any), and, in a mixed run whose groups' policies differ, whether client i does
// (client; nil: every client as any says).
func (p *Plan) Reconnects() (any bool, client func(i int) bool) {
	sh := p.shared
	on := make([]bool, len(sh.groups))
	n := 0
	for gid, g := range sh.groups {
		if on[gid] = g.Reconnect == ReconnectBackoff; on[gid] {
			n++
		}
	}
	if n == 0 || n == len(on) {
		return n > 0, nil
	}
	return true, func(i int) bool {
		gid := p.groupOfClient(i)
		return gid >= 0 && on[gid]
	}
}

// groupOfClient returns the group of client i of this plan, -1 when there is none.
func (p *Plan) groupOfClient(i int) int {
	for k := range p.segs {
		n := p.segs[k].hi - p.segs[k].lo
		if i < n {
			return p.segs[k].gid
		}
		i -= n
	}
	return -1
}

// GroupSettings returns the connection settings of each group of the plan (CONNECT and
// PUBLISH properties among them), in the plan's group order: Client.Group is one of them.
func (p *Plan) GroupSettings() []*Group {
	out := make([]*Group, len(p.shared.g))
	for gid := range p.shared.g {
		out[gid] = p.shared.g[gid].conf
	}
	return out
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

// Storms returns the reconnect storms of the plan's groups, in group order; nil when no
// group churns (a plain scenario's never does).
func (p *Plan) Storms() []Storm {
	var out []Storm
	for gid, g := range p.shared.groups {
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
	sh := p.shared
	if !sh.reports() {
		return nil
	}
	out := make([]uint8, len(sh.m.shares))
	seen := make([]bool, len(out))
	for _, sg := range sh.m.subs {
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
	sh := p.shared
	if !sh.reports() {
		return nil
	}
	out := make([][2]uint32, len(sh.groups))
	for gid := range sh.g {
		pg := &sh.g[gid]
		out[gid] = [2]uint32{uint32(pg.pubBase), uint32(pg.pubBase + pg.pubs)}
	}
	return out
}
