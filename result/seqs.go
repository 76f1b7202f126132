package result

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// SeqRange is the sequence numbers [Lo, Hi) of one publisher.
type SeqRange struct{ Lo, Hi uint32 }

// Seqs is a set of one publisher's sequence numbers, as sorted, disjoint ranges. Its JSON
// is the smaller of two forms: {"ranges": [lo, hi, ...]}, half-open pairs (a stream
// received in order is one pair), or {"from": F, "bits": "base64"}, where bit i (the low
// bit of byte i/8 first) says whether F+i is in the set (a share group's member receives
// about every Nth message, which fragments ranges).
type Seqs []SeqRange

// Len returns the number of sequence numbers in s.
func (s Seqs) Len() int64 {
	var n int64
	for _, r := range s {
		n += int64(r.Hi - r.Lo)
	}
	return n
}

// Has reports whether seq is in s.
func (s Seqs) Has(seq uint32) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].Hi > seq }) // the first range ending above seq
	return i < len(s) && s[i].Lo <= seq
}

// UnionSeqs returns the union of sets, in a new slice.
func UnionSeqs(sets ...Seqs) Seqs {
	var all Seqs
	for _, s := range sets {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return nil
	}
	slices.SortFunc(all, func(a, b SeqRange) int { return cmp.Compare(a.Lo, b.Lo) })
	out := all[:1]
	for _, x := range all[1:] {
		last := &out[len(out)-1]
		if x.Lo <= last.Hi {
			last.Hi = max(last.Hi, x.Hi)
			continue
		}
		out = append(out, x)
	}
	return out
}

// seqsJSON is the JSON form of Seqs.
type seqsJSON struct {
	Ranges []uint32 `json:"ranges,omitempty"`
	From   uint32   `json:"from,omitempty"`
	Bits   []byte   `json:"bits,omitempty"`
}

// rangesSize and bitsSize estimate the bytes of s's JSON in each form.
func (s Seqs) rangesSize() int {
	n := 0
	for _, r := range s {
		n += digits(r.Lo) + digits(r.Hi) + 2
	}
	return n
}

func (s Seqs) bitsSize() int {
	if len(s) == 0 {
		return 0
	}
	bytes := (int64(s[len(s)-1].Hi-s[0].Lo) + 7) / 8
	return int(4*((bytes+2)/3)) + digits(s[0].Lo)
}

// jsonSize estimates the bytes of s's JSON.
func (s Seqs) jsonSize() int { return min(s.rangesSize(), s.bitsSize()) + 16 }

func digits(v uint32) int { return len(strconv.FormatUint(uint64(v), 10)) }

// MarshalJSON writes s in the smaller of its two forms.
func (s Seqs) MarshalJSON() ([]byte, error) {
	var j seqsJSON
	if len(s) > 0 && s.bitsSize() < s.rangesSize() {
		j.From = s[0].Lo
		j.Bits = make([]byte, (s[len(s)-1].Hi-j.From+7)/8)
		for _, r := range s {
			for v := r.Lo; v < r.Hi; v++ {
				i := v - j.From
				j.Bits[i/8] |= 1 << (i % 8)
			}
		}
	} else {
		j.Ranges = make([]uint32, 0, 2*len(s))
		for _, r := range s {
			j.Ranges = append(j.Ranges, r.Lo, r.Hi)
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads either form, and refuses ranges that are not sorted, disjoint and
// non-empty.
func (s *Seqs) UnmarshalJSON(b []byte) error {
	var j seqsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if len(j.Ranges) > 0 && len(j.Bits) > 0 {
		return errors.New("a sequence set has both ranges and bits: it is one or the other")
	}
	out := Seqs{}
	if len(j.Ranges)%2 != 0 {
		return fmt.Errorf("a sequence set has %d range bounds: they come in [lo, hi) pairs", len(j.Ranges))
	}
	for i := 0; i < len(j.Ranges); i += 2 {
		r := SeqRange{j.Ranges[i], j.Ranges[i+1]}
		if r.Hi <= r.Lo || (len(out) > 0 && r.Lo <= out[len(out)-1].Hi) {
			return fmt.Errorf("a sequence set's range [%d, %d) is empty or not after the one before: ranges are sorted and disjoint", r.Lo, r.Hi)
		}
		out = append(out, r)
	}
	for i, x := range j.Bits {
		for k := range uint32(8) {
			if x&(1<<k) == 0 {
				continue
			}
			v := j.From + uint32(i)*8 + k
			if n := len(out); n > 0 && out[n-1].Hi == v {
				out[n-1].Hi++
			} else {
				out = append(out, SeqRange{v, v + 1})
			}
		}
	}
	*s = out
	return nil
}

// Cover counts, for each sequence number of one publisher, how many of its streams hold
// it: a step function as flattened [from, count] pairs. From Cover[2k] on, Cover[2k+1]
// streams hold a number, up to the next step; below the first step none, and the last
// step's count is 0.
type Cover []uint32

// CoverOf returns the cover of sets, one per stream.
func CoverOf(sets []Seqs) Cover {
	var ev []coverEdge
	for _, s := range sets {
		for _, r := range s {
			ev = append(ev, coverEdge{r.Lo, 1}, coverEdge{r.Hi, -1})
		}
	}
	return steps(ev)
}

// At returns how many streams hold seq.
func (c Cover) At(seq uint32) int64 {
	k := sort.Search(len(c)/2, func(k int) bool { return c[2*k] > seq }) // the first step above seq
	if k == 0 {
		return 0
	}
	return int64(c[2*k-1])
}

// addCovers returns the cover of the streams of both.
func addCovers(a, b Cover) Cover {
	var ev []coverEdge
	for _, c := range []Cover{a, b} {
		var prev int64
		for k := 0; k+1 < len(c); k += 2 {
			ev = append(ev, coverEdge{c[k], int64(c[k+1]) - prev})
			prev = int64(c[k+1])
		}
	}
	return steps(ev)
}

// coverEdge is a change d of a cover's count at a sequence number.
type coverEdge struct {
	at uint32
	d  int64
}

// steps sums the changes of a count into a Cover.
func steps(ev []coverEdge) Cover {
	slices.SortFunc(ev, func(a, b coverEdge) int { return cmp.Compare(a.at, b.at) })
	var c Cover
	var n int64
	for i := 0; i < len(ev); {
		p := ev[i].at
		for ; i < len(ev) && ev[i].at == p; i++ {
			n += ev[i].d
		}
		if len(c) == 0 && n == 0 || len(c) > 0 && int64(c[len(c)-1]) == n {
			continue
		}
		c = append(c, p, uint32(n))
	}
	return c
}

// jsonSize estimates the bytes of c's JSON.
func (c Cover) jsonSize() int {
	n := 0
	for _, v := range c {
		n += digits(v) + 1
	}
	return n
}
