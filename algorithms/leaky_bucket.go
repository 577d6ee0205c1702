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
// GCRA, whose state and arithmetic it shares: its Admit, Keys, StateBytes and Reserve are
// GCRA's, and its Admit returns the Delay of an admitted request.
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
	// The GCRA whose rule it applies, embedded so that its Admit (which reports the delay
	// for a GCRA built with queues set), Keys, StateBytes and Reserve are the leaky
	// bucket's own: an interface call lands in GCRA's Admit by a jump, not a second call.
	gcra
}

// gcra names the GCRA a LeakyBucket embeds, so that the embedded field is unexported.
type gcra = GCRA

var (
	_ Limiter  = (*LeakyBucket)(nil)
	_ Admitter = (*LeakyBucket)(nil)
	_ Reserver = (*LeakyBucket)(nil)
)

// LeakyBucketName is the leaky bucket's name on the command line.
const LeakyBucketName = "leaky-bucket"

func init() {
	Register(Kind{
		Name: LeakyBucketName, Rank: 50, Default: true,
		Summary:   "a queue drained at L/W, bounded by b; reports the delay it adds",
		Configure: byPolicy(func(p Policy) Limiter { return NewLeakyBucket(p) }, leakyBucketBound),
		// Its meter is a level and a time, the token bucket's hash, but it has no
		// script of its own.
		Bucket: true, Form: FormBucket,
	})
}

func leakyBucketBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.burst + t.rate*t.span,
		Formula: "b + r·T",
		Source:  "a queue of b drained at r = L/W takes at most b plus what drains in T (the same rule as GCRA; the backend, not the admission count, sees the smooth rate)",
		Reached: false,
	}
}

// NewLeakyBucket returns a leaky-bucket (queue) limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewLeakyBucket(p Policy) *LeakyBucket {
	g := NewGCRA(p)
	g.queues = true
	return &LeakyBucket{gcra: *g}
}

// Name returns "leaky-bucket".
func (l *LeakyBucket) Name() string { return LeakyBucketName }

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
