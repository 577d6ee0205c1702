package worstcase

import (
	"math"
	"time"
)

// Bound is the analytic ceiling on what an algorithm admits for one key inside any
// trailing window of length T, with where it comes from.
type Bound struct {
	// Value is the ceiling, in units of cost. Some are suprema a client approaches but
	// never reaches (Reached false): the integer maximum is then the largest whole number
	// below Value.
	Value float64 `json:"value"`
	// Formula is the bound in the policy's symbols: L units per W, burst b, r = L/W.
	Formula string `json:"formula"`
	// Source says where the bound comes from.
	Source string `json:"source"`
	// Reached reports whether a schedule may reach Value exactly; when false, no schedule
	// admits Value or more.
	Reached bool `json:"reached"`
}

// Bound returns the analytic bound for t's algorithm and policy over windows of length
// t.T (the policy's Window when zero); ok is false for an unknown algorithm.
func (t Target) Bound() (b Bound, ok bool) {
	p := t.Policy
	limit := float64(p.Limit)
	burst := float64(p.EffectiveBurst())
	w := float64(p.Window)
	span := float64(t.window())
	windows := math.Ceil(span / w) // ⌈T/W⌉
	rate := limit / w              // units per nanosecond
	switch t.Algorithm {
	case "fixed-window":
		return Bound{
			Value:   limit * (windows + 1),
			Formula: "L·(⌈T/W⌉+1)",
			Source:  "aligned windows: an interval of length T meets at most ⌈T/W⌉+1 of them and each admits L afresh (the notes' boundary case: 2L across one edge)",
			Reached: true,
		}, true
	case "sliding-log":
		return Bound{
			Value:   limit * windows,
			Formula: "L·⌈T/W⌉",
			Source:  "exact log: an interval of length T splits into ⌈T/W⌉ pieces no longer than W, each holding at most L",
			Reached: true,
		}, true
	case "sliding-window":
		return Bound{
			Value:   limit + limit*span/w,
			Formula: "L·(1+T/W)",
			Source: "derived in docs/worstcase.md: the part of an interval inside the current window is at most L − prev·(1−e/W), " +
				"and prev, all of it placed at the previous window's end, is still inside the interval, so the total is at most L + prev·e/W, below L + L·T/W",
			Reached: false,
		}, true
	case "token-bucket":
		return Bound{
			Value:   burst + rate*span,
			Formula: "b + r·T",
			Source:  "token-bucket arrival curve (network calculus σ+ρT; x/time/rate's burst b at rate r): at most b tokens at the start plus r·T refilled",
			// x/time/rate forgives a deficit worth less than a nanosecond of refill, so
			// the supremum may be met exactly.
			Reached: true,
		}, true
	case "gcra":
		return Bound{
			Value:   burst + rate*span,
			Formula: "b + r·T",
			Source:  "GCRA with burst tolerance b·(W/L) admits what a token bucket of b at r = L/W admits (ITU-T I.371 virtual scheduling)",
			Reached: false,
		}, true
	case "leaky-bucket":
		return Bound{
			Value:   burst + rate*span,
			Formula: "b + r·T",
			Source:  "a queue of b drained at r = L/W takes at most b plus what drains in T (the same rule as GCRA; the backend, not the admission count, sees the smooth rate)",
			Reached: false,
		}, true
	}
	return Bound{}, false
}

// MaxAdmitted is the largest whole number of units the bound allows: Value rounded down,
// or one less than Value when Value is a whole number the algorithm cannot reach.
func (b Bound) MaxAdmitted() int64 {
	v := math.Floor(b.Value + 1e-9)
	if !b.Reached && math.Abs(v-b.Value) < 1e-9 {
		v--
	}
	return int64(v)
}

// windowsIn returns ⌈T/W⌉ as an integer, at least 1.
func windowsIn(T, w time.Duration) int64 {
	return max(int64((T+w-1)/w), 1)
}
