package bench

// Inbound packet limit of a run's clients (reactor.Config.MaxInbound).
const (
	// inboundHeadroom is what a packet may carry beyond its payload: a topic of up to
	// 64 KiB (the longest a two-byte length allows) and the fixed header, packet id and
	// properties, which a broker adds only a few of.
	inboundHeadroom = 64 << 10
	// minInbound is the smallest limit: what the engine accepted before the limit followed
	// the payload, so that small-payload runs still take the larger messages another
	// publisher of the broker may send (retained ones, a neighbour's).
	minInbound = 1 << 20
)

// inboundLimit returns the largest packet a client of a run whose payloads are payload
// bytes accepts from the broker: every message the plan publishes, and so every one it
// subscribes to, fits with its topic and properties. The limit bounds what a connection
// would buffer for one packet, not what it keeps: a buffer grows only to a packet that
// actually comes, so a higher limit costs nothing until it is used.
func inboundLimit(payload int) int { return max(payload+inboundHeadroom, minInbound) }
