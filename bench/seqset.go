package bench

import (
	"sort"

	"github.com/mqblast/mqblast/result"
)

// seqSet is a set of sequence numbers as sorted, disjoint, half-open ranges [lo, hi): a
// stream received in order is one range, each gap adds one. n counts the members. Its
// ranges are a result.Seqs, which joins sets (Finish).
type seqSet struct {
	r result.Seqs
	n int64
}

// maxRanges bounds a set's ranges (a stream with that many gaps): past it the two lowest
// ranges are joined without counting the gap as received, so a copy that arrives later in
// that gap counts as a duplicate rather than growing memory without bound.
const maxRanges = 1 << 16

// add inserts seq and reports whether it was there already (dup) or arrived below the
// highest number received (late: out of order).
func (s *seqSet) add(seq uint32) (dup, late bool) {
	n := len(s.r)
	if n > 0 {
		last := &s.r[n-1]
		if seq == last.Hi && seq != ^uint32(0) { // the common case: the next in order
			last.Hi++
			s.n++
			return false, false
		}
		if seq < last.Hi {
			return s.insert(seq)
		}
	}
	if n >= maxRanges {
		s.r[1].Lo = s.r[0].Lo
		s.r = append(s.r[:0], s.r[1:]...)
	}
	s.r = append(s.r, result.SeqRange{Lo: seq, Hi: seq + 1})
	s.n++
	return false, false
}

// insert adds seq below the last range's end.
func (s *seqSet) insert(seq uint32) (dup, late bool) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].Hi > seq }) // first range ending above seq
	if s.r[i].Lo <= seq {
		return true, false
	}
	s.n++
	switch {
	case s.r[i].Lo == seq+1 && i > 0 && s.r[i-1].Hi == seq: // fills a gap of one: join
		s.r[i-1].Hi = s.r[i].Hi
		s.r = append(s.r[:i], s.r[i+1:]...)
	case s.r[i].Lo == seq+1:
		s.r[i].Lo = seq
	case i > 0 && s.r[i-1].Hi == seq:
		s.r[i-1].Hi++
	default:
		s.r = append(s.r, result.SeqRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = result.SeqRange{Lo: seq, Hi: seq + 1}
	}
	return false, true
}
