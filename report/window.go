package report

import (
	"math"
	"math/bits"
	"unsafe"
)

// keyWindows holds, per key, the (time, cost) entries that the algorithms of a group
// admitted inside the trailing window, and each algorithm's sum of them: what the
// reference verdicts and peak_window_admitted read. The algorithms of a group (its
// members, at most maxMembers) decide the same requests in the same order against the
// same promise, so they share one window per key: an entry is a request that at least
// one member admitted, marked with the members that did, and every member's window is
// its marked entries. A key costs one slot, one cache line, for all of them, and one
// index per request instead of one per algorithm.
//
// Most keys of a large key space hold at most one entry at a time (a user seen a few
// times an hour), so a slot keeps one entry inline, and only a key that holds a second
// entry at once gets a ring of its own, with the members' sums beside it. A key that has
// spilled keeps its ring, as an algorithms.Log keeps its capacity: memory is the
// high-water mark, not the traffic.
type keyWindows struct {
	members  int
	stride   uint32 // words per ring entry: t, cost, and the members' mask when there are several
	slots    []windowSlot
	spills   []*spillBlock // spilled keys' rings, spillBlockSize a block
	nspilled int           // how many keys have spilled
	pool     ringPool

	// releaseIdle makes a spilled key whose window has emptied give its ring back to the
	// pool and its place among the spilled to the next key that spills (free): memory
	// then follows the keys active at once rather than every key that was ever busy, as a
	// replay of many hours needs.
	releaseIdle bool
	free        []int // spill places given back

	touched int64 // what touch read, kept so that its reads are not dropped
}

// spillBlockSize is how many spilled keys a block holds. Blocks are filled one after the
// other and never moved, so a run that spills hundreds of thousands of keys neither
// copies their rings' headers as it grows nor leaves old copies to the garbage collector.
const spillBlockSize = 1024

// spillBlock holds the rings of spilled keys and, beside them, their members' sums:
// ring j's are sums[j*members : (j+1)*members].
type spillBlock struct {
	rings []spillRing
	sums  []int64
}

// ringPool keeps the rings keys have outgrown, by size, for the next key that needs a ring
// of that size. Rings move up as keys get busier; without the pool every doubling would
// leave the smaller ring to the garbage collector, and a large run would carry tens of
// megabytes of them between collections.
type ringPool struct {
	free  [32][][]int64 // by bits.Len of the ring's length in words
	words int64         // words held by the free rings
}

func (p *ringPool) get(words int) []int64 {
	class := bits.Len(uint(words))
	if n := len(p.free[class]); n > 0 {
		r := p.free[class][n-1]
		p.free[class] = p.free[class][:n-1]
		p.words -= int64(len(r))
		return r
	}
	return make([]int64, words)
}

func (p *ringPool) put(r []int64) {
	class := bits.Len(uint(len(r)))
	p.free[class] = append(p.free[class], r)
	p.words += int64(len(r))
}

// maxMembers is the most algorithms a group of windows can mark entries for.
const maxMembers = 64

// windowSlot is one key's window. It holds one of three things:
//
//	nothing yet          cost == 0 and ref == 0
//	one entry inline     cost >= 1: the entry (t, cost), admitted by the members in ref
//	a spilled ring       cost == 0 and ref >= 1: spilled ring ref−1; t is its oldest entry's
//	                     time, noEntry when it holds none
type windowSlot struct {
	t    int64
	cost uint32
	ref  uint32
}

// spillRing is the ring of a key that has held two entries at once: its entries, oldest
// at head, each stride words: time, cost and, when the windows have several members, the
// members that admitted it (one member needs no mask, and its entries take 16 bytes).
type spillRing struct {
	words []int64 // a power of two entries of stride words
	head  uint32  // entry index of the oldest
	n     uint32  // entries held
}

// entry returns the i-th entry from the oldest.
func (r *spillRing) entry(i, stride uint32) (t, cost int64, members uint64) {
	at := ((r.head + i) & (r.entries(stride) - 1)) * stride
	e := r.words[at : at+stride : at+stride]
	members = 1
	if stride == 3 {
		members = uint64(e[2])
	}
	return e[0], e[1], members
}

// entries is the ring's capacity in entries.
func (r *spillRing) entries(stride uint32) uint32 {
	if stride == 2 {
		return uint32(len(r.words)) / 2
	}
	return uint32(len(r.words)) / 3 // constant divisors compile to a multiplication
}

// noEntry is the oldest time of an empty spilled window: later than any cutoff, so that
// expire does not look at the ring.
const noEntry = math.MaxInt64

// minSpillCapacity is the capacity of a ring when a key first spills.
const minSpillCapacity = 4

func newKeyWindows(members int) *keyWindows {
	if members < 1 || members > maxMembers {
		panic("report: key windows for 1 to 64 algorithms")
	}
	w := &keyWindows{members: members, stride: 2}
	if members > 1 {
		w.stride = 3
	}
	return w
}

// slot returns key's slot, growing the table to hold it.
func (w *keyWindows) slot(key uint32) *windowSlot {
	if int(key) >= len(w.slots) {
		w.slots = append(w.slots, make([]windowSlot, int(key)+1-len(w.slots))...)
	}
	return &w.slots[key]
}

// Touch reads the windows of keys (the keys of the requests about to be observed, in
// any order), so that Observe finds them in cache. A window is one random read in a table
// of every key, a cache miss per request when the keys are many; read one after the
// other, as Observe reads them, each miss waits for the one before, while these reads do
// not depend on one another and the processor has a dozen of them on their way at once.
// Keys without a window yet are skipped. Nothing changes.
func (g *Group) Touch(keys []uint32) { g.windows.touch(keys) }

func (w *keyWindows) touch(keys []uint32) {
	var sum int64
	slots := w.slots
	for _, k := range keys {
		if int(k) < len(slots) {
			sum += slots[k].t
		}
	}
	w.touched += sum
}

// spilled returns the ring and the members' sums of a spilled slot, or nil.
func (w *keyWindows) spilled(s *windowSlot) (*spillRing, []int64) {
	if s.cost != 0 || s.ref == 0 {
		return nil, nil
	}
	i := int(s.ref - 1)
	b, j, m := w.spills[i/spillBlockSize], i%spillBlockSize, w.members
	return &b.rings[j], b.sums[j*m : (j+1)*m : (j+1)*m]
}

// expire drops the entries of s with t <= cutoff. The slot knows its oldest time, so a
// spilled key's ring is read only when an entry is actually due to go.
func (w *keyWindows) expire(s *windowSlot, cutoff int64) {
	if s.t > cutoff {
		return
	}
	if s.cost != 0 {
		s.cost, s.ref = 0, 0
		return
	}
	r, sums := w.spilled(s)
	if r == nil {
		return
	}
	for r.n > 0 {
		t, cost, members := r.entry(0, w.stride)
		if t > cutoff {
			s.t = t
			return
		}
		for m := members; m != 0; m &= m - 1 {
			sums[bits.TrailingZeros64(m)] -= cost
		}
		r.head = (r.head + 1) & (r.entries(w.stride) - 1)
		r.n--
	}
	r.head = 0
	s.t = noEntry
	if w.releaseIdle {
		// Every entry has left, so every member's sum is back at zero.
		w.pool.put(r.words)
		r.words = nil
		w.free = append(w.free, int(s.ref-1))
		*s = windowSlot{}
	}
}

// sum returns member's total cost held in s.
func (w *keyWindows) sum(s *windowSlot, member int) int64 {
	if s.cost != 0 {
		if s.ref&(1<<member) != 0 {
			return int64(s.cost)
		}
		return 0
	}
	if _, sums := w.spilled(s); sums != nil {
		return sums[member]
	}
	return 0
}

// sumAfter returns member's total cost held in s in entries later than cutoff, without
// dropping any: what sum would return after expire(s, cutoff). Readers that look at a key
// at an earlier time than its own requests do (the timeline at a bin's start) use it, so
// that the window stays as every member's next request expects it.
func (w *keyWindows) sumAfter(s *windowSlot, member int, cutoff int64) int64 {
	sum := w.sum(s, member)
	if s.t > cutoff || sum == 0 {
		return sum
	}
	r, _ := w.spilled(s)
	if r == nil { // the inline entry is due to go
		return 0
	}
	for i := uint32(0); i < r.n; i++ {
		t, cost, members := r.entry(i, w.stride)
		if t > cutoff {
			break
		}
		if members&(1<<member) != 0 {
			sum -= cost
		}
	}
	return sum
}

// push appends an entry (t not before the newest held) admitted by members (not empty) to
// s.
func (w *keyWindows) push(s *windowSlot, t, cost int64, members uint64) {
	if s.cost == 0 && s.ref == 0 && cost >= 1 && cost <= math.MaxUint32 && members <= math.MaxUint32 {
		*s = windowSlot{t: t, cost: uint32(cost), ref: uint32(members)}
		return
	}
	r, sums := w.spilled(s)
	if r == nil {
		r, sums = w.spillSlot(s)
	}
	if r.n == r.entries(w.stride) {
		r.grow(w.stride, &w.pool)
	}
	at := ((r.head + r.n) & (r.entries(w.stride) - 1)) * w.stride
	r.words[at], r.words[at+1] = t, cost
	if w.stride == 3 {
		r.words[at+2] = int64(members)
	}
	r.n++
	for m := members; m != 0; m &= m - 1 {
		sums[bits.TrailingZeros64(m)] += cost
	}
	if s.t == noEntry {
		s.t = t
	}
}

// spillSlot gives s a ring, moving its inline entry (if any) into it.
func (w *keyWindows) spillSlot(s *windowSlot) (*spillRing, []int64) {
	inline := *s
	if n := len(w.free); n > 0 {
		i := w.free[n-1]
		w.free = w.free[:n-1]
		b := w.spills[i/spillBlockSize]
		b.rings[i%spillBlockSize] = spillRing{words: w.pool.get(minSpillCapacity * int(w.stride))}
		*s = windowSlot{t: noEntry, ref: uint32(i + 1)}
		return w.fill(s, inline)
	}
	if w.nspilled%spillBlockSize == 0 {
		// The first block grows as keys spill, so a small run holds a small block; the
		// next ones are made whole.
		b := &spillBlock{}
		if w.nspilled > 0 {
			b.rings = make([]spillRing, 0, spillBlockSize)
			b.sums = make([]int64, 0, spillBlockSize*w.members)
		}
		w.spills = append(w.spills, b)
	}
	b := w.spills[len(w.spills)-1]
	b.rings = append(b.rings, spillRing{words: w.pool.get(minSpillCapacity * int(w.stride))})
	b.sums = append(b.sums, make([]int64, w.members)...)
	w.nspilled++
	*s = windowSlot{t: noEntry, ref: uint32(w.nspilled)}
	return w.fill(s, inline)
}

// fill moves a slot's former inline entry into its new ring.
func (w *keyWindows) fill(s *windowSlot, inline windowSlot) (*spillRing, []int64) {
	r, sums := w.spilled(s)
	if inline.cost != 0 {
		r.words[0], r.words[1] = inline.t, int64(inline.cost)
		if w.stride == 3 {
			r.words[2] = int64(inline.ref)
		}
		r.n = 1
		for m := inline.ref; m != 0; m &= m - 1 {
			sums[bits.TrailingZeros32(m)] += int64(inline.cost)
		}
		s.t = inline.t
	}
	return r, sums
}

// grow doubles a full ring, unwrapping its entries to start at index 0, and leaves the
// old one to pool.
func (r *spillRing) grow(stride uint32, pool *ringPool) {
	words := pool.get(2 * len(r.words))
	k := copy(words, r.words[r.head*stride:])
	copy(words[k:], r.words[:r.head*stride])
	pool.put(r.words)
	r.words, r.head = words, 0
}

// keys is the number of key slots.
func (w *keyWindows) keys() int { return len(w.slots) }

// reserve makes room for keys slots.
func (w *keyWindows) reserve(keys int) {
	if keys > cap(w.slots) {
		grown := make([]windowSlot, len(w.slots), keys)
		copy(grown, w.slots)
		w.slots = grown
	}
}

// bytes is the memory held: every slot, every spilled ring with its header and the
// members' sums beside it, and the outgrown rings kept for reuse. Room a block has made
// for keys that have not spilled is not counted: it is not touched until they do.
func (w *keyWindows) bytes() int64 {
	b := int64(len(w.slots))*int64(unsafe.Sizeof(windowSlot{})) +
		int64(w.nspilled)*(int64(unsafe.Sizeof(spillRing{}))+int64(w.members)*8) + w.pool.words*8
	for _, block := range w.spills {
		for i := range block.rings {
			b += int64(cap(block.rings[i].words)) * 8
		}
	}
	return b
}
