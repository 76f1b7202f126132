package result

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSeqs: membership, size and union of range sets, and their JSON in the smaller form:
// ranges for a stream received in order, bits for a share group member's every third.
func TestSeqs(t *testing.T) {
	t.Parallel()
	s := Seqs{{0, 9}, {20, 21}}
	if !s.Has(20) || s.Has(19) || !s.Has(0) || s.Has(21) || s.Len() != 10 {
		t.Errorf("%v: has or len wrong", s)
	}
	u := UnionSeqs(s, Seqs{{7, 11}, {19, 20}, {30, 31}})
	if want := (Seqs{{0, 11}, {19, 21}, {30, 31}}); !cmp.Equal(u, want) || u.Len() != 14 {
		t.Errorf("union %v, want %v", u, want)
	}
	if s[0] != (SeqRange{0, 9}) {
		t.Errorf("union changed its input: %v", s)
	}
	var every3 Seqs
	for v := uint32(1000); v < 4000; v += 3 {
		every3 = append(every3, SeqRange{v, v + 1})
	}
	for _, c := range []struct {
		name string
		s    Seqs
		form string
	}{{"in order", Seqs{{0, 5000}}, `"ranges":[0,5000]`}, {"gaps", Seqs{{0, 100}, {100000, 100005}}, `"ranges":[0,100,100000,100005]`},
		{"every third", every3, `"from":1000,"bits":"`}, {"empty", Seqs{}, `{}`}} {
		b, err := json.Marshal(c.s)
		if err != nil || !strings.Contains(string(b), c.form) {
			t.Errorf("%s: %s %v, want %s", c.name, b, err, c.form)
			continue
		}
		var back Seqs
		if err := json.Unmarshal(b, &back); err != nil || back.Len() != c.s.Len() || !cmp.Equal(UnionSeqs(back), UnionSeqs(c.s)) {
			t.Errorf("%s: %s read back as %v (%v)", c.name, b, back, err)
		}
	}
	for _, bad := range []string{`{"ranges":[5,3]}`, `{"ranges":[1,2,2,3]}`, `{"ranges":[1]}`, `{"ranges":[1,2],"bits":"AQ=="}`} {
		var x Seqs
		if err := json.Unmarshal([]byte(bad), &x); err == nil {
			t.Errorf("%s read as %v, want an error", bad, x)
		}
	}
}

// TestCover: how many streams hold each number, and the sum of two covers.
func TestCover(t *testing.T) {
	t.Parallel()
	a := CoverOf([]Seqs{{{0, 10}}, {{0, 5}, {7, 10}}, {{0, 12}}})
	if want := (Cover{0, 3, 5, 2, 7, 3, 10, 1, 12, 0}); !cmp.Equal(a, want) {
		t.Errorf("cover %v, want %v", a, want)
	}
	for seq, n := range map[uint32]int64{0: 3, 4: 3, 5: 2, 6: 2, 7: 3, 10: 1, 11: 1, 12: 0, 99: 0} {
		if a.At(seq) != n {
			t.Errorf("At(%d) = %d, want %d", seq, a.At(seq), n)
		}
	}
	b := CoverOf([]Seqs{{{3, 8}}})
	sum := addCovers(a, b)
	for seq := range uint32(14) {
		if sum.At(seq) != a.At(seq)+b.At(seq) {
			t.Errorf("sum At(%d) = %d, want %d", seq, sum.At(seq), a.At(seq)+b.At(seq))
		}
	}
	if c := CoverOf(nil); len(c) != 0 || c.At(3) != 0 {
		t.Errorf("empty cover %v", c)
	}
}

// TestJoinBound: a join past its bound leaves its largest pieces out and says so; a merge
// of it marks the figures inexact rather than joining what it lacks.
func TestJoinBound(t *testing.T) {
	t.Parallel()
	var every2 Seqs
	for v := uint32(0); v < 20000; v += 2 { // 10,000 numbers: ~1.7 KB of bits
		every2 = append(every2, SeqRange{v, v + 1})
	}
	j := &Join{Shares: []JoinShare{{Share: 0, Publisher: 1, Seqs: every2}, {Share: 0, Publisher: 3, Seqs: Seqs{{0, 10}}}},
		Ends: []JoinEnd{{Publisher: 4, Receivers: 2, Seqs: []uint32{9}, Got: []int64{1}}}}
	j.bound(1000)
	if len(j.Shares) != 1 || j.Shares[0].Publisher != 3 || len(j.Ends) != 1 ||
		j.Omitted != "1 share-group sets left out over the 1000-byte bound" {
		t.Fatalf("bound: %d shares, %d ends, omitted %q", len(j.Shares), len(j.Ends), j.Omitted)
	}
	if b, err := json.Marshal(j); err != nil || len(b) > 1000 {
		t.Fatalf("bound join: %d bytes (%v), bound 1000", len(b), err)
	}
	a := &Result{Schema: Schema, Join: j.Seal()}
	a.SetTotal(NewSnapshot())
	other := &Result{Schema: Schema}
	other.SetTotal(NewSnapshot())
	m := Merge([]*Result{a, other})
	if m.Messages.Inexact != j.Omitted || m.Join != nil {
		t.Errorf("merged: inexact %q, join %v", m.Messages.Inexact, m.Join)
	}
	if again := Merge([]*Result{m}); again.Messages.Inexact != j.Omitted {
		t.Errorf("the merged document merged alone: inexact %q, want %q", again.Messages.Inexact, j.Omitted)
	}
	if (&Join{}).Seal() != nil {
		t.Error("an empty join is not nil once sealed")
	}
}
