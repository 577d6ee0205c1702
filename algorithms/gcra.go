package algorithms

import (
	"time"
	"unsafe"
)

// GCRAName is GCRA's name on the command line.
const GCRAName = "gcra"

func init() {
	Register(Kind{
		Name: GCRAName, Rank: 60, Default: true,
		Summary:   "generic cell rate algorithm: emission interval W/L, tolerance b",
		Configure: byPolicy(func(p Policy) Limiter { return NewGCRA(p) }, gcraBound),
		Bucket:    true, Form: FormTAT, Script: "gcra", Tag: "gcra",
	})
}

func gcraBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.burst + t.rate*t.span,
		Formula: "b + r·T",
		Source:  "GCRA with burst tolerance b·(W/L) admits what a token bucket of b at r = L/W admits (ITU-T I.371 virtual scheduling)",
		Reached: false,
	}
}

// GCRA is the generic cell rate algorithm as redis-cell and github.com/go-redis/redis_rate
// (v10) run it, with redis_rate's meaning of burst (redis-cell's max_burst is Burst−1):
// units are spaced one emission interval T = Window/Limit apart, and a key may run ahead
// of that schedule by the burst offset Burst·T (Burst is the policy's EffectiveBurst).
// Per key it keeps only the theoretical arrival time tat, at which the key would be back
// to an empty schedule. A request of cost c at now is admitted iff
//
//	now >= max(tat, now) + c·T − Burst·T
//
// and then tat becomes max(tat, now) + c·T. In exact arithmetic its admissions are those
// of a token bucket of capacity Burst refilled at Limit/Window. Times are kept exactly,
// with T in fractions of a nanosecond when Window is not a multiple of Limit, so no
// rounding error accumulates (redis_rate computes in float64 seconds instead); it keeps
// 16 bytes per key (tat as nanoseconds plus a fraction).
//
// Decisions: Remaining is ⌊(now − (tat − Burst·T))/T⌋ after the decision, the units that
// would still pass now. RetryAfter of a refused request is the time until it would pass,
// rounded up to the nanosecond, or Never when c exceeds Burst. Reset is the time until tat,
// rounded up: when the key is back to full burst. A cost below 1 counts as 1.
//
// Time that goes backwards needs no rule of its own: tat never moves back (it becomes
// max(tat, now) + c·T), and nothing is credited for time passing, since the state is a
// point on the schedule rather than a count refilled by elapsed time. A request stamped
// early is judged at its own now, which must be at or after allowAt, so an early stamp
// only makes it harder to pass. RetryAfter and Reset count from that now, so they grow by
// how early it is stamped.
type GCRA struct {
	burst     int64
	clock     cellClock
	unit      instant // T, the span of one unit
	tolerance instant // Burst·T
	// queues makes Admit report an admitted request's queueing delay: set for the GCRA a
	// LeakyBucket is built on, so that the two share one Admit.
	queues  bool
	tat     []instant
	touched touched
}

var (
	_ Limiter  = (*GCRA)(nil)
	_ Admitter = (*GCRA)(nil)
	_ Reserver = (*GCRA)(nil)
)

// NewGCRA returns a GCRA limiter for p, which must be valid (see Policy.Validate; New
// checks it).
func NewGCRA(p Policy) *GCRA {
	c := newCellClock(p)
	return &GCRA{
		burst:     p.EffectiveBurst(),
		clock:     c,
		unit:      c.span(1),
		tolerance: c.span(p.EffectiveBurst()),
	}
}

// Name returns "gcra".
func (g *GCRA) Name() string { return GCRAName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch), in any order of now.
func (g *GCRA) Allow(key uint32, now int64, cost int64) Decision {
	d, _ := g.decide(key, now, cost)
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset. It
// holds the rule: the request passes iff now >= allowAt = max(tat, now) + cost·T −
// Burst·T, and then tat becomes max(tat, now) + cost·T. The rule is written out here
// rather than in a helper Admit would call, because a simulation pass calls Admit once per
// request and the call would cost as much as the rule. A LeakyBucket has this Admit too:
// for it, an admitted request's delay is the time until max(tat, now), when its units
// start to be spent.
func (g *GCRA) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	if int(key) >= len(g.tat) {
		g.growTo(key)
	}
	at := instant{ns: now}
	slot := &g.tat[key]
	start := *slot
	if start.before(at) {
		start = at
	}
	// The rule of schedule, written out: a call here costs as much as the rule itself.
	inc := g.unit
	if cost > 1 {
		inc = g.clock.span(cost)
	}
	newTat := g.clock.add(start, inc)
	if cost > g.burst || at.before(g.clock.sub(newTat, g.tolerance)) {
		return false, 0
	}
	*slot = newTat
	if !g.queues {
		return true, 0
	}
	return true, start.until(now)
}

// growTo makes room for key's state, out of Admit's way: it runs once per new key.
//
//go:noinline
func (g *GCRA) growTo(key uint32) { g.tat = grow(g.tat, key, instant{ns: unseen}) }

// schedule returns, for a request of cost (at least 1) whose units start at tat, the tat
// its admission gives and the earliest time it is allowed.
func (g *GCRA) schedule(tat instant, cost int64) (newTat, allowAt instant) {
	inc := g.unit
	if cost != 1 {
		inc = g.clock.span(cost)
	}
	newTat = g.clock.add(tat, inc)
	return newTat, g.clock.sub(newTat, g.tolerance)
}

// decide is Allow that also returns max(tat, now) before the decision: the time an
// admitted request's units start to be spent, which the leaky bucket reports as its delay.
func (g *GCRA) decide(key uint32, now int64, cost int64) (Decision, instant) {
	at := instant{ns: now}
	tat := at // max(tat, now) before the decision, as Admit finds it
	if int(key) < len(g.tat) && at.before(g.tat[key]) {
		tat = g.tat[key]
	}
	ok, _ := g.Admit(key, now, cost)
	cost = max(cost, 1)
	newTat, allowAt := g.schedule(tat, cost)
	if ok {
		return Decision{
			Allowed:   true,
			Remaining: g.clock.units(allowAt, at),
			Reset:     newTat.until(now),
		}, tat
	}
	retry := Never
	if cost <= g.burst {
		retry = allowAt.until(now)
	}
	return Decision{
		Remaining:  g.clock.units(g.clock.sub(tat, g.tolerance), at),
		RetryAfter: retry,
		Reset:      tat.until(now),
	}, tat
}

// Keys returns the number of keys held: the highest key decided plus one.
func (g *GCRA) Keys() int { return len(g.tat) }

// StateBytes returns 16 bytes per key held.
func (g *GCRA) StateBytes() int64 {
	return int64(len(g.tat)) * int64(unsafe.Sizeof(instant{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (g *GCRA) Reserve(keys int) { g.tat = reserve(g.tat, keys) }
