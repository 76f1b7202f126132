package scenario

import "slices"

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
// copy per group: the group's members share one stream). Of a publisher that cycles over
// topics, the stream is expected when one of its topics reaches the client (StreamCycle
// says which of its messages). It expands topics, so call it once per stream, not per
// message.
func (p *Plan) Stream(i int, pub uint32) (kind StreamKind, share int) {
	kind, share, _ = p.stream(i, pub)
	return kind, share
}

// StreamCycle says which of the messages of the publisher numbered pub the stream of
// client i expects (an expected Stream), when the publisher cycles over topics that do
// not all reach the client (or its share group): those whose sequence number modulo n is
// one of positions (ascending). positions is nil when the stream expects every message.
// It expands topics, so call it once per stream, not per message.
func (p *Plan) StreamCycle(i int, pub uint32) (positions []int, n int) {
	if gp := p.shared.groupOf(pub); gp < 0 || len(p.shared.g[gp].cycle) < 2 {
		return nil, 0 // the common case, at once: a publisher of one topic
	}
	kind, share, topics := p.stream(i, pub)
	if kind != StreamExpected || len(topics) < 2 {
		return nil, 0
	}
	sh := p.shared
	c := p.Client(i)
	sg := &sh.m.subs[sh.g[p.groupOfClient(i)].sub]
	for k, t := range topics {
		if p.takes(t, sg, c.Index, share) {
			positions = append(positions, k)
		}
	}
	if len(positions) == len(topics) {
		return nil, 0
	}
	return positions, len(topics)
}

// StreamPart is one more stream on which a client receives some of a cycling publisher's
// messages (StreamAlso): its share index (-1: the client's own stream) and the positions
// of the cycle of N topics whose messages it takes.
type StreamPart struct {
	Share     int
	Positions []int
	N         int
}

// StreamAlso returns the other streams, beside Stream's (and StreamCycle's positions), on
// which client i receives messages of the publisher numbered pub: a publisher that cycles
// over topics may reach the client through its own filters with some and through a share
// group with others (or through two share groups), each way a stream of its own. nil for
// the common case of one stream. It expands topics, so call it once per stream.
func (p *Plan) StreamAlso(i int, pub uint32) []StreamPart {
	if gp := p.shared.groupOf(pub); gp < 0 || len(p.shared.g[gp].cycle) < 2 {
		return nil
	}
	kind, first, topics := p.stream(i, pub)
	if kind != StreamExpected || len(topics) < 2 {
		return nil
	}
	sh := p.shared
	c := p.Client(i)
	sg := &sh.m.subs[sh.g[p.groupOfClient(i)].sub]
	var out []StreamPart
	own := first < 0 // Stream's is the client's own
	for _, t := range topics {
		ok, s := sh.m.classify(t, sg, c.Index)
		switch {
		case !ok || s == first:
			continue
		case s < 0 && !own:
			own = true
			out = append(out, StreamPart{Share: -1})
		case s >= 0 && !slices.ContainsFunc(out, func(x StreamPart) bool { return x.Share == s }):
			out = append(out, StreamPart{Share: s})
		}
	}
	for k := range out {
		out[k].N = len(topics)
		for q, t := range topics {
			if p.takes(t, sg, c.Index, out[k].Share) {
				out[k].Positions = append(out[k].Positions, q)
			}
		}
	}
	return out
}

// takes reports whether the stream share (-1: a client's own) of client index of
// subscribing group sg takes the messages published to topic: a share group those of the
// topics any of its shared filters matches, the client's own stream those it receives
// through its own filters alone.
func (p *Plan) takes(topic string, sg *subGroup, index, share int) bool {
	m := p.shared.m
	if share >= 0 {
		return m.shareReaches(topic, share)
	}
	ok, s := m.classify(topic, sg, index)
	return ok && s < 0
}

// stream is Stream, with the publisher's topics expanded (nil when it is not a plan's
// publisher whose copies are classified by topic).
func (p *Plan) stream(i int, pub uint32) (kind StreamKind, share int, topics []string) {
	c := p.Client(i)
	if !c.Role.Subscribes() {
		return StreamNotSubscribed, -1, nil
	}
	sh := p.shared
	if p.Open() {
		return StreamExpected, -1, nil
	}
	gp := sh.groupOf(pub)
	if gp < 0 {
		return StreamUnknownPublisher, -1, nil
	}
	g := sh.groups[gp]
	if !g.ExpectDelivery {
		return StreamNotExpected, -1, nil
	}
	if c.Role == RoleRequester && pub == c.Number { // the responses to its own requests
		return StreamExpected, -1, nil
	}
	topics = sh.topicsOf(gp, int(pub)-sh.g[gp].pubBase)
	sg := &sh.m.subs[sh.g[p.groupOfClient(i)].sub]
	for _, t := range topics { // the first topic that reaches it: the others may be StreamAlso's
		if ok, s := sh.m.classify(t, sg, c.Index); ok {
			return StreamExpected, s, topics
		}
	}
	return StreamNotExpected, -1, topics
}

// topicsOf returns the topics publisher j of group gp publishes to, expanded: its one
// topic, or the topics it cycles over.
func (sh *planShared) topicsOf(gp, j int) []string {
	pg := &sh.g[gp]
	ids := sh.groups[gp].ids()
	if len(pg.cycle) < 2 {
		return []string{pg.pub.expand(j, ids)}
	}
	out := make([]string, len(pg.cycle))
	for k := range pg.cycle {
		out[k] = pg.cycle[k].expand(j, ids)
	}
	return out
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
	outside := func(gid, j int) bool {
		if j >= 0 {
			return !p.subscribesIn(gid, j)
		}
		return !p.subscribesAllOf(gid)
	}
	for _, topic := range sh.topicsOf(gp, int(pub)-sh.g[gp].pubBase) {
		if sh.m.anyReceiver(topic, outside) {
			return true
		}
	}
	return false
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
			for _, topic := range sh.topicsOf(gp, i) {
				if sh.m.anyReceiver(topic, here) {
					return true
				}
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
