package sim

import (
	"container/heap"
	"math/rand/v2"
	"testing"
	"time"
)

// refHeap is container/heap over the same items: the oracle for the order of ties.
type refHeap []Item[int]

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	return h[i].At < h[j].At || h[i].At == h[j].At && h[i].Seq < h[j].Seq
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(Item[int])) }
func (h *refHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Items with equal (At, Seq) leave in the heap's order, so code that leaves ties to the
// heap (the traffic generators' spawners) must see exactly what container/heap gave it:
// the same items after any mix of Init, Push, Pop and FixMin, in the same places.
func TestQueueBreaksTiesLikeContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var q Queue[int]
		var ref refHeap
		item := func(v int) Item[int] {
			// Few distinct times and a shared Seq of 0 for most: many ties.
			it := Item[int]{At: time.Duration(rng.IntN(5)), Value: v}
			if rng.IntN(4) == 0 {
				it.Seq = uint64(rng.IntN(3))
			}
			return it
		}
		n := rng.IntN(40)
		for v := range n {
			it := item(v)
			q.Append(it)
			ref = append(ref, it)
		}
		q.Init()
		heap.Init(&ref)
		for step := range 300 {
			switch op := rng.IntN(3); {
			case op == 0 || q.Len() == 0:
				it := item(1000 + step)
				q.Push(it)
				heap.Push(&ref, it)
			case op == 1:
				got, want := q.Pop(), heap.Pop(&ref).(Item[int])
				if got != want {
					t.Fatalf("trial %d step %d: Pop = %+v, container/heap %+v", trial, step, got, want)
				}
			default:
				at := time.Duration(rng.IntN(5))
				q.Min().At = at
				q.FixMin()
				ref[0].At = at
				heap.Fix(&ref, 0)
			}
			if q.Len() != ref.Len() {
				t.Fatalf("trial %d step %d: %d items, container/heap %d", trial, step, q.Len(), ref.Len())
			}
			for i := range ref {
				if q.items[i] != ref[i] {
					t.Fatalf("trial %d step %d: item %d is %+v, container/heap has %+v", trial, step, i, q.items[i], ref[i])
				}
			}
		}
	}
}

// With a Seq per push, equal times leave first in, first out.
func TestQueuePopsInTimeThenSeqOrder(t *testing.T) {
	var q Queue[string]
	q.Push(Item[string]{At: 2, Seq: 1, Value: "c"})
	q.Push(Item[string]{At: 1, Seq: 2, Value: "a"})
	q.Push(Item[string]{At: 2, Seq: 3, Value: "d"})
	q.Push(Item[string]{At: 1, Seq: 4, Value: "b"})
	var got string
	for q.Len() > 0 {
		got += q.Pop().Value
	}
	if got != "abcd" {
		t.Fatalf("popped %q, want abcd", got)
	}
}

func TestQueueDoesNotAllocateOnceGrown(t *testing.T) {
	var q Queue[int32]
	for i := range 64 {
		q.Push(Item[int32]{At: time.Duration(i * 7 % 13), Seq: uint64(i), Value: int32(i)})
	}
	seq := uint64(64)
	allocs := testing.AllocsPerRun(1000, func() {
		it := q.Pop()
		seq++
		it.At += 5
		it.Seq = seq
		q.Push(it)
	})
	if allocs != 0 {
		t.Fatalf("a pop and a push allocate %v times", allocs)
	}
}
