package worstcase

import (
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Bound is the analytic ceiling on what an algorithm admits for one key inside any
// trailing window of length T, with where it comes from; each algorithm states its own
// (algorithms.Model.Bound).
type Bound = algorithms.Bound

// Bound returns the analytic bound for t's algorithm and policy over windows of length
// t.T (the policy's Window when zero); ok is false for a limiter with no known bound (a
// user's own, an unknown spec).
func (t Target) Bound() (b Bound, ok bool) {
	if t.Own != nil {
		return Bound{}, false
	}
	return algorithms.BoundOf(t.Algorithm, t.Policy, t.window())
}

// windowsIn returns ⌈T/W⌉ as an integer, at least 1.
func windowsIn(T, w time.Duration) int64 {
	return max(int64((T+w-1)/w), 1)
}
