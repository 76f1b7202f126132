package result

import (
	"slices"
	"strconv"
	"strings"
)

// Cycle says which of a publisher's messages a stream expects when the publisher cycles
// over topics that do not all reach the stream's receiver: those whose sequence number
// modulo Len is one of Pos (ascending, each below Len). The stream's received set (its
// Seqs, a Cover of such streams) then numbers them in order, its own numbering (Index):
// a subscriber of one topic of three holds message 3k as k, so that a stream received in
// order is one range, as a whole publisher's is. A nil *Cycle is the identity: every
// message, numbered by its sequence number.
type Cycle struct {
	Len uint32   `json:"len"`
	Pos []uint32 `json:"pos"`
	// rank is each position's index in Pos, -1 for one not there (NewCycle; nil for a
	// Cycle read from JSON, whose Index searches Pos).
	rank []int32
}

// NewCycle returns the cycle of n positions of which pos (ascending, each below n) are
// expected.
func NewCycle(n int, pos []int) *Cycle {
	c := &Cycle{Len: uint32(n), Pos: make([]uint32, len(pos)), rank: make([]int32, n)}
	for i := range c.rank {
		c.rank[i] = -1
	}
	for i, p := range pos {
		c.Pos[i], c.rank[p] = uint32(p), int32(i)
	}
	return c
}

// Index returns the stream's own number of the publisher's message seq, and whether the
// stream expects that message at all. A nil c returns seq, true.
func (c *Cycle) Index(seq uint32) (uint32, bool) {
	if c == nil {
		return seq, true
	}
	if c.Len == 0 { // not a cycle (a document's): nothing expected
		return 0, false
	}
	q, r := seq/c.Len, seq%c.Len
	var k int
	if c.rank != nil {
		if k = int(c.rank[r]); k < 0 {
			return 0, false
		}
	} else {
		var ok bool
		if k, ok = slices.BinarySearch(c.Pos, r); !ok {
			return 0, false
		}
	}
	return q*uint32(len(c.Pos)) + uint32(k), true
}

// Key returns a string that is the same for equal cycles ("" for nil), to group streams
// by how they number their messages.
func (c *Cycle) Key() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(c.Len), 10))
	for _, p := range c.Pos {
		b.WriteByte(',')
		b.WriteString(strconv.FormatUint(uint64(p), 10))
	}
	return b.String()
}

// jsonSize estimates the bytes of c's JSON (0 for nil: omitted).
func (c *Cycle) jsonSize() int {
	if c == nil {
		return 0
	}
	n := 30 + digits(c.Len)
	for _, p := range c.Pos {
		n += digits(p) + 1
	}
	return n
}
