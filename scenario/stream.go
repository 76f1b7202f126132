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
