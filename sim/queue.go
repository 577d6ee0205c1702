package sim

import "time"

// Item is one entry of a Queue: a value due at At, with Seq to order entries due at the
// same instant.
type Item[V any] struct {
	At    time.Duration
	Seq   uint64
	Value V
}

// before reports whether a leaves the queue before b: earlier At, then smaller Seq.
func (a *Item[V]) before(b *Item[V]) bool {
	return a.At < b.At || a.At == b.At && a.Seq < b.Seq
}

// Queue is a binary min-heap of items ordered by (At, Seq): the one priority queue of the
// project, under the event loop and everything else that waits for a virtual time. It is
// typed over what an item carries, so that pushing boxes nothing and the comparisons are
// inlined (container/heap takes an `any` per push and calls Less through an interface);
// once grown to its largest size it allocates nothing.
//
// Items with equal At and Seq leave in an order fixed by the heap's shape: deterministic
// for the same pushes, but not the order they were pushed in. Give each item its own Seq
// (as Loop does) for first-in, first-out among equals. The sift steps are those of
// container/heap, so a queue that leaves ties to the heap's shape pops them exactly as a
// container/heap of the same items would.
//
// The zero value is an empty queue.
type Queue[V any] struct {
	items []Item[V]
}

// Len is the number of items queued.
func (q *Queue[V]) Len() int { return len(q.items) }

// Min is the item that Pop would return, in place: after changing its At or Seq, call
// FixMin. It must not be called on an empty queue.
func (q *Queue[V]) Min() *Item[V] { return &q.items[0] }

// Push adds it.
func (q *Queue[V]) Push(it Item[V]) {
	q.items = append(q.items, it)
	q.up(len(q.items) - 1)
}

// Pop removes and returns the first item by (At, Seq). It must not be called on an
// empty queue.
func (q *Queue[V]) Pop() Item[V] {
	h := q.items
	last := len(h) - 1
	top := h[0]
	h[0] = h[last]
	h[last] = Item[V]{} // drop what the value references, so the collector can free it
	q.items = h[:last]
	q.down(0)
	return top
}

// FixMin restores the order after the first item's At or Seq changed: cheaper than a Pop
// and a Push of the same item.
func (q *Queue[V]) FixMin() { q.down(0) }

// Init orders items pushed with Append, in O(n).
func (q *Queue[V]) Init() {
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// Append adds it without ordering the queue; call Init before the next Pop, Min or Push.
func (q *Queue[V]) Append(it Item[V]) { q.items = append(q.items, it) }

func (q *Queue[V]) up(j int) {
	h := q.items
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !h[j].before(&h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		j = i
	}
}

func (q *Queue[V]) down(i int) {
	h := q.items
	n := len(h)
	for {
		j := 2*i + 1 // left child
		if j >= n {
			break
		}
		if r := j + 1; r < n && h[r].before(&h[j]) {
			j = r
		}
		if !h[j].before(&h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}
