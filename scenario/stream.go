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
func (p *Plan) Open() bool { return p.shared.s.Type == TypeSubscribe }

// Stream says whether client i of the plan (0 ≤ i < Len()) should receive the messages of
// the publisher numbered pub (its index in the publishers group), and on which stream:
// share is -1 for the client's own stream, or the index of the shared filter through
// which its share group receives them (one copy per group: the group's members share
// one stream). It expands topics, so call it once per stream, not per message.
func (p *Plan) Stream(i int, pub uint32) (kind StreamKind, share int) {
	c := p.Client(i)
	if !c.Role.Subscribes() {
		return StreamNotSubscribed, -1
	}
	sh := p.shared
	if sh.mix != nil {
		return p.mixedStream(&c, pub)
	}
	s := sh.s
	if s.Type == TypeSubscribe {
		return StreamExpected, -1
	}
	g := s.Publishers
	if g == nil || int64(pub) >= int64(g.ClientCount) {
		return StreamUnknownPublisher, -1
	}
	if c.Role == RoleRoundTrip {
		if int(pub) == c.Index {
			return StreamExpected, -1
		}
		return StreamNotExpected, -1
	}
	topic := sh.m.pub.expand(int(pub), g.IDPrefix)
	own := false
	for k := range sh.m.filters {
		f := &sh.m.filters[k]
		j, ok := f.match(topic, sh.m.prefix)
		if !ok || (j >= 0 && j != c.Index) {
			continue
		}
		if f.shared && j < 0 {
			return StreamExpected, k
		}
		own = true
	}
	if own {
		return StreamExpected, -1
	}
	return StreamNotExpected, -1
}

// Publishes reports whether the publisher numbered pub (its index in the publishers group)
// is one of this plan's clients: a shard holds a slice of the publishers.
func (p *Plan) Publishes(pub uint32) bool {
	if mx := p.shared.mix; mx != nil {
		for _, seg := range p.segs {
			if seg.role.Publishes() {
				b := int64(mx.pubBase[seg.gid])
				if int64(pub) >= b+int64(seg.lo) && int64(pub) < b+int64(seg.hi) {
					return true
				}
			}
		}
		return false
	}
	for _, seg := range p.segs {
		if seg.role.Publishes() && int64(pub) >= int64(seg.lo) && int64(pub) < int64(seg.hi) {
			return true
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
	s := sh.s
	if sh.mix != nil {
		return p.n != sh.whole && p.mixedOutside(pub)
	}
	g := s.Publishers
	if p.n == sh.whole || s.Type == TypeSubscribe || g == nil || int64(pub) >= int64(g.ClientCount) {
		return false
	}
	if s.Type == TypeRoundTrip { // each client receives its own messages alone (Stream)
		return !p.subscribes(int(pub))
	}
	topic := sh.m.pub.expand(int(pub), g.IDPrefix)
	for k := range sh.m.filters {
		j, ok := sh.m.filters[k].match(topic, sh.m.prefix)
		switch {
		case !ok || j >= sh.m.subs:
		case j >= 0 && !p.subscribes(j): // a filter of one subscriber's
			return true
		case j < 0 && !p.subscribesAll(): // every subscriber's, or a share group's
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
	s := sh.s
	if p.n == sh.whole || !p.subscribesAny() {
		return false
	}
	if sh.mix != nil {
		return p.mixedReceivesOutside()
	}
	g := s.Publishers
	if s.Type == TypeSubscribe || g == nil {
		return false
	}
	budget := receivesBudget
	for pub := range g.ClientCount {
		if p.Publishes(uint32(pub)) {
			continue
		}
		if budget--; budget < 0 {
			return true
		}
		if s.Type == TypeRoundTrip { // each client receives its own messages alone (Stream)
			if p.subscribes(pub) {
				return true
			}
			continue
		}
		topic := sh.m.pub.expand(pub, g.IDPrefix)
		for k := range sh.m.filters {
			j, ok := sh.m.filters[k].match(topic, sh.m.prefix)
			switch {
			case !ok || j >= sh.m.subs:
			case j >= 0 && p.subscribes(j): // a filter of one subscriber's
				return true
			case j < 0: // every subscriber's, or a share group's: this plan has subscribers
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

// subscribes reports whether client j of the subscribing group is in this plan.
func (p *Plan) subscribes(j int) bool {
	for _, seg := range p.segs {
		if seg.role.Subscribes() && j >= seg.lo && j < seg.hi {
			return true
		}
	}
	return false
}

// subscribesAll reports whether every client of the subscribing group is in this plan.
func (p *Plan) subscribesAll() bool {
	n := 0
	for _, seg := range p.segs {
		if seg.role.Subscribes() {
			n += seg.hi - seg.lo
		}
	}
	return n == p.shared.wholeSubscribing
}
