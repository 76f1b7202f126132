package scenario

// matcher counts the deliveries of a message from its topic over every subscribing group of
// a scenario: one per subscribing client with a matching filter, one per share name (across
// groups: a share name is one share group at the broker) with a matching shared filter.
type matcher struct {
	subs   []subGroup
	shares []string // share names, in order of appearance
	// byFilter numbers a shared filter's stream (Stream's share index) by the filter's
	// index in its group, as a plain file's subscribers' streams are numbered, instead of by
	// its share name.
	byFilter bool
}

type subGroup struct {
	gid     int // index in the scenario's groups
	filters []filter
	share   []int // the index of each filter's share name in matcher.shares, -1: not shared
	n       int   // clients
	ids     idForm
	respond bool // a respond group: it answers the requests it receives
}

// newMatcher compiles the filters of the subscribing groups (see matcher.byFilter).
func newMatcher(groups []*ClientGroup, byFilter bool) *matcher {
	m := &matcher{byFilter: byFilter}
	for gid, g := range groups {
		if g == nil || !g.Subscribes() {
			continue
		}
		sg := subGroup{gid: gid, n: g.ClientCount, ids: g.ids(), respond: g.Responds()}
		for _, raw := range g.subscribed() {
			f := compileFilter(raw)
			k := -1
			if f.shared {
				k = indexOf(m.shares, f.share)
				if k < 0 {
					k = len(m.shares)
					m.shares = append(m.shares, f.share)
				}
			}
			sg.filters = append(sg.filters, f)
			sg.share = append(sg.share, k)
		}
		m.subs = append(m.subs, sg)
	}
	return m
}

// stream returns the share index of the stream of a copy received through filter k of sg.
func (m *matcher) stream(sg *subGroup, k int) int {
	if m.byFilter {
		return k
	}
	return sg.share[k]
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// anyReceiver reports whether a subscribing group's filter matches topic for a receiver f
// accepts: client j of group gid (j >= 0, a filter of that client's own), or j < 0 for the
// group's filter every member has, or its share group's.
func (m *matcher) anyReceiver(topic string, f func(gid, j int) bool) bool {
	for si := range m.subs {
		sg := &m.subs[si]
		for k := range sg.filters {
			if j, ok := sg.filters[k].match(topic, sg.ids); ok && j < sg.n && f(sg.gid, j) {
				return true
			}
		}
	}
	return false
}

// deliveries returns the copies of a message published to topic that the broker delivers
// to the subscribing groups.
func (m *matcher) deliveries(topic string) int { return m.count(topic, false) }

// responses returns the responses to a request published to topic that the respond groups
// send: one per respond client, or share group, that receives it.
func (m *matcher) responses(topic string) int { return m.count(topic, true) }

// count is deliveries, of the respond groups alone when respond is set.
func (m *matcher) count(topic string, respond bool) int {
	var shareBuf [8]int
	shares := shareBuf[:0]
	n := 0
	for gi := range m.subs {
		sg := &m.subs[gi]
		if respond && !sg.respond {
			continue
		}
		all := false
		var idxBuf [8]int
		idx := idxBuf[:0]
		for k := range sg.filters {
			f := &sg.filters[k]
			j, ok := f.match(topic, sg.ids)
			if !ok || j >= sg.n {
				continue
			}
			switch {
			case f.shared:
				if !containsInt(shares, sg.share[k]) {
					shares = append(shares, sg.share[k])
				}
			case j < 0:
				all = true
			case !containsInt(idx, j):
				idx = append(idx, j)
			}
		}
		if all {
			n += sg.n
		} else {
			n += len(idx)
		}
	}
	return n + len(shares)
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// classify says how client index of subscribing group sg receives a message published to
// topic: through the share group of one of the group's shared filters (share ≥ 0, the
// stream's share index), through a filter of its own (ok, share -1), or not at all. A
// shared filter wins over the client's own: its copies are counted on the share group's
// stream (Plan.Stream).
func (m *matcher) classify(topic string, sg *subGroup, index int) (ok bool, share int) {
	own := false
	for k := range sg.filters {
		f := &sg.filters[k]
		j, hit := f.match(topic, sg.ids)
		if !hit || (j >= 0 && j != index) {
			continue
		}
		if f.shared && j < 0 {
			return true, m.stream(sg, k)
		}
		own = true
	}
	return own, -1
}

// shareReaches reports whether share group share (a stream's share index) receives a
// message published to topic: a shared filter of that index matches it, in any group.
func (m *matcher) shareReaches(topic string, share int) bool {
	for si := range m.subs {
		sg := &m.subs[si]
		for k := range sg.filters {
			f := &sg.filters[k]
			if !f.shared || m.stream(sg, k) != share {
				continue
			}
			if j, ok := f.match(topic, sg.ids); ok && j < 0 {
				return true
			}
		}
	}
	return false
}
