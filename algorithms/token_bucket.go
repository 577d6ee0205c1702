package algorithms

import (
	"math"
	"time"
	"unsafe"
)

// TokenBucketName is the token bucket's name on the command line.
const TokenBucketName = "token-bucket"

func init() {
	Register(Kind{
		Name: TokenBucketName, Rank: 40, Default: true,
		Summary:   "capacity b, refilled at L/W, lazily; starts full",
		Configure: byPolicy(func(p Policy) Limiter { return NewTokenBucket(p) }, tokenBucketBound),
		Bucket:    true, Form: FormBucket, Script: "token_bucket", Tag: "tb",
	})
}

func tokenBucketBound(p Policy, span time.Duration) Bound {
	t := termsOf(p, span)
	return Bound{
		Value:   t.burst + t.rate*t.span,
		Formula: "b + r·T",
		Source:  "token-bucket arrival curve (network calculus σ+ρT; x/time/rate's burst b at rate r): at most b tokens at the start plus r·T refilled",
		// x/time/rate forgives a deficit worth less than a nanosecond of refill, so the
		// supremum may be met exactly.
		Reached: true,
	}
}

// TokenBucket is a token bucket per key holding up to Burst tokens (the policy's
// EffectiveBurst), refilled at Limit/Window tokens per second, lazily: tokens are computed
// from the time since the key's last admission when a request arrives. A key starts full.
// A request of cost c takes c tokens and is admitted iff the bucket holds at least c.
// Over any span of length d it admits at most Burst + rate·d; with Burst = Limit that is
// up to 2·Limit in one Window, by design.
//
// It is golang.org/x/time/rate's Limiter run with virtual time and many keys, and agrees
// with NewLimiter(rate.Limit(float64(Limit)/Window.Seconds()), Burst).AllowN(time.Unix(0,
// now), c) decision for decision because it repeats its float64 arithmetic step by step:
// refill elapsed.Seconds()·rate capped at Burst, subtract c, and admit iff the wait for the
// deficit, truncated to whole nanoseconds, is zero (so a deficit worth less than 1 ns is
// admitted, leaving the bucket a hair below zero) and c <= Burst. A refused request leaves
// the key's state untouched. It keeps 16 bytes per key.
//
// Decisions: Remaining is the largest cost that would pass right after the decision: the
// whole tokens left, at least 0. RetryAfter of a refused request is x/time/rate's wait for
// its deficit (Reservation.Delay), raised by the nanosecond it sometimes falls short so that
// a retry after RetryAfter passes if nothing else is admitted; Never when c exceeds Burst.
// Because of the sub-nanosecond slack above, the retry may also pass 1 ns earlier. Reset
// is, in the same way, the time until a request of cost Burst would pass: until the bucket
// is full. A cost below 1 counts as 1.
//
// Time that goes backwards: the key's clock is last, the time of its latest admission, and
// it never moves back. A request stamped before last is decided at last: it sees the tokens
// held at last, with no refill, and if admitted takes them without moving last. So no
// stretch of time is refilled twice, and a late request is never better off than one on
// time. Its RetryAfter and Reset count from its own now, so they include the time from now
// to last. This is where it parts from x/time/rate, which refills from the request's time
// and then sets last to it, moving it back, so that the next request refills the same
// stretch again (see TestXTimeRateRefillsTwiceUnderReordering). On ordered input the two
// agree decision for decision.
type TokenBucket struct {
	burst  int64
	full   float64 // burst as a float
	perSec float64 // refill rate in tokens per second
	// slack is twice the tokens a nanosecond refills: a deficit above it waits at least a
	// nanosecond, so it is refused without the division that finds its exact wait.
	slack   float64
	state   []tokenBucketState
	touched touched
}

type tokenBucketState struct {
	last   int64   // the latest time an admission was decided at, or unseen
	tokens float64 // tokens held at last
}

var (
	_ Limiter  = (*TokenBucket)(nil)
	_ Admitter = (*TokenBucket)(nil)
	_ Reserver = (*TokenBucket)(nil)
)

// NewTokenBucket returns a token-bucket limiter for p, which must be valid
// (see Policy.Validate; New checks it).
func NewTokenBucket(p Policy) *TokenBucket {
	perSec := float64(p.Limit) / p.Window.Seconds()
	return &TokenBucket{
		burst:  p.EffectiveBurst(),
		full:   float64(p.EffectiveBurst()),
		perSec: perSec,
		slack:  2 * perSec / float64(time.Second),
	}
}

// Name returns "token-bucket".
func (b *TokenBucket) Name() string { return TokenBucketName }

// Allow decides a request of the given cost for key at now (nanoseconds since the Unix
// epoch). A now before the key's last admission is decided at that admission's time,
// without refill.
func (b *TokenBucket) Allow(key uint32, now int64, cost int64) Decision {
	s := b.slot(key)
	at := max(now, s.last)
	tokens := b.tokensAt(s, at)
	cost = max(cost, 1)
	left := tokens - float64(cost)
	ok := b.admits(cost, left)
	if ok {
		s.last, s.tokens = at, left
	}
	behind := ahead(at, now) // zero unless now is before the key's last admission
	if ok {
		return Decision{
			Allowed:   true,
			Remaining: b.remaining(left),
			Reset:     b.earliest(s, now, b.burst, satAddDuration(behind, b.durationFromTokens(b.full-left))),
		}
	}
	wait := Never
	if cost <= b.burst {
		wait = b.earliest(s, now, cost, satAddDuration(behind, b.durationFromTokens(-left)))
	}
	return Decision{
		Remaining:  b.remaining(tokens),
		RetryAfter: wait,
		Reset:      b.earliest(s, now, b.burst, satAddDuration(behind, b.durationFromTokens(b.full-tokens))),
	}
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
// Both apply the rule the same way: the request is decided at at = max(now, the key's
// last admission), from the tokens held there (tokensAt, admits), and when it is admitted
// it takes them and moves the key's clock to at. The parts are small enough to be
// inlined, so that a simulation pass, which calls Admit once per request, does not pay a
// second call for them.
func (b *TokenBucket) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	s := b.slot(key)
	at := max(now, s.last)
	left := b.tokensAt(s, at) - float64(max(cost, 1))
	if !b.admits(cost, left) {
		return false, 0
	}
	s.last, s.tokens = at, left
	return true, 0
}

// slot returns key's state, making room for it first when the key is new.
func (b *TokenBucket) slot(key uint32) *tokenBucketState {
	if int(key) >= len(b.state) {
		b.growTo(key)
	}
	return &b.state[key]
}

// growTo makes room for key's state, out of Admit's way: it runs once per new key.
//
//go:noinline
func (b *TokenBucket) growTo(key uint32) {
	b.state = grow(b.state, key, tokenBucketState{last: unseen})
}

// admits reports whether a request of the given cost that would leave left tokens is
// admitted: when cost <= burst and, as x/time/rate decides, the wait for the deficit,
// truncated to whole nanoseconds, is zero. A deficit above slack waits at least a
// nanosecond, so it is refused without the division that finds its wait.
func (b *TokenBucket) admits(cost int64, left float64) bool {
	return cost <= b.burst && (left >= 0 || (-left <= b.slack && b.durationFromTokens(-left) == 0))
}

// remaining returns the largest cost that would pass with tokens in the bucket: the whole
// tokens, or one more when the rest is short by less than a nanosecond's refill.
func (b *TokenBucket) remaining(tokens float64) int64 {
	n := max(int64(math.Floor(tokens)), 0)
	if n < b.burst && b.durationFromTokens(float64(n+1)-tokens) == 0 {
		n++
	}
	return n
}

// passes reports whether a request of cost (<= burst) would be admitted at now from state
// s, by the rule of Allow.
func (b *TokenBucket) passes(s *tokenBucketState, now, cost int64) bool {
	left := b.tokensAt(s, now) - float64(cost)
	return left >= 0 || b.durationFromTokens(-left) == 0
}

// earliest returns the time from now until a request of cost (<= burst) would pass from
// state s: x/time/rate's estimate (the refill time, truncated to the nanosecond) when the
// request passes then, as it usually does, and otherwise the first nanosecond after it at
// which it does (tokens refill from whole nanoseconds, so the truncated estimate can fall
// one short). x/time/rate admits a deficit worth less than a nanosecond of refill, so the
// request may also pass up to 1 ns before the returned time.
func (b *TokenBucket) earliest(s *tokenBucketState, now, cost int64, estimate time.Duration) time.Duration {
	if estimate == Never {
		return Never
	}
	ok := func(d int64) bool { return b.passes(s, satAdd(now, d), cost) }
	if ok(int64(estimate)) {
		return estimate
	}
	return time.Duration(firstTrueAfter(int64(estimate), ok))
}

// tokensAt returns the tokens s holds at now, as x/time/rate's advance computes them for
// a now not before s.last; for an earlier now, the tokens held at s.last.
func (b *TokenBucket) tokensAt(s *tokenBucketState, now int64) float64 {
	if s.last == unseen {
		return b.full
	}
	elapsed := time.Duration(max(now-s.last, 0))
	return min(s.tokens+elapsed.Seconds()*b.perSec, b.full)
}

// durationFromTokens returns the time to refill the given tokens, truncated to the
// nanosecond, and zero for none; Never when it does not fit a Duration.
func (b *TokenBucket) durationFromTokens(tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	d := tokens / b.perSec * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return Never
	}
	return time.Duration(d)
}

// Keys returns the number of keys held: the highest key decided plus one.
func (b *TokenBucket) Keys() int { return len(b.state) }

// StateBytes returns 16 bytes per key held.
func (b *TokenBucket) StateBytes() int64 {
	return int64(len(b.state)) * int64(unsafe.Sizeof(tokenBucketState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (b *TokenBucket) Reserve(keys int) { b.state = reserve(b.state, keys) }
