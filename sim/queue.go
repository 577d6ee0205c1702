package sim

import (
	"math/bits"
	"time"
)

// Item is one entry of a Queue: a value due at At, with Seq to order entries due at the
// same instant.
type Item[V any] struct {
	At    time.Duration
	Seq   uint64
	Value V
}

// before reports whether a leaves the queue before b: earlier At, then smaller Seq.
func (a *Item[V]) before(b *Item[V]) bool { return a.beforeBit(b) != 0 }

// beforeBit is before as 1 or 0, without a branch: (At, Seq) compared as one 128-bit
// number, the borrow of Seq's subtraction carried into At's (whose sign bit is flipped
// so that the unsigned subtraction orders it as signed). A heap's choice between two
// children is a coin toss to the branch predictor; this makes it two instructions.
func (a *Item[V]) beforeBit(b *Item[V]) uint64 {
	const sign = 1 << 63
	_, borrow := bits.Sub64(a.Seq, b.Seq, 0)
	_, borrow = bits.Sub64(uint64(a.At)^sign, uint64(b.At)^sign, borrow)
	return borrow
}

// Queue is a binary min-heap of items ordered by (At, Seq): the one priority queue of the
// project, under the event loop and everything else that waits for a virtual time. It is
// typed over what an item carries, so that pushing boxes nothing and the comparisons are
// inlined (container/heap takes an `any` per push and calls Less through an interface);
// once grown to its largest size it allocates nothing.
//
// Items with equal At and Seq leave in an order fixed by the heap's shape: deterministic
// for the same pushes, but not the order they were pushed in. Give each item its own Seq
// (as Loop does) for first-in, first-out among equals. After every operation the items
// are arranged as container/heap would arrange them, so a queue that leaves ties to the
// heap's shape pops them exactly as a container/heap of the same items would.
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
	moved := h[last]
	h[last] = Item[V]{} // drop what the value references, so the collector can free it
	q.items = h[:last]
	if last > 0 {
		q.down(0, moved)
	}
	return top
}

// FixMin restores the order after the first item's At or Seq changed: cheaper than a Pop
// and a Push of the same item.
func (q *Queue[V]) FixMin() { q.down(0, q.items[0]) }

// Init orders items pushed with Append, in O(n).
func (q *Queue[V]) Init() {
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i, q.items[i])
	}
}

// Reset empties the queue and keeps its room.
func (q *Queue[V]) Reset() {
	clear(q.items)
	q.items = q.items[:0]
}

// Append adds it without ordering the queue; call Init before the next Pop, Min or Push.
func (q *Queue[V]) Append(it Item[V]) { q.items = append(q.items, it) }

// up moves the item at j toward the root while it leaves before its parent. Parents move
// down into the hole it leaves rather than being swapped with it, which is the same
// arrangement as container/heap's swaps with a third of the copying.
func (q *Queue[V]) up(j int) {
	h := q.items
	x := h[j]
	for j > 0 {
		i := (j - 1) / 2 // parent
		if !x.before(&h[i]) {
			break
		}
		h[j] = h[i]
		j = i
	}
	h[j] = x
}

// down places x, which belongs at i, below the children that leave before it, as up
// does: the same arrangement as container/heap's swaps. It goes the bottom-up way: the
// hole first follows the earlier child of each level down to a leaf, one comparison a
// level, and x then climbs back from there past the children that leave after it. The
// children on that path leave in order, so x ends where container/heap's sift would have
// stopped (after the last that leaves before it); but an item put back at the top of a
// queue usually belongs near the bottom (a client's next event is later than most of the
// others'), and then the climb is a comparison or two instead of a second one per level.
func (q *Queue[V]) down(i int, x Item[V]) {
	h := q.items
	n := len(h)
	top := i
	for {
		j := 2*i + 1 // left child
		if j >= n {
			break
		}
		if j+1 < n {
			j += int(h[j+1].beforeBit(&h[j]))
		}
		h[i] = h[j]
		i = j
	}
	for i > top {
		p := (i - 1) / 2 // parent
		if h[p].before(&x) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}
