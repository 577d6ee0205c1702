package algorithms

import "unsafe"

// minLogCapacity is the number of entries a Log's ring holds when it is first allocated.
const minLogCapacity = 4

// Log is the history of one key inside a trailing window: (t, cost) entries in the order
// they were pushed, with their running Sum. A Log holding at most one entry keeps it in
// the Log value itself; the second entry held at once moves both into a ring buffer whose
// capacity only grows (doubling), so once a Log has held its largest window, Push and
// Expire never allocate; memory is the high-water mark of entries held at once, not the
// number pushed. Most keys of a large key space never hold two entries at once, and then
// cost the Log value alone.
//
// Times are nanoseconds on the virtual clock. The trailing window at now is (now−W, now]:
// callers call Expire(now−W) before reading Sum. Entries must be pushed in non-decreasing
// t; Push does not check, and an entry pushed out of order would hold back Expire for the
// entries pushed after it.
//
// The zero value is an empty Log ready to use. A Log is not safe for concurrent use.
type Log struct {
	ring []logEntry // nil until two entries are held at once; then its capacity is a power of two
	one  int64      // the time of the only entry while ring is nil and n is 1 (its cost is sum)
	head uint32     // index in ring of the oldest entry
	n    uint32     // number of entries held
	sum  int64      // sum of the costs of the entries held
}

type logEntry struct {
	t    int64
	cost int64
}

// Push appends an entry at time t (nanoseconds, not before the newest entry) with the given
// cost. Cost is added to Sum as given; the Log puts no bound on it.
func (l *Log) Push(t, cost int64) {
	if l.ring == nil {
		if l.n == 0 {
			l.one, l.n, l.sum = t, 1, l.sum+cost
			return
		}
		l.ring = make([]logEntry, minLogCapacity)
		l.ring[0] = logEntry{t: l.one, cost: l.sum}
		l.head = 0
	} else if int(l.n) == len(l.ring) {
		l.grow()
	}
	l.ring[(l.head+l.n)&uint32(len(l.ring)-1)] = logEntry{t: t, cost: cost}
	l.n++
	l.sum += cost
}

// grow doubles the ring and unwraps the entries to start at index 0. It is called only
// when the ring is full.
func (l *Log) grow() {
	ring := make([]logEntry, 2*len(l.ring))
	k := copy(ring, l.ring[l.head:])
	copy(ring[k:], l.ring[:l.head])
	l.ring = ring
	l.head = 0
}

// Expire drops every entry with t <= cutoff, oldest first. For the trailing window
// (now−W, now] call Expire(now−W): an entry pushed at t leaves the window at t+W exactly.
func (l *Log) Expire(cutoff int64) {
	if l.ring == nil {
		if l.n == 1 && l.one <= cutoff {
			l.n, l.sum = 0, 0
		}
		return
	}
	mask := uint32(len(l.ring) - 1)
	for l.n > 0 {
		e := &l.ring[l.head]
		if e.t > cutoff {
			return
		}
		l.sum -= e.cost
		l.head = (l.head + 1) & mask
		l.n--
	}
	l.head = 0
}

// upTo returns the number and the total cost of the oldest entries with t <= cutoff: those
// Expire(cutoff) would drop, left in place.
func (l *Log) upTo(cutoff int64) (n int, cost int64) {
	if l.ring == nil {
		if l.n == 1 && l.one <= cutoff {
			return 1, l.sum
		}
		return 0, 0
	}
	mask := uint32(len(l.ring) - 1)
	for ; n < int(l.n); n++ {
		e := &l.ring[(l.head+uint32(n))&mask]
		if e.t > cutoff {
			break
		}
		cost += e.cost
	}
	return n, cost
}

// dropOldest drops the n oldest entries, whose total cost is cost (as upTo returned them).
func (l *Log) dropOldest(n int, cost int64) {
	l.n -= uint32(n)
	l.sum -= cost
	if l.ring == nil {
		return
	}
	l.head = (l.head + uint32(n)) & uint32(len(l.ring)-1)
	if l.n == 0 {
		l.head = 0
	}
}

// Clear drops every entry and keeps the capacity.
func (l *Log) Clear() {
	l.head, l.n, l.sum = 0, 0, 0
}

// Sum returns the total cost of the entries held.
func (l *Log) Sum() int64 { return l.sum }

// Len returns the number of entries held.
func (l *Log) Len() int { return int(l.n) }

// At returns the i-th entry held, oldest first: At(0) is the oldest, At(Len()-1) the
// newest. It panics if i is out of range, like indexing a slice.
func (l *Log) At(i int) (t, cost int64) {
	if uint(i) >= uint(l.n) {
		panic("algorithms: Log.At index out of range")
	}
	if l.ring == nil {
		return l.one, l.sum
	}
	e := l.ring[(l.head+uint32(i))&uint32(len(l.ring)-1)]
	return e.t, e.cost
}

// Oldest returns the oldest entry held; ok is false when the Log is empty.
func (l *Log) Oldest() (t, cost int64, ok bool) {
	if l.n == 0 {
		return 0, 0, false
	}
	t, cost = l.At(0)
	return t, cost, true
}

// Newest returns the most recently pushed entry held; ok is false when the Log is empty.
func (l *Log) Newest() (t, cost int64, ok bool) {
	switch {
	case l.n == 0:
		return 0, 0, false
	case l.ring == nil:
		return l.one, l.sum, true
	}
	e := &l.ring[(l.head+l.n-1)&uint32(len(l.ring)-1)]
	return e.t, e.cost, true
}

// Bytes returns the memory the Log holds: the Log value itself (ring header, the inline
// entry's time, indexes and sum: 48 bytes) plus its ring's full capacity, used or not. It
// does not shrink when entries expire.
func (l *Log) Bytes() int64 {
	return int64(unsafe.Sizeof(*l)) + l.entryBytes()
}

// entryBytes is the size of the ring's backing array.
func (l *Log) entryBytes() int64 {
	return int64(cap(l.ring)) * int64(unsafe.Sizeof(logEntry{}))
}
