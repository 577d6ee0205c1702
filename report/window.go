package report

import (
	"math"
	"unsafe"

	"github.com/rlsim/rlsim/algorithms"
)

// keyWindows holds, per key, the (time, cost) entries an algorithm admitted inside the
// trailing window, and their sum: what the reference and peak_window_admitted read.
//
// Most keys of a large key space hold at most one admitted entry at a time (a user seen a
// few times an hour), so each key's slot keeps one entry inline and only a key that needs
// a second entry at once gets a ring of its own (an algorithms.Log, kept in a pool). A
// cold key then costs one 24-byte slot and one cache line per request instead of a Log
// header and a separate ring. A key that has spilled keeps its ring, as a Log keeps its
// capacity: memory is the high-water mark, not the traffic.
type keyWindows struct {
	slots []windowSlot
	spill []algorithms.Log
}

type windowSlot struct {
	t      int64  // time of the oldest entry held; noEntry when a spilled key holds none
	sum    int64  // total cost held
	inline uint32 // 1 when the key's one entry, (t, sum), is held in the slot itself
	spill  uint32 // 1 + the index in keyWindows.spill of this key's ring, or 0
}

// noEntry is the oldest time of an empty spilled window: later than any cutoff, so that
// expire does not look at the ring.
const noEntry = math.MaxInt64

// slot returns key's slot, growing the table to hold it.
func (w *keyWindows) slot(key uint32) *windowSlot {
	if int(key) >= len(w.slots) {
		w.slots = append(w.slots, make([]windowSlot, int(key)+1-len(w.slots))...)
	}
	return &w.slots[key]
}

// expire drops the entries of s with t <= cutoff. The slot knows its oldest time and its
// sum, so a spilled key's ring is read only when an entry is actually due to go.
func (w *keyWindows) expire(s *windowSlot, cutoff int64) {
	if s.spill == 0 {
		if s.inline == 1 && s.t <= cutoff {
			s.inline, s.sum = 0, 0
		}
		return
	}
	if s.t > cutoff {
		return
	}
	ring := &w.spill[s.spill-1]
	ring.Expire(cutoff)
	s.sum = ring.Sum()
	s.t = noEntry
	if t, _, ok := ring.Oldest(); ok {
		s.t = t
	}
}

// sum returns the total cost held for s.
func (w *keyWindows) sum(s *windowSlot) int64 { return s.sum }

// push appends an entry (t not before the newest held) to s.
func (w *keyWindows) push(s *windowSlot, t, cost int64) {
	switch {
	case s.spill != 0:
		w.spill[s.spill-1].Push(t, cost)
		if s.t == noEntry {
			s.t = t
		}
	case s.inline == 0:
		s.t, s.inline = t, 1
	default:
		var ring algorithms.Log
		ring.Push(s.t, s.sum)
		ring.Push(t, cost)
		w.spill = append(w.spill, ring)
		s.spill, s.inline = uint32(len(w.spill)), 0
	}
	s.sum += cost
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

// bytes is the memory held: every slot, and every spilled ring with its header.
func (w *keyWindows) bytes() int64 {
	b := int64(len(w.slots)) * int64(unsafe.Sizeof(windowSlot{}))
	for i := range w.spill {
		b += w.spill[i].Bytes()
	}
	return b
}
