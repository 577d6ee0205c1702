package algorithms

import "unsafe"

// LeakyBucket is the leaky bucket as a queue: each key has a queue drained one unit every
// T = Window/Limit, holding at most Burst units (the policy's EffectiveBurst). Per key it
// keeps only next, the time at which the queue will be empty. A request of cost c arriving
// at now is admitted iff the queue has room for it,
//
//	(max(next, now) − now) + c·T <= Burst·T,
//
// and is then released to the backend at its turn, start = max(next, now), after which
// next = start + c·T. A refused request is dropped and changes nothing.
//
// Its admissions are exactly GCRA's (next plays the part of tat, and the rule is the same
// inequality); what differs is that the leaky bucket does not let the admitted requests
// through at once: it reports their queueing delay, start − now, in Decision.Delay, so the
// backend sees a smooth Limit/Window while the client waits. Times are kept exactly, as in
// GCRA; Delay is rounded up to the nanosecond. It keeps 16 bytes per key.
//
// Decisions: Remaining is the whole units the queue still has room for after the decision.
// RetryAfter of a refused request is the time until the queue has room for it, rounded up
// to the nanosecond, or Never when c exceeds Burst. Reset is the time until the queue is
// empty, rounded up. A cost below 1 counts as 1.
type LeakyBucket struct {
	burst    int64
	clock    cellClock
	unit     instant // T, the span of one unit
	capacity instant // Burst·T
	next     []instant
}

var (
	_ Limiter  = (*LeakyBucket)(nil)
	_ Reserver = (*LeakyBucket)(nil)
)

// NewLeakyBucket returns a leaky-bucket (queue) limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewLeakyBucket(p Policy) *LeakyBucket {
	c := newCellClock(p)
	return &LeakyBucket{
		burst:    p.EffectiveBurst(),
		clock:    c,
		unit:     c.span(1),
		capacity: c.span(p.EffectiveBurst()),
	}
}

// Name returns "leaky-bucket".
func (l *LeakyBucket) Name() string { return "leaky-bucket" }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch, non-decreasing across calls). An admitted request's Delay is the time it waits
// in the queue before the backend sees it.
func (l *LeakyBucket) Allow(key uint32, now int64, cost int64) Decision {
	cost = max(cost, 1)
	if int(key) >= len(l.next) {
		l.next = grow(l.next, key, instant{ns: unseen})
	}
	at := instant{ns: now}
	start := l.next[key]
	if start.before(at) {
		start = at
	}
	inc := l.unit
	if cost != 1 {
		inc = l.clock.span(cost)
	}
	next := l.clock.add(start, inc)
	// The queue has room iff next − now <= Burst·T, that is now >= next − Burst·T.
	roomAt := l.clock.sub(next, l.capacity)

	if cost <= l.burst && !at.before(roomAt) {
		l.next[key] = next
		return Decision{
			Allowed:   true,
			Remaining: l.clock.units(roomAt, at),
			Reset:     next.until(now),
			Delay:     start.until(now),
		}
	}
	retry := Never
	if cost <= l.burst {
		retry = roomAt.until(now)
	}
	return Decision{
		Remaining:  l.clock.units(l.clock.sub(start, l.capacity), at),
		RetryAfter: retry,
		Reset:      start.until(now),
	}
}

// Keys returns the number of keys held: the highest key decided plus one.
func (l *LeakyBucket) Keys() int { return len(l.next) }

// StateBytes returns 16 bytes per key held.
func (l *LeakyBucket) StateBytes() int64 {
	return int64(len(l.next)) * int64(unsafe.Sizeof(instant{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (l *LeakyBucket) Reserve(keys int) { l.next = reserve(l.next, keys) }
