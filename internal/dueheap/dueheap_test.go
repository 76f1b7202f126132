package dueheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type item struct {
	due int64
	idx int32
}

func (p *item) Due() int64       { return p.due }
func (p *item) SetIndex(i int32) { p.idx = i }

// TestOrderAndIndexes pushes, re-keys (one by one, then many at once) and pops random items
// against a sorted copy: items come out earliest first, and every item knows its index (-1
// once popped).
func TestOrderAndIndexes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var h Heap[*item]
	var all []*item
	for range 500 {
		p := &item{due: r.Int64N(1000)}
		all = append(all, p)
		h.Push(p)
	}
	for _, p := range all[:100] { // re-key a fifth of them in place
		p.due = r.Int64N(1000)
		h.Fix(int(p.idx))
	}
	for _, p := range all[200:] { // re-key more than half of them at once
		p.due = r.Int64N(1000)
	}
	h.Init()
	check := func() {
		for i, p := range h {
			if int(p.idx) != i {
				t.Fatalf("item at %d thinks it is at %d", i, p.idx)
			}
		}
	}
	check()
	want := make([]int64, len(all))
	for i, p := range all {
		want[i] = p.due
	}
	slices.Sort(want)
	var got []int64
	for len(h) > 0 {
		p := h.Pop()
		if p.idx != -1 {
			t.Fatalf("popped item keeps index %d", p.idx)
		}
		got = append(got, p.due)
		if len(got)%50 == 0 {
			check()
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("popped out of order:\n got %v\nwant %v", got[:20], want[:20])
	}
}

func TestPushPopAllocs(t *testing.T) {
	h := make(Heap[*item], 0, 64)
	items := make([]*item, 64)
	for i := range items {
		items[i] = &item{due: int64(i * 7 % 64)}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, p := range items {
			h.Push(p)
		}
		for len(h) > 0 {
			p := h.Pop()
			p.due += 3
		}
	}); n != 0 {
		t.Errorf("%v allocations per 64 pushes and pops", n)
	}
}
