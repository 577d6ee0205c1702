package server

import "container/heap"

// keyTable interns the keys a Handler has seen into the small integer ids the limiters
// index their state by, and holds at most max of them. A key is evicted only once it is
// idle: its last decision's Reset has run out, so its state in the limiter is what a key
// never seen would have (a limiter's Reset is the time until it "has fully recovered (an
// idle key's state)"). Evicting such a key loses nothing: when it comes back, under the
// same id or another, every decision is the one it would have had. Its id goes to the
// next newcomer, so the limiters' per-key state never grows past max ids either.
//
// Idle keys are found with a min-heap on the time each becomes idle. Each decision
// evicts at most two idle keys, so the table follows the number of active keys without a
// sweep; when it is full and no key is idle, a newcomer is turned away (lookup reports
// when the first key will be idle) rather than sharing or resetting a key that still holds
// state — the first would refuse strangers together, the second would hand its owner a
// fresh quota.
type keyTable struct {
	max     int
	byName  map[string]*keyEntry
	idle    idleHeap // every entry, soonest idle first
	free    []uint32 // ids of evicted keys, for reuse
	nextID  uint32   // ids below it have been handed out
	evicted int64
}

// keyEntry is one key held.
type keyEntry struct {
	name   string
	id     uint32
	idleAt int64 // ns: when the key's state is back to a fresh key's
	index  int   // position in the heap
}

func newKeyTable(max int) *keyTable {
	return &keyTable{max: max, byName: map[string]*keyEntry{}}
}

// lookup returns the entry of name at now, adding it when there is room. When the table
// is full and no key is idle, it returns nil and the time until the first key is idle.
func (t *keyTable) lookup(name string, now int64) (*keyEntry, int64) {
	t.evictIdle(now, 2)
	if e, ok := t.byName[name]; ok {
		return e, 0
	}
	if len(t.byName) >= t.max {
		return nil, t.idle[0].idleAt - now
	}
	e := &keyEntry{name: name, idleAt: now}
	if n := len(t.free); n > 0 {
		e.id, t.free = t.free[n-1], t.free[:n-1]
	} else {
		e.id = t.nextID
		t.nextID++
	}
	t.byName[name] = e
	heap.Push(&t.idle, e)
	return e, 0
}

// touch records that e's state will be back to a fresh key's at idleAt.
func (t *keyTable) touch(e *keyEntry, idleAt int64) {
	e.idleAt = idleAt
	heap.Fix(&t.idle, e.index)
}

// evictIdle evicts up to n keys idle at now.
func (t *keyTable) evictIdle(now int64, n int) {
	for ; n > 0 && len(t.idle) > 0 && t.idle[0].idleAt <= now; n-- {
		e := heap.Pop(&t.idle).(*keyEntry)
		delete(t.byName, e.name)
		t.free = append(t.free, e.id)
		t.evicted++
	}
}

// idleHeap orders entries by idleAt.
type idleHeap []*keyEntry

func (h idleHeap) Len() int           { return len(h) }
func (h idleHeap) Less(i, j int) bool { return h[i].idleAt < h[j].idleAt }
func (h idleHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *idleHeap) Push(x any) {
	e := x.(*keyEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *idleHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
