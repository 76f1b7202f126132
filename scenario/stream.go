package scenario

// StreamKind says what the messages of one publisher mean to one receiving client of a
// plan: loss is counted per expected stream, and what arrives for no expected stream is
// unexpected and never offsets a loss.
type StreamKind uint8

// Kinds of streams.
const (
	// StreamExpected: the client subscribed to a filter that matches the publisher's
	// topic; the plan counts this copy in the publisher's Receivers.
	StreamExpected StreamKind = iota
	// StreamUnknownPublisher: the plan has no publisher of that number.
	StreamUnknownPublisher
	// StreamNotSubscribed: the client never subscribes (a publisher, an idle client).
	StreamNotSubscribed
	// StreamNotExpected: the client subscribes, but none of its filters matches the
	// publisher's topic.
	StreamNotExpected
	// NumStreamKinds is the number of kinds, for arrays indexed by StreamKind.
	NumStreamKinds
)

var streamKindNames = [NumStreamKinds]string{"expected", "unknown_publisher", "not_subscribed", "not_expected"}

// String returns the snake_case name used in results.
func (k StreamKind) String() string {
	if k < NumStreamKinds {
		return streamKindNames[k]
	}
	return "unknown"
}

// Open reports whether the plan does not know its publishers (a Subscribe scenario: what
// arrives comes from publishers outside the plan), so that every stream is accepted and no
// loss can be computed.
func (p *Plan) Open() bool { return p.shared.plain == TypeSubscribe }

// Stream says whether client i of the plan (0 ≤ i < Len()) should receive the messages of
// the publisher numbered pub (Client.Number), and on which stream: share is -1 for the
// client's own stream, or the share index through which its share group receives them (one
// copy per group: the group's members share one stream). It expands topics, so call it
// once per stream, not per message.
func (p *Plan) Stream(i int, pub uint32) (kind StreamKind, share int) {
	c := p.Client(i)
	if !c.Role.Subscribes() {
		return StreamNotSubscribed, -1
	}
	sh := p.shared
	if p.Open() {
		return StreamExpected, -1
	}
	gp := sh.groupOf(pub)
	if gp < 0 {
		return StreamUnknownPublisher, -1
	}
	g := sh.groups[gp]
	if !g.ExpectDelivery {
		return StreamNotExpected, -1
	}
	if c.Role == RoleRequester && pub == c.Number { // the responses to its own requests
		return StreamExpected, -1
	}
	topic := sh.g[gp].pub.expand(int(pub)-sh.g[gp].pubBase, g.ids())
	sg := &sh.m.subs[sh.g[p.groupOfClient(i)].sub]
	own := false
	for k := range sg.filters {
		f := &sg.filters[k]
		j, ok := f.match(topic, sg.ids)
		if !ok || (j >= 0 && j != c.Index) {
			continue
		}
		if f.shared && j < 0 {
			return StreamExpected, sh.m.stream(sg, k)
		}
		own = true
	}
	if own {
		return StreamExpected, -1
	}
	return StreamNotExpected, -1
}

// Publishes reports whether the publisher numbered pub (Client.Number) is one of this
// plan's clients: a shard holds a slice of the publishers.
func (p *Plan) Publishes(pub uint32) bool {
	for _, seg := range p.segs {
		if seg.role.Publishes() {
			b := int64(p.shared.g[seg.gid].pubBase)
			if int64(pub) >= b+int64(seg.lo) && int64(pub) < b+int64(seg.hi) {
				return true
			}
		}
	}
	return false
}

// ReceivedOutside reports whether a client outside this plan (in another shard of the
// whole) may receive the messages of the publisher numbered pub on an expected stream,
// its own or its share group's: never for a whole plan. Like Stream it expands topics, so
// call it once per publisher, not per message.
func (p *Plan) ReceivedOutside(pub uint32) bool {
	sh := p.shared
	gp := sh.groupOf(pub)
	if p.n == sh.whole || gp < 0 || !sh.groups[gp].ExpectDelivery {
		return false
	}
	topic := sh.g[gp].pub.expand(int(pub)-sh.g[gp].pubBase, sh.groups[gp].ids())
	return sh.m.anyReceiver(topic, func(gid, j int) bool {
		if j >= 0 {
			return !p.subscribesIn(gid, j)
		}
		return !p.subscribesAllOf(gid)
	})
}

// receivesBudget bounds the publishers outside a plan ReceivesOutside examines: past it, it
// answers true (a part that may receive their copies waits out its drain time).
const receivesBudget = 100_000

// ReceivesOutside reports whether a client of this plan (a shard of the whole) may receive,
// on an expected stream, the messages of a publisher outside it: never for a whole plan. A
// part that does cannot tell from its own figures when its copies are in. Like Stream it
// expands topics: it examines at most receivesBudget outside publishers, and answers true
// past them.
func (p *Plan) ReceivesOutside() bool {
	sh := p.shared
	if p.n == sh.whole || !p.subscribesAny() {
		return false
	}
	here := func(gid, j int) bool {
		if j >= 0 {
			return p.subscribesIn(gid, j)
		}
		return p.subscribesAnyOf(gid)
	}
	budget := receivesBudget
	for gp, g := range sh.groups {
		pg := &sh.g[gp]
		if pg.pubs == 0 || !g.ExpectDelivery {
			continue
		}
		for i := range pg.pubs {
			if p.Publishes(uint32(pg.pubBase + i)) {
				continue
			}
			if budget--; budget < 0 {
				return true
			}
			if sh.m.anyReceiver(pg.pub.expand(i, g.ids()), here) {
				return true
			}
		}
	}
	return false
}

// subscribesAny reports whether a subscribing client (of any group) is in this plan.
func (p *Plan) subscribesAny() bool {
	for _, seg := range p.segs {
		if seg.role.Subscribes() && seg.hi > seg.lo {
			return true
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
	return n == p.shared.groups[gid].ClientCount
}
