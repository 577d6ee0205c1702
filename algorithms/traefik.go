package algorithms

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unsafe"
)

// TraefikName is Traefik's rateLimit middleware's name in specs.
const TraefikName = "traefik"

func init() {
	Register(Kind{
		Name: TraefikName, Rank: 250,
		Summary: "Traefik rateLimit (v2.11, v3): x/time/rate at average/period with burst; small excesses delayed up to maxDelay, not refused; idle buckets reset to full",
		Params: []Param{
			{Name: "average", Doc: "requests per period on average (required, at least 1)"},
			{Name: "period", Doc: "the period of average, a duration or whole seconds (default 1s)"},
			{Name: "burst", Doc: "the bucket's capacity, in requests (default 1; below 1 is 1)"},
		},
		Configure: configureTraefik,
	})
}

var errTraefikAverage = errors.New("average is required: requests per period, at least 1 (average=0 turns Traefik's limiter off)")

func configureTraefik(args Args) (Model, error) {
	if !args.Has("average") {
		return nil, errTraefikAverage
	}
	average, err := args.count("average", "requests", 0, 1)
	if err != nil {
		return nil, err
	}
	if average > math.MaxInt64/int64(time.Second) {
		return nil, fmt.Errorf("average: want at most %d requests per period (Traefik counts it in requests·ns), got %d", math.MaxInt64/int64(time.Second), average)
	}
	period := time.Second
	if v, ok := args["period"]; ok {
		// Traefik reads a period as a Go duration or as whole seconds.
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 1 && s <= math.MaxInt64/int64(time.Second) {
			period = time.Duration(s) * time.Second
		} else if period, err = args.duration("period", time.Second, 1); err != nil {
			return nil, err
		}
	}
	burst, err := args.count("burst", "requests", 1, 0)
	if err != nil {
		return nil, err
	}
	return newTraefikModel(specText(TraefikName, args), average, period, max(burst, 1)), nil
}

// traefikModel is a configured Traefik rateLimit: the values its New derives from average,
// period and burst, as rate_limiter.go derives them.
type traefikModel struct {
	name     string
	rate     float64 // rtl, requests per second
	burst    int64
	maxDelay time.Duration
	ttl      int64 // seconds an idle bucket lives
}

func newTraefikModel(name string, average int64, period time.Duration, burst int64) traefikModel {
	m := traefikModel{name: name, burst: burst, ttl: 1}
	m.rate = float64(average*int64(time.Second)) / float64(period)
	if m.rate < 1 {
		m.maxDelay = 500 * time.Millisecond
		m.ttl += int64(1 / m.rate)
	} else {
		m.maxDelay = time.Second / (time.Duration(m.rate) * 2)
		m.ttl++
	}
	return m
}

func (m traefikModel) New(Policy) (Limiter, error) {
	return &Traefik{model: m, full: float64(m.burst), beyond: m.rate * (float64(m.maxDelay) + 2) / float64(time.Second) * (1 + 1e-9),
		nsPerToken: float64(time.Second) / m.rate, seconds: windowIndex{window: int64(time.Second)}}, nil
}

// Bound: x/time/rate's b + r·T, plus what a request delayed rather than refused borrows
// (it may leave the bucket r·maxDelay short), plus what an idle reset gives back early.
// A bucket is new at a request only when ⌊now⌋ >= ⌊the key's last request⌋ + ttl, so the
// requests that find new buckets are at least ttl whole seconds apart (T holds at most
// k = ⌈(T+1 s)/ttl⌉ of them) and each follows more than ttl−1 s of idleness; a reset pays
// when burst + r·maxDelay exceeds what the idle time would have refilled, r·(ttl−1 s).
func (m traefikModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	T := spanOf(p, span).Seconds()
	idle := float64(m.ttl - 1)
	stretch := float64(m.burst) + m.rate*m.maxDelay.Seconds()
	k := 1.0
	if stretch > m.rate*idle {
		k = math.Ceil((T + 1) / float64(m.ttl))
	}
	return Bound{
		Value:   k*stretch + m.rate*(T-(k-1)*idle),
		Formula: "k·(burst + r·maxDelay) + r·(T − (k−1)·(ttl−1 s)), k = ⌈(T+1 s)/ttl⌉ idle resets when they pay, else 1",
		Source:  "Traefik rateLimit (pkg/middlewares/ratelimiter/rate_limiter.go v2.11, in_memory_limiter.go v3.6): x/time/rate's b + r·T, a delayed request's r·maxDelay, and a full bucket after each idle TTL",
		Reached: true,
	}, true
}

// Traefik is Traefik's rateLimit middleware in memory, as v2.11 (rate_limiter.go) and v3
// up to 3.6 (rate_limiter.go, in_memory_limiter.go, ttlmap) decide, checked against
// v3.6.0 and golang.org/x/time/rate v0.16.0. Per source it keeps an x/time/rate Limiter of
// rate r = average/period per second and burst b, which starts full, and reserves one
// token per request: a request whose reservation would wait up to maxDelay is admitted
// after that wait (Decision.Delay: Traefik sleeps before passing it on); one that would
// wait longer has its reservation cancelled (the token given back) and is refused.
// maxDelay is 1 s/(2·⌊r⌋) for r >= 1, and 500 ms below; a bucket untouched for a ttl (2 s
// for r >= 1, else 1+⌊1/r⌋ s, counted in whole Unix seconds as the TTL map counts them:
// expired once ⌊now⌋ >= ⌊last request⌋ + ttl) is thrown away, and the key's next request
// finds a new, full one. It keeps 24 bytes per key.
//
// Where it parts from the token bucket (token-bucket, which is x/time/rate too): a
// request that finds the bucket short by up to r·maxDelay tokens — about half a token
// for a whole rate — is delayed rather than refused, so a client that spaces its requests
// at the rate is never refused; and a bucket idle for the ttl is full again even where a
// token bucket would still be refilling, which admits more than b + r·T when burst > 2r.
// Average 6 per minute is one request every 10 s with burst 1, not 6 at once (Traefik
// issue 8330).
//
// Traefik takes one token per request whatever it costs; a request of cost c reserves c
// tokens (ReserveN), so cost 1 is the product exactly. A cost above burst can never pass.
//
// Decisions: Delay is the reservation's wait. Remaining is the largest cost that would
// pass (within maxDelay) right after the decision. RetryAfter of a refused request is the
// time until it would pass (its wait less maxDelay, or the bucket's reset if that comes
// first); Reset the time until burst would pass. The float arithmetic is
// x/time/rate's, step for step, so a decision is the library's to the nanosecond.
//
// Time that goes backwards: as the token bucket, a request stamped before its key's
// latest decision is decided at that decision's time, without refill, and its TTL is not
// moved back; x/time/rate itself would refill the same stretch again. On ordered input
// the two agree decision for decision (TestTraefikMatchesXTimeRate).
type Traefik struct {
	model traefikModel
	full  float64 // burst as a float
	// beyond is a deficit surely past maxDelay's allowance: the tokens of maxDelay + 2 ns,
	// so that its wait, truncated, exceeds maxDelay whatever the rounding. A request that
	// leaves more is refused without the division that finds its wait.
	beyond     float64
	nsPerToken float64     // 1 s/r, in nanoseconds
	seconds    windowIndex // ⌊now/1s⌋, the TTL map's clock
	state      []traefikState
}

type traefikState struct {
	last   int64   // the time the bucket was last reserved from; unseen for a new bucket
	tokens float64 // the tokens it held then
	expiry int64   // the TTL map's expiry, Unix seconds
}

var (
	_ Limiter  = (*Traefik)(nil)
	_ Admitter = (*Traefik)(nil)
)

// Name returns the spec, "traefik:average=… period=… burst=…".
func (t *Traefik) Name() string { return t.model.name }

// Allow decides a request of the given cost for key at now.
func (t *Traefik) Allow(key uint32, now int64, cost int64) Decision {
	s, at, ok, wait := t.reserve(key, now, max(cost, 1))
	cost = max(cost, 1)
	d := Decision{Allowed: ok}
	if ok {
		d.Delay = satAddDuration(ahead(at, now), wait)
	} else {
		d.RetryAfter = Never
		if cost <= t.model.burst {
			d.RetryAfter = t.earliest(s, now, cost)
		}
	}
	d.Remaining = t.remaining(s, now)
	d.Reset = t.earliest(s, now, t.model.burst)
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (t *Traefik) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, at, ok, wait := t.reserve(key, now, max(cost, 1))
	if !ok {
		return false, 0
	}
	return true, satAddDuration(ahead(at, now), wait)
}

// reserve is the middleware: the TTL map's Get and Set, Reserve, and Cancel when the wait
// is too long. It returns the key's state, the time it was decided at, and the decision
// with its wait.
func (t *Traefik) reserve(key uint32, now, cost int64) (*traefikState, int64, bool, time.Duration) {
	if int(key) >= len(t.state) {
		t.state = grow(t.state, key, traefikState{last: unseen, tokens: t.full})
	}
	s := &t.state[key]
	at := max(now, s.last)
	sec := t.seconds.of(at)
	if s.last == unseen || s.expiry <= sec {
		s.last, s.tokens = unseen, t.full // a new rate.Limiter: full
	}
	s.expiry = max(s.expiry, sec+t.model.ttl)
	left := t.tokensAt(s, at) - float64(cost)
	if cost > t.model.burst {
		return s, at, false, 0 // not OK: x/time/rate changes nothing
	}
	var wait time.Duration
	if left < 0 {
		wait = Never
		if -left <= t.beyond {
			wait = t.waitFor(-left)
		}
	}
	s.last = at
	if wait > t.model.maxDelay {
		// Cancel: the reservation is the latest, so all its tokens come back.
		s.tokens = min(left+float64(cost), t.full)
		return s, at, false, wait
	}
	s.tokens = left
	return s, at, true, wait
}

// tokensAt is x/time/rate's advance: the tokens s holds at (not before s.last).
func (t *Traefik) tokensAt(s *traefikState, at int64) float64 {
	if s.last == unseen {
		return t.full
	}
	elapsed := time.Duration(at - s.last)
	return min(s.tokens+elapsed.Seconds()*t.model.rate, t.full)
}

// durationFromTokens is x/time/rate's: the time to refill tokens, truncated to the
// nanosecond; Never when it does not fit a Duration.
func (t *Traefik) durationFromTokens(tokens float64) time.Duration {
	d := tokens / t.model.rate * float64(time.Second)
	if d > float64(math.MaxInt64) {
		return Never
	}
	return time.Duration(d)
}

// waitFor is durationFromTokens(tokens) without its division where that cannot change
// the answer: tokens·(1 s/r) is within a few units in the last place of x/time/rate's
// tokens/r·1 s, so unless it falls within a millionth of a nanosecond of a whole one,
// both truncate to the same nanosecond.
func (t *Traefik) waitFor(tokens float64) time.Duration {
	d := tokens * t.nsPerToken
	if d < 1<<52 {
		whole := int64(d)
		if f := d - float64(whole); f > 1e-6 && f < 1-1e-6 {
			return time.Duration(whole)
		}
	}
	return t.durationFromTokens(tokens)
}

// passes reports whether a request of cost (<= burst) would be admitted at now from s,
// without changing it: from a new bucket if s's TTL has run out by then.
func (t *Traefik) passes(s *traefikState, now, cost int64) bool {
	at := max(now, s.last)
	tokens := t.full
	if s.last != unseen && s.expiry > floorDiv(at, int64(time.Second)) {
		tokens = t.tokensAt(s, at)
	}
	left := tokens - float64(cost)
	return left >= 0 || t.durationFromTokens(-left) <= t.model.maxDelay
}

// earliest is the time from now until a request of cost (<= burst) would pass from s: 0
// if it passes now, else the first nanosecond it does, found from the estimate of its
// wait less maxDelay.
func (t *Traefik) earliest(s *traefikState, now, cost int64) time.Duration {
	ok := func(d int64) bool { return t.passes(s, satAdd(now, d), cost) }
	if ok(0) {
		return 0
	}
	at := max(now, s.last)
	guess := int64(ahead(at, now))
	if short := float64(cost) - t.tokensAt(s, at); short > 0 {
		guess = satAdd(guess, int64(max(t.durationFromTokens(short)-t.model.maxDelay, 0)))
	}
	if ok(guess) {
		// Step back to the first nanosecond that passes; the estimate is rarely more than
		// a few off.
		lo := int64(0)
		for guess-lo > 1 {
			mid := lo + (guess-lo)/2
			if ok(mid) {
				guess = mid
			} else {
				lo = mid
			}
		}
		return time.Duration(guess)
	}
	return time.Duration(firstTrueAfter(guess, ok))
}

// remaining is the largest cost that would pass from s at now, at most burst: the whole
// tokens held plus the maxDelay allowance, checked by passes.
func (t *Traefik) remaining(s *traefikState, now int64) int64 {
	tokens := t.full
	if at := max(now, s.last); s.last != unseen && s.expiry > floorDiv(at, int64(time.Second)) {
		tokens = t.tokensAt(s, at)
	}
	n := t.model.burst
	if est := tokens + t.model.rate*t.model.maxDelay.Seconds(); est < float64(n) {
		n = int64(max(est, 0))
	}
	for n < t.model.burst && t.passes(s, now, n+1) {
		n++
	}
	for n > 0 && !t.passes(s, now, n) {
		n--
	}
	return n
}

// Keys returns the number of keys held: the highest key decided plus one.
func (t *Traefik) Keys() int { return len(t.state) }

// StateBytes returns 24 bytes per key held.
func (t *Traefik) StateBytes() int64 {
	return int64(len(t.state)) * int64(unsafe.Sizeof(traefikState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (t *Traefik) Reserve(keys int) { t.state = reserve(t.state, keys) }
