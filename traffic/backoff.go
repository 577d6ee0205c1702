package traffic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Backoff is the shape of a client's retries: how long to sleep before the next attempt
// after a failure. The classic shapes are those of Marc Brooker, "Exponential Backoff And
// Jitter" (AWS Architecture Blog, 2015), with v = min(Cap, Base·2^attempt):
//
//	none                 0
//	constant             Base
//	exponential          v
//	full-jitter          uniform in [0, v)
//	equal-jitter         v/2 + uniform in [0, v/2)
//	decorrelated-jitter  min(Cap, uniform in [Base, 3·previous sleep)), previous starting at Base
//
// and two more: linear, min(Cap, Base·attempt), and proportional-jitter, v scaled by a
// uniform factor in [1−J, 1+J) and capped (J = 0.2 by default, the jitter of gRPC's
// connection backoff).
//
// Delays are whole nanoseconds; every random draw comes from the run's rng, so the same
// seed gives the same sleeps.
type Backoff interface {
	// Name is the strategy's name as used on the command line ("full-jitter").
	Name() string
	// Delay returns the sleep before the retry that follows failure number attempt
	// (attempt ≥ 1; the first failure sleeps Delay(1, ...)). prev is the sleep the client
	// took before the failed attempt, zero if it took none; only decorrelated-jitter
	// uses it.
	Delay(attempt int, prev time.Duration, rng *rand.Rand) time.Duration
}

// BackoffNames lists the classic strategies of the experiment in the order reports show
// them: the default of `rlsim backoff`.
var BackoffNames = []string{"none", "constant", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter"}

// ShapeNames lists every backoff shape: the classic ones and linear and
// proportional-jitter.
var ShapeNames = []string{"none", "constant", "linear", "exponential", "full-jitter", "equal-jitter", "decorrelated-jitter", "proportional-jitter"}

// DefaultJitter is proportional-jitter's J: ±20%, as gRPC's connection backoff.
const DefaultJitter = 0.2

// NewBackoff returns the named shape with the given base and cap (both > 0, cap ≥ base),
// and DefaultJitter for proportional-jitter.
func NewBackoff(name string, base, cap time.Duration) (Backoff, error) {
	return NewShape(name, base, cap, DefaultJitter)
}

// NewShape returns the named shape with the given base, cap and, for proportional-jitter,
// jitter J (0 ≤ J ≤ 1).
func NewShape(name string, base, cap time.Duration, jitter float64) (Backoff, error) {
	if base <= 0 {
		return nil, fmt.Errorf("backoff base must be positive, got %s", base)
	}
	if cap < base {
		return nil, fmt.Errorf("backoff cap %s must not be below the base %s", cap, base)
	}
	c := capped{base: base, cap: cap}
	switch name {
	case "none":
		return NoBackoff{}, nil
	case "constant":
		return ConstantBackoff{Sleep: base}, nil
	case "exponential":
		return ExponentialBackoff{c}, nil
	case "full-jitter":
		return FullJitter{c}, nil
	case "equal-jitter":
		return EqualJitter{c}, nil
	case "decorrelated-jitter":
		return DecorrelatedJitter{c}, nil
	case "linear":
		return LinearBackoff{c}, nil
	case "proportional-jitter":
		if !(jitter >= 0 && jitter <= 1) {
			return nil, fmt.Errorf("proportional jitter must be between 0 and 1 (0%%–100%%), got %g", jitter)
		}
		return ProportionalJitter{capped: c, Jitter: jitter}, nil
	}
	return nil, fmt.Errorf("unknown backoff shape %q (want one of %s)", name, strings.Join(ShapeNames, ", "))
}

// capped holds the base and cap shared by the growing strategies.
type capped struct {
	base, cap time.Duration
}

// ceiling is min(cap, base·2^attempt), computed without overflow for any attempt.
func (c capped) ceiling(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	if attempt >= 63 || c.base > c.cap>>uint(attempt) {
		return c.cap
	}
	return min(c.cap, c.base<<uint(attempt))
}

// uniform draws from [lo, hi) in whole nanoseconds; lo when the range is empty.
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// NoBackoff retries at once.
type NoBackoff struct{}

// Name returns "none".
func (NoBackoff) Name() string { return "none" }

// Delay returns 0.
func (NoBackoff) Delay(int, time.Duration, *rand.Rand) time.Duration { return 0 }

// ConstantBackoff always sleeps the same time.
type ConstantBackoff struct{ Sleep time.Duration }

// Name returns "constant".
func (ConstantBackoff) Name() string { return "constant" }

// Delay returns Sleep.
func (b ConstantBackoff) Delay(int, time.Duration, *rand.Rand) time.Duration { return b.Sleep }

// ExponentialBackoff sleeps min(cap, base·2^attempt): deterministic, so clients that failed
// together retry together.
type ExponentialBackoff struct{ capped }

// Name returns "exponential".
func (ExponentialBackoff) Name() string { return "exponential" }

// Delay returns min(cap, base·2^attempt).
func (b ExponentialBackoff) Delay(attempt int, _ time.Duration, _ *rand.Rand) time.Duration {
	return b.ceiling(attempt)
}

// FullJitter sleeps uniformly in [0, min(cap, base·2^attempt)).
type FullJitter struct{ capped }

// Name returns "full-jitter".
func (FullJitter) Name() string { return "full-jitter" }

// Delay draws uniformly in [0, min(cap, base·2^attempt)).
func (b FullJitter) Delay(attempt int, _ time.Duration, rng *rand.Rand) time.Duration {
	return uniform(rng, 0, b.ceiling(attempt))
}

// EqualJitter keeps half of the exponential sleep and draws the other half: v/2 + [0, v/2).
type EqualJitter struct{ capped }

// Name returns "equal-jitter".
func (EqualJitter) Name() string { return "equal-jitter" }

// Delay returns v/2 + uniform [0, v/2) with v = min(cap, base·2^attempt).
func (b EqualJitter) Delay(attempt int, _ time.Duration, rng *rand.Rand) time.Duration {
	half := b.ceiling(attempt) / 2
	return half + uniform(rng, 0, half)
}

// DecorrelatedJitter grows from the previous sleep instead of the attempt number:
// min(cap, uniform [base, 3·prev)), with prev = base before the first sleep.
type DecorrelatedJitter struct{ capped }

// Name returns "decorrelated-jitter".
func (DecorrelatedJitter) Name() string { return "decorrelated-jitter" }

// Delay returns min(cap, uniform [base, 3·prev)); a prev below base counts as base.
func (b DecorrelatedJitter) Delay(_ int, prev time.Duration, rng *rand.Rand) time.Duration {
	prev = max(prev, b.base)
	hi := time.Duration(math.MaxInt64)
	if prev <= hi/3 {
		hi = prev * 3
	}
	return min(b.cap, uniform(rng, b.base, hi))
}

// LinearBackoff sleeps min(cap, base·attempt): a retry schedule that grows by one base per
// failure, gentler than doubling.
type LinearBackoff struct{ capped }

// Name returns "linear".
func (LinearBackoff) Name() string { return "linear" }

// Delay returns min(cap, base·attempt), attempt counting from 1.
func (b LinearBackoff) Delay(attempt int, _ time.Duration, _ *rand.Rand) time.Duration {
	attempt = max(attempt, 1)
	if b.base > b.cap/time.Duration(attempt) {
		return b.cap
	}
	return min(b.cap, b.base*time.Duration(attempt))
}

// ProportionalJitter scales the exponential sleep by a factor drawn uniformly in
// [1−Jitter, 1+Jitter) and caps the result: min(cap, v·(1 + uniform[−J, J))). It keeps most
// of the schedule's shape and spreads clients by ±J of it, as gRPC's connection backoff
// (multiplier, then ±20% jitter) and the randomization factor of many client libraries do.
type ProportionalJitter struct {
	capped
	// Jitter is J, between 0 and 1.
	Jitter float64
}

// Name returns "proportional-jitter".
func (ProportionalJitter) Name() string { return "proportional-jitter" }

// Delay returns min(cap, v·f) with f uniform in [1−J, 1+J).
func (b ProportionalJitter) Delay(attempt int, _ time.Duration, rng *rand.Rand) time.Duration {
	v := b.ceiling(attempt)
	// The explicit conversions round each product, so no platform fuses them into an FMA.
	f := 1 - b.Jitter + float64(2*b.Jitter*rng.Float64())
	d := float64(float64(v) * f)
	if d >= float64(b.cap) {
		return b.cap
	}
	return time.Duration(d)
}

var (
	_ Backoff = LinearBackoff{}
	_ Backoff = ProportionalJitter{}
	_ Backoff = NoBackoff{}
	_ Backoff = ConstantBackoff{}
	_ Backoff = ExponentialBackoff{}
	_ Backoff = FullJitter{}
	_ Backoff = EqualJitter{}
	_ Backoff = DecorrelatedJitter{}
)
