package algorithms

import "unsafe"

// minLogCapacity is the number of entries a Log allocates on its first Push.
const minLogCapacity = 4

// Log is the history of one key inside a trailing window: (t, cost) entries in the order
// they were pushed, with their running Sum. Entries live in a ring buffer whose capacity
// only grows (doubling), so once a Log has held its largest window, Push and Expire never
// allocate; memory is the high-water mark of entries held at once, not the number pushed.
//
// Times are nanoseconds on the virtual clock. The trailing window at now is (now−W, now]:
// callers call Expire(now−W) before reading Sum. Entries must be pushed in non-decreasing
// t; Push does not check, and an entry pushed out of order would hold back Expire for the
// entries pushed after it.
//
// The zero value is an empty Log ready to use. A Log is not safe for concurrent use.
type Log struct {
	ring []logEntry // capacity is zero or a power of two; every element is in use as storage
	head int        // index in ring of the oldest entry
	n    int        // number of entries held
	sum  int64      // sum of the costs of the entries held
}

type logEntry struct {
	t    int64
	cost int64
}

// Push appends an entry at time t (nanoseconds, not before the newest entry) with the given
// cost. Cost is added to Sum as given; the Log puts no bound on it.
func (l *Log) Push(t, cost int64) {
	if l.n == len(l.ring) {
		l.grow()
	}
	l.ring[(l.head+l.n)&(len(l.ring)-1)] = logEntry{t: t, cost: cost}
	l.n++
	l.sum += cost
}

// grow doubles the ring (or allocates the first one) and unwraps the entries to start at
// index 0. It is called only when the ring is full.
func (l *Log) grow() {
	ring := make([]logEntry, max(2*len(l.ring), minLogCapacity))
	k := copy(ring, l.ring[l.head:])
	copy(ring[k:], l.ring[:l.head])
	l.ring = ring
	l.head = 0
}

// Expire drops every entry with t <= cutoff, oldest first. For the trailing window
// (now−W, now] call Expire(now−W): an entry pushed at t leaves the window at t+W exactly.
func (l *Log) Expire(cutoff int64) {
	mask := len(l.ring) - 1
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
	mask := len(l.ring) - 1
	for ; n < l.n; n++ {
		e := &l.ring[(l.head+n)&mask]
		if e.t > cutoff {
			break
		}
		cost += e.cost
	}
	return n, cost
}

// dropOldest drops the n oldest entries, whose total cost is cost (as upTo returned them).
func (l *Log) dropOldest(n int, cost int64) {
	l.head = (l.head + n) & (len(l.ring) - 1)
	l.n -= n
	l.sum -= cost
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
func (l *Log) Len() int { return l.n }

// At returns the i-th entry held, oldest first: At(0) is the oldest, At(Len()-1) the
// newest. It panics if i is out of range, like indexing a slice.
func (l *Log) At(i int) (t, cost int64) {
	if uint(i) >= uint(l.n) {
		panic("algorithms: Log.At index out of range")
	}
	e := l.ring[(l.head+i)&(len(l.ring)-1)]
	return e.t, e.cost
}

// Oldest returns the oldest entry held; ok is false when the Log is empty.
func (l *Log) Oldest() (t, cost int64, ok bool) {
	if l.n == 0 {
		return 0, 0, false
	}
	e := l.ring[l.head]
	return e.t, e.cost, true
}

// Newest returns the most recently pushed entry held; ok is false when the Log is empty.
func (l *Log) Newest() (t, cost int64, ok bool) {
	if l.n == 0 {
		return 0, 0, false
	}
	e := l.ring[(l.head+l.n-1)&(len(l.ring)-1)]
	return e.t, e.cost, true
}

// Bytes returns the memory the Log holds: the Log value itself (slice header, indexes and
// sum) plus its ring's full capacity, used or not. It does not shrink when entries expire.
func (l *Log) Bytes() int64 {
	return int64(unsafe.Sizeof(*l)) + l.entryBytes()
}

// entryBytes is the size of the ring's backing array.
func (l *Log) entryBytes() int64 {
	return int64(cap(l.ring)) * int64(unsafe.Sizeof(logEntry{}))
}
