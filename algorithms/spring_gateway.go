package algorithms

import (
	"errors"
	"math"
	"time"
	"unsafe"
)

// SpringGatewayName is Spring Cloud Gateway's RedisRateLimiter's name in specs.
const SpringGatewayName = "spring-gateway"

func init() {
	Register(Kind{
		Name: SpringGatewayName, Rank: 270,
		Summary: "Spring Cloud Gateway RedisRateLimiter: a token bucket of burstCapacity refilled at replenishRate per whole second of Redis TIME",
		Params: []Param{
			{Name: "replenishRate", Doc: "tokens added per second (required)"},
			{Name: "burstCapacity", Doc: "the bucket's capacity, at least replenishRate when given (default 1, as RedisRateLimiter.Config's)"},
			{Name: "requestedTokens", Doc: "tokens one request takes (default 1)"},
		},
		Configure: configureSpringGateway,
	})
}

var (
	errSpringRate  = errors.New("replenishRate is required: tokens per second, at least 1")
	errSpringBurst = errors.New("burstCapacity: must be at least replenishRate, as RedisRateLimiter.Config.setBurstCapacity asserts")
)

func configureSpringGateway(args Args) (Model, error) {
	if !args.Has("replenishRate") {
		return nil, errSpringRate
	}
	rate, err := args.count("replenishRate", "tokens per second", 0, 1)
	if err != nil {
		return nil, err
	}
	capacity, err := args.count("burstCapacity", "tokens", 1, 0)
	if err != nil {
		return nil, err
	}
	if args.Has("burstCapacity") && capacity < rate {
		return nil, errSpringBurst
	}
	requested, err := args.count("requestedTokens", "tokens", 1, 1)
	if err != nil {
		return nil, err
	}
	if rate > math.MaxInt32 || capacity > math.MaxInt32 || requested > math.MaxInt32 {
		return nil, errors.New("replenishRate, burstCapacity and requestedTokens are Java ints: at most 2147483647")
	}
	return springModel{name: specText(SpringGatewayName, args), rate: rate, capacity: capacity, requested: requested}, nil
}

type springModel struct {
	name                      string
	rate, capacity, requested int64
}

func (m springModel) New(Policy) (Limiter, error) {
	return &SpringGateway{name: m.name, rate: m.rate, capacity: m.capacity, requested: m.requested,
		stateless: 2*m.capacity/m.rate == 0}, nil
}

// Bound: tokens arrive only as Redis's clock turns a whole second, replenishRate at a
// time, and an interval of length T holds at most ⌈T/1s⌉ such turns after the bucket was
// full; a request takes requestedTokens.
func (m springModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	if 2*m.capacity/m.rate == 0 {
		return Bound{}, false // the script keeps no state: nothing bounds a key
	}
	turns := windowsMet(spanOf(p, span), time.Second) - 1
	return Bound{
		Value:   float64(m.capacity+m.rate*turns) / float64(m.requested),
		Formula: "(burstCapacity + replenishRate·⌈T/1s⌉)/requestedTokens",
		Source:  "Spring Cloud Gateway request_rate_limiter.lua (v4.1.5, v4.3.5): a full bucket, then replenishRate at each whole second of Redis TIME in T",
		Reached: true,
	}, true
}

// SpringGateway is Spring Cloud Gateway's RedisRateLimiter, as
// META-INF/scripts/request_rate_limiter.lua decides it in 3.0.6 and later (checked
// against v4.1.5 and v4.3.5): a token bucket in Redis whose clock is redis.call('TIME')[1],
// whole seconds. A key's bucket starts with burstCapacity tokens; a request at Unix second
// s refills replenishRate·(s − last) tokens, capped at burstCapacity, and is admitted when
// the bucket then holds requestedTokens, which it takes; a refused request takes nothing.
// The script's keys expire after ttl = ⌊2·burstCapacity/replenishRate⌋ s idle, by when
// the bucket is full anyway, so the model keeps them. When ttl is 0 the script writes
// nothing at all, and every request finds a full bucket: burstCapacity left at its
// default of 1 under a replenishRate above 2 limits nothing (burstCapacity is asserted
// to be at least replenishRate only when it is set). It keeps 16 bytes per key (none
// when ttl is 0).
//
// Where it parts from the token bucket (token-bucket): the refill comes in whole-second
// steps, because Redis TIME is read in seconds. All requests inside one second see the
// same bucket, and a client that drains it at 10.9 s gets replenishRate more at 11.0 s:
// with replenishRate = burstCapacity = 10, up to 20 pass within 100 ms (Spring Cloud
// Gateway issue 368, "between 10 and 20 go through").
//
// A request of cost c takes c·requestedTokens tokens, so cost 1 is the product exactly; a
// request that needs more than burstCapacity can never pass (burstCapacity 0 refuses all).
//
// Decisions: Remaining is the whole requests (of requestedTokens) still in the bucket.
// RetryAfter of a refused request is the time until the second at which enough tokens
// have come; Reset the time until the second at which the bucket is full (zero when it
// is).
//
// Time that goes backwards: the script would refill from its stored second again after a
// step back (it stores now whatever it was); the model keeps the key's second from moving
// back, deciding an earlier request at the key's latest second without refill. Redis TIME
// on one server does not go back, so on ordered input the two agree.
type SpringGateway struct {
	name                      string
	rate, capacity, requested int64
	stateless                 bool        // ttl is 0: the script stores nothing
	scratch                   springState // the bucket a stateless key finds
	state                     []springState
}

type springState struct {
	second int64 // the Unix second the bucket was last refreshed at; unseen for a new key
	tokens int64 // the tokens it held then
}

var (
	_ Limiter  = (*SpringGateway)(nil)
	_ Admitter = (*SpringGateway)(nil)
)

// Name returns the spec, "spring-gateway:replenishRate=… burstCapacity=…".
func (g *SpringGateway) Name() string { return g.name }

// Allow decides a request of the given cost for key at now.
func (g *SpringGateway) Allow(key uint32, now int64, cost int64) Decision {
	need := max(cost, 1) * g.requested
	s, ok := g.take(key, now, need)
	d := Decision{Allowed: ok, Remaining: s.tokens / g.requested, Reset: g.until(s, now, g.capacity)}
	if !ok {
		d.RetryAfter = Never
		if need <= g.capacity {
			d.RetryAfter = g.until(s, now, need)
		}
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (g *SpringGateway) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, ok := g.take(key, now, max(cost, 1)*g.requested)
	return ok, 0
}

// take is the script: refill by whole seconds, then take need tokens if they are there.
func (g *SpringGateway) take(key uint32, now, need int64) (*springState, bool) {
	if g.stateless {
		g.scratch = springState{second: floorDiv(now, int64(time.Second)), tokens: g.capacity}
		return &g.scratch, need <= g.capacity
	}
	if int(key) >= len(g.state) {
		g.state = grow(g.state, key, springState{second: unseen})
	}
	s := &g.state[key]
	sec := floorDiv(now, int64(time.Second))
	switch {
	case s.second == unseen:
		s.second, s.tokens = sec, g.capacity
	case sec > s.second:
		if elapsed := sec - s.second; elapsed >= (g.capacity-s.tokens+g.rate-1)/g.rate {
			s.tokens = g.capacity
		} else {
			s.tokens += elapsed * g.rate
		}
		s.second = sec
	}
	if s.tokens < need {
		return s, false
	}
	s.tokens -= need
	return s, true
}

// until is the time from now until the second at which s holds want tokens (<=
// burstCapacity), zero if it holds them already.
func (g *SpringGateway) until(s *springState, now, want int64) time.Duration {
	if s.tokens >= want {
		return 0
	}
	seconds := (want - s.tokens + g.rate - 1) / g.rate
	return ahead(satAdd(s.second, seconds)*int64(time.Second), now)
}

// Keys returns the number of keys held: the highest key decided plus one.
func (g *SpringGateway) Keys() int { return len(g.state) }

// StateBytes returns 16 bytes per key held.
func (g *SpringGateway) StateBytes() int64 {
	return int64(len(g.state)) * int64(unsafe.Sizeof(springState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (g *SpringGateway) Reserve(keys int) { g.state = reserve(g.state, keys) }
