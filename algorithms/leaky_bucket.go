package algorithms

import "time"

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
// GCRA; Delay is rounded up to the nanosecond. It keeps 16 bytes per key. It is built on
// GCRA, whose state and arithmetic it shares.
//
// Decisions: Remaining is the whole units the queue still has room for after the decision.
// RetryAfter of a refused request is the time until the queue has room for it, rounded up
// to the nanosecond, or Never when c exceeds Burst. Reset is the time until the queue is
// empty, rounded up. A cost below 1 counts as 1.
//
// Time that goes backwards is handled as in GCRA: next never moves back, and a request
// stamped early is judged at its own now, which only makes it harder to pass; its Delay,
// RetryAfter and Reset count from that now and grow by how early it is stamped.
type LeakyBucket struct {
	gcra GCRA
}

var (
	_ Limiter  = (*LeakyBucket)(nil)
	_ Admitter = (*LeakyBucket)(nil)
	_ Reserver = (*LeakyBucket)(nil)
)

// NewLeakyBucket returns a leaky-bucket (queue) limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewLeakyBucket(p Policy) *LeakyBucket { return &LeakyBucket{gcra: *NewGCRA(p)} }

// Name returns "leaky-bucket".
func (l *LeakyBucket) Name() string { return "leaky-bucket" }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch), in any order of now. An admitted request's Delay is the time it waits
// in the queue before the backend sees it: until the queue has drained what is ahead of it.
func (l *LeakyBucket) Allow(key uint32, now int64, cost int64) Decision {
	d, start := l.gcra.decide(key, now, cost)
	if d.Allowed {
		d.Delay = start.until(now)
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset:
// whether the request was admitted and, if it was, its Delay.
func (l *LeakyBucket) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	start, ok := l.gcra.admit(key, now, cost)
	// Computed either way and then kept or not, so that the answer does not wait on a
	// second guess of whether the request passed (a conditional move, not a branch).
	delay := start.until(now)
	if !ok {
		delay = 0
	}
	return ok, delay
}

// Keys returns the number of keys held: the highest key decided plus one.
func (l *LeakyBucket) Keys() int { return l.gcra.Keys() }

// StateBytes returns 16 bytes per key held.
func (l *LeakyBucket) StateBytes() int64 { return l.gcra.StateBytes() }

// Reserve makes room for the state of keys keys (see Reserver).
func (l *LeakyBucket) Reserve(keys int) { l.gcra.Reserve(keys) }
