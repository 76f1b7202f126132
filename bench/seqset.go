package bench

import "sort"

// seqSet is a set of sequence numbers as sorted, disjoint, half-open ranges [lo, hi): a
// stream received in order is one range, each gap adds one. n counts the members.
type seqSet struct {
	r []seqRange
	n int64
}

type seqRange struct{ lo, hi uint32 }

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
		if seq == last.hi && seq != ^uint32(0) { // the common case: the next in order
			last.hi++
			s.n++
			return false, false
		}
		if seq < last.hi {
			return s.insert(seq)
		}
	}
	if n >= maxRanges {
		s.r[1].lo = s.r[0].lo
		s.r = append(s.r[:0], s.r[1:]...)
	}
	s.r = append(s.r, seqRange{seq, seq + 1})
	s.n++
	return false, false
}

// insert adds seq below the last range's end.
func (s *seqSet) insert(seq uint32) (dup, late bool) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > seq }) // first range ending above seq
	if s.r[i].lo <= seq {
		return true, false
	}
	s.n++
	switch {
	case s.r[i].lo == seq+1 && i > 0 && s.r[i-1].hi == seq: // fills a gap of one: join
		s.r[i-1].hi = s.r[i].hi
		s.r = append(s.r[:i], s.r[i+1:]...)
	case s.r[i].lo == seq+1:
		s.r[i].lo = seq
	case i > 0 && s.r[i-1].hi == seq:
		s.r[i-1].hi++
	default:
		s.r = append(s.r, seqRange{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = seqRange{seq, seq + 1}
	}
	return false, true
}

// has reports whether seq is in the set.
func (s *seqSet) has(seq uint32) bool {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].hi > seq })
	return i < len(s.r) && s.r[i].lo <= seq
}

// union adds o's members to s.
func (s *seqSet) union(o *seqSet) {
	if len(o.r) == 0 {
		return
	}
	all := make([]seqRange, 0, len(s.r)+len(o.r))
	all = append(all, s.r...)
	all = append(all, o.r...)
	sort.Slice(all, func(i, j int) bool { return all[i].lo < all[j].lo })
	out := all[:1]
	for _, x := range all[1:] {
		last := &out[len(out)-1]
		if x.lo <= last.hi {
			last.hi = max(last.hi, x.hi)
			continue
		}
		out = append(out, x)
	}
	s.r = out
	s.n = 0
	for _, x := range out {
		s.n += int64(x.hi - x.lo)
	}
}
