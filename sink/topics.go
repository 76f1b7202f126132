package sink

// The subscription table: a trie of topic levels. Each node holds the plain subscriptions
// whose filter ends at it and the shared groups ("$share/<group>/<filter>") whose filter ends
// at it; "+" and "#" are children of their own. It is owned by the event loop, so nothing locks.

// subRef is one subscription held by a node: the session and the QoS it was granted.
type subRef struct {
	s       *session
	qos     byte
	noLocal bool // 5.0: not the subscriber's own messages [MQTT-3.8.3-3]
}

// group is a shared subscription group on one filter: each message goes to one member, round
// robin.
type group struct {
	name    string
	members []subRef
	next    int
}

type node struct {
	parent   *node
	key      string // this node's level in parent.children; "+" and "#" for the wildcard children
	children map[string]*node
	plus     *node // the "+" level below this one
	hash     *node // the "#" level below this one
	subs     []subRef
	groups   []*group
}

func (n *node) empty() bool {
	return len(n.children) == 0 && n.plus == nil && n.hash == nil && len(n.subs) == 0 && len(n.groups) == 0
}

// child returns the node for level under n, creating it.
func (n *node) child(level string) *node {
	switch level {
	case "+":
		if n.plus == nil {
			n.plus = &node{parent: n, key: "+"}
		}
		return n.plus
	case "#":
		if n.hash == nil {
			n.hash = &node{parent: n, key: "#"}
		}
		return n.hash
	}
	c := n.children[level]
	if c == nil {
		if n.children == nil {
			n.children = make(map[string]*node)
		}
		c = &node{parent: n, key: level}
		n.children[level] = c
	}
	return c
}

// prune removes n and its empty ancestors from the trie.
func (n *node) prune() {
	for n.parent != nil && n.empty() {
		p := n.parent
		switch {
		case p.plus == n:
			p.plus = nil
		case p.hash == n:
			p.hash = nil
		default:
			delete(p.children, n.key)
		}
		n = p
	}
}

// splitShare splits "$share/<group>/<filter>" into group and filter; ok is false for a filter
// that is not shared. A shared filter with an empty group or filter, or a wildcard in the group,
// is reported with bad.
func splitShare(f []byte) (grp, filter []byte, ok, bad bool) {
	const prefix = "$share/"
	if len(f) < len(prefix) || string(f[:len(prefix)]) != prefix {
		return nil, f, false, false
	}
	rest := f[len(prefix):]
	for i, c := range rest {
		switch c {
		case '/':
			if i == 0 || i == len(rest)-1 {
				return nil, nil, true, true // [MQTT-4.8.2-1] [MQTT-4.8.2-2]
			}
			return rest[:i], rest[i+1:], true, false
		case '+', '#':
			return nil, nil, true, true // [MQTT-4.8.2-2]
		}
	}
	return nil, nil, true, true
}

// nodeFor returns the node for filter, creating the path.
func (t *table) nodeFor(filter []byte) *node {
	n := &t.root
	start := 0
	for i := 0; i <= len(filter); i++ {
		if i == len(filter) || filter[i] == '/' {
			n = n.child(string(filter[start:i]))
			start = i + 1
		}
	}
	return n
}

// table is the subscription trie with the scratch state of one match.
type table struct {
	root    node
	epoch   uint64   // bumped per match; a session marked with it is already in matches
	matches []subRef // the result of the last match, one per session, with the highest QoS
	from    *session // the publisher of the current match, for NoLocal
	count   int      // subscriptions in the table
}

// add records a subscription of s to filter (already validated by the codec) with qos, or
// updates its QoS if s already has it. It returns false for a malformed shared filter.
func (t *table) add(s *session, filter []byte, qos byte, noLocal bool) bool {
	grp, f, shared, bad := splitShare(filter)
	if bad {
		return false
	}
	for i := range s.subs {
		if s.subs[i].filter == string(filter) {
			s.subs[i].set(s, qos, noLocal)
			return true
		}
	}
	n := t.nodeFor(f)
	e := subEntry{filter: string(filter), n: n}
	if shared {
		for _, g := range n.groups {
			if g.name == string(grp) {
				e.g = g
				break
			}
		}
		if e.g == nil {
			e.g = &group{name: string(grp)}
			n.groups = append(n.groups, e.g)
		}
		e.g.members = append(e.g.members, subRef{s, qos, noLocal})
	} else {
		n.subs = append(n.subs, subRef{s, qos, noLocal})
	}
	s.subs = append(s.subs, e)
	t.count++
	return true
}

// remove drops s's subscription to filter; it reports whether there was one.
func (t *table) remove(s *session, filter []byte) bool {
	for i := range s.subs {
		if s.subs[i].filter == string(filter) {
			s.subs[i].drop(s)
			s.subs[i] = s.subs[len(s.subs)-1]
			s.subs = s.subs[:len(s.subs)-1]
			t.count--
			return true
		}
	}
	return false
}

// removeAll drops every subscription of s.
func (t *table) removeAll(s *session) {
	for i := range s.subs {
		s.subs[i].drop(s)
	}
	t.count -= len(s.subs)
	s.subs = nil
}

// subEntry is one subscription as its session remembers it, to update or remove it.
type subEntry struct {
	filter string
	n      *node
	g      *group // nil for a plain subscription
}

func (e *subEntry) list() *[]subRef {
	if e.g != nil {
		return &e.g.members
	}
	return &e.n.subs
}

func (e *subEntry) set(s *session, qos byte, noLocal bool) {
	l := *e.list()
	for i := range l {
		if l[i].s == s {
			l[i].qos, l[i].noLocal = qos, noLocal
		}
	}
}

func (e *subEntry) drop(s *session) {
	l := e.list()
	for i := range *l {
		if (*l)[i].s == s {
			last := len(*l) - 1
			(*l)[i] = (*l)[last]
			(*l)[last] = subRef{}
			*l = (*l)[:last]
			break
		}
	}
	if e.g != nil && len(e.g.members) == 0 {
		gs := e.n.groups
		for i, g := range gs {
			if g == e.g {
				gs[i] = gs[len(gs)-1]
				gs[len(gs)-1] = nil
				e.n.groups = gs[:len(gs)-1]
				break
			}
		}
	}
	e.n.prune()
}

// match fills t.matches with one entry per session subscribed to topic, with the highest QoS
// of its matching subscriptions [MQTT-3.3.5-1], and one member of each matching shared group.
// A NoLocal subscription of from does not match.
// It does not allocate once t.matches has grown to the largest fan-out.
func (t *table) match(topic []byte, from *session) []subRef {
	t.epoch++
	t.from = from
	t.matches = t.matches[:0]
	t.walk(&t.root, topic, 0, len(topic) > 0 && topic[0] == '$')
	return t.matches
}

// walk matches topic[off:] (off is the start of a level, or len(topic)+1 past the last level)
// below n. dollar keeps wildcards at the first level from matching a "$" topic [MQTT-4.7.2-1].
func (t *table) walk(n *node, topic []byte, off int, dollar bool) {
	if n.hash != nil && !dollar {
		t.collect(n.hash) // "a/#" matches "a" and everything below it [MQTT-4.7.1-2]
	}
	if off > len(topic) {
		t.collect(n)
		return
	}
	end := off
	for end < len(topic) && topic[end] != '/' {
		end++
	}
	if c := n.children[string(topic[off:end])]; c != nil {
		t.walk(c, topic, end+1, false)
	}
	if n.plus != nil && !dollar {
		t.walk(n.plus, topic, end+1, false)
	}
}

func (t *table) collect(n *node) {
	for _, r := range n.subs {
		t.add1(r)
	}
	for _, g := range n.groups {
		if len(g.members) == 0 {
			continue
		}
		if g.next >= len(g.members) {
			g.next = 0
		}
		t.add1(g.members[g.next])
		g.next++
	}
}

func (t *table) add1(r subRef) {
	s := r.s
	if r.noLocal && s == t.from {
		return
	}
	if s.mark == t.epoch {
		if m := &t.matches[s.matchIdx]; r.qos > m.qos {
			m.qos = r.qos
		}
		return
	}
	s.mark, s.matchIdx = t.epoch, int32(len(t.matches))
	t.matches = append(t.matches, r)
}
