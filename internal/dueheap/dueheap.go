// Package dueheap is the min-heap of publishers by next due time that the engine's loops
// (reactor) and the per-message floor client (internal/floor) share, so that the floor
// does the same scheduling work as the engine.
package dueheap

// Item is what a Heap holds: a pointer whose Due is its key, told its index on every move
// (-1 when popped), so that the owner can Fix it after changing Due or test membership.
type Item interface {
	Due() int64
	SetIndex(i int32)
}

// Heap orders its items by Due, earliest at index 0.
type Heap[T Item] []T

// Push adds p.
func (h *Heap[T]) Push(p T) {
	i := len(*h)
	*h = append(*h, p)
	p.SetIndex(int32(i))
	h.up(i)
}

// Pop removes and returns the earliest item; h must not be empty.
func (h *Heap[T]) Pop() T {
	old := *h
	n := len(old) - 1
	old.swap(0, n)
	p := old[n]
	var zero T
	old[n] = zero
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	p.SetIndex(-1)
	return p
}

// Init restores the order after any number of items changed their Due.
func (h Heap[T]) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Fix restores the order after the item at index i changed its Due.
func (h Heap[T]) Fix(i int) {
	h.down(i)
	h.up(i)
}

func (h Heap[T]) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].SetIndex(int32(i))
	h[j].SetIndex(int32(j))
}

func (h Heap[T]) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if h[i].Due() <= h[j].Due() {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h Heap[T]) down(i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h[r].Due() < h[l].Due() {
			j = r
		}
		if h[i].Due() <= h[j].Due() {
			return
		}
		h.swap(i, j)
		i = j
	}
}
