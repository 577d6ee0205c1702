package algorithms

import (
	"math"
	"slices"
	"time"
)

// unseen marks a time field of a key that has never been decided. It is below any time a
// caller passes, so max(unseen, now) = now.
const unseen = math.MinInt64

// grow returns s extended so that s[key] exists, with every new element set to fresh.
// Capacity grows as append grows it, so a dense run of new keys costs amortized O(1) each.
// Keys are assigned densely by the caller: a key of 1e9 allocates state for 1e9 keys.
func grow[T any](s []T, key uint32, fresh T) []T {
	n := len(s)
	s = slices.Grow(s, int(key)+1-n)[:int(key)+1]
	for i := n; i < len(s); i++ {
		s[i] = fresh
	}
	return s
}

// floorDiv returns ⌊a/b⌋ for b > 0, rounding toward minus infinity for negative a as well
// (Go's / truncates toward zero).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// ahead returns how far a is ahead of b, a − b, and zero when it is not ahead; Never when
// the difference does not fit a Duration.
func ahead(a, b int64) time.Duration {
	if a <= b {
		return 0
	}
	if d := uint64(a) - uint64(b); d <= math.MaxInt64 {
		return time.Duration(d)
	}
	return Never
}

// firstTrueAfter returns the smallest d > lo for which ok(d) holds, MaxInt64 if none does.
// ok must be monotone (false up to some d, true from there on) and false at lo. It steps
// up in doubling strides and then bisects, so an answer a few past lo costs a few calls.
func firstTrueAfter(lo int64, ok func(int64) bool) int64 {
	hi := satAdd(lo, 1)
	for stride := int64(1); !ok(hi); stride *= 2 {
		if hi == math.MaxInt64 {
			return hi
		}
		lo, hi = hi, satAdd(hi, stride)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// Reserver is implemented by limiters that can make room for their per-key state up
// front. A caller that knows how many keys a run may see calls Reserve before the first
// decision, so the state is not regrown (and copied) as keys arrive; room that is never
// used is never touched, so it costs address space, not resident memory.
type Reserver interface {
	Reserve(keys int)
}

// reserve returns s with capacity for at least keys elements. It allocates with make
// rather than slices.Grow, which clears the room it adds: the memory of a large make comes
// from the operating system already zero, and stays untouched, so not resident, until a
// key reaches it.
func reserve[T any](s []T, keys int) []T {
	if keys <= cap(s) {
		return s
	}
	grown := make([]T, len(s), keys)
	copy(grown, s)
	return grown
}

// windowIndex is ⌊now/W⌋, the index of the aligned window of length W that holds now,
// remembering the window it found last: requests come mostly in time order, so most
// calls are two comparisons instead of a 64-bit division. The zero value with window set
// is ready to use.
type windowIndex struct {
	window     int64 // W in nanoseconds
	index      int64 // the window found last, covering [start, end)
	start, end int64 // start >= end while there is none
}

// of returns ⌊now/W⌋, rounding toward minus infinity.
func (w *windowIndex) of(now int64) int64 {
	if now >= w.start && now < w.end {
		return w.index
	}
	return w.find(now)
}

func (w *windowIndex) find(now int64) int64 {
	i := floorDiv(now, w.window)
	start := i * w.window
	if start/w.window != i { // the start does not fit an int64: do not remember it
		w.start, w.end = 0, 0
		return i
	}
	end := start + w.window
	if end < start {
		end = math.MaxInt64
	}
	w.index, w.start, w.end = i, start, end
	return i
}
