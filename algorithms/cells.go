package algorithms

import (
	"math"
	"math/bits"
	"time"
)

// The GCRA and the leaky bucket space units one emission interval W/L apart. W/L is rarely
// a whole number of nanoseconds (1 s / 3), and rounding it would drift by up to 1 ns per
// unit admitted, so both keep their times exactly, as whole nanoseconds plus a fraction in
// L-ths of a nanosecond, with 128-bit intermediates (math/bits) so that cost·W never
// overflows. Results leave as whole nanoseconds, rounded toward the safe side (waits up,
// remaining units down). Spans that do not fit an int64 of nanoseconds (292 years)
// saturate.

// instant is a time on the virtual clock, ns + frac/L nanoseconds since the Unix epoch,
// with 0 <= frac < L for the L of the cellClock that made it.
type instant struct {
	ns   int64
	frac uint64
}

// before reports whether a is strictly earlier than b.
func (a instant) before(b instant) bool {
	return a.ns < b.ns || (a.ns == b.ns && a.frac < b.frac)
}

// until returns the whole nanoseconds from now until a has been reached, rounded up, and
// zero when a is not after now.
func (a instant) until(now int64) time.Duration {
	ns := a.ns
	if a.frac > 0 {
		ns = satAdd(ns, 1)
	}
	if ns <= now {
		return 0
	}
	return time.Duration(ns - now)
}

// cellClock is the arithmetic of one policy's emission interval W/L.
type cellClock struct {
	window uint64 // W in nanoseconds
	limit  uint64 // L, the denominator of every instant's fraction
}

func newCellClock(p Policy) cellClock {
	return cellClock{window: uint64(p.Window), limit: uint64(p.Limit)}
}

// span returns the time cost units occupy, cost·W/L, exactly (cost >= 0).
func (c cellClock) span(cost int64) instant {
	hi, lo := bits.Mul64(uint64(cost), c.window)
	if hi >= c.limit {
		return instant{ns: math.MaxInt64}
	}
	q, r := bits.Div64(hi, lo, c.limit)
	if q > math.MaxInt64 {
		return instant{ns: math.MaxInt64}
	}
	return instant{ns: int64(q), frac: r}
}

// add returns a + d for a span d.
func (c cellClock) add(a, d instant) instant {
	frac := a.frac + d.frac // each is below L < 2^63, so the sum cannot wrap
	ns := satAdd(a.ns, d.ns)
	if frac >= c.limit {
		frac -= c.limit
		ns = satAdd(ns, 1)
	}
	return instant{ns: ns, frac: frac}
}

// sub returns a − d for a span d.
func (c cellClock) sub(a, d instant) instant {
	ns := a.ns - d.ns
	if ns > a.ns { // wrapped below MinInt64
		ns = math.MinInt64
	}
	if a.frac >= d.frac {
		return instant{ns: ns, frac: a.frac - d.frac}
	}
	return instant{ns: ns - 1, frac: a.frac + c.limit - d.frac}
}

// units returns ⌊d·L/W⌋, the whole units that fit in the span from a to b, and zero when
// b is not after a.
func (c cellClock) units(a, b instant) int64 {
	if !a.before(b) {
		return 0
	}
	d := c.sub(b, a)
	hi, lo := bits.Mul64(uint64(d.ns), c.limit)
	lo, carry := bits.Add64(lo, d.frac, 0)
	hi += carry
	if hi >= c.window {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, c.window)
	return int64(min(q, math.MaxInt64))
}

// satAdd returns a + b for b >= 0, saturating at MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// satAddDuration returns a + b for b >= 0, saturating at Never.
func satAddDuration(a, b time.Duration) time.Duration {
	return time.Duration(satAdd(int64(a), int64(b)))
}
