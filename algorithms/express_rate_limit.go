package algorithms

import (
	"errors"
	"time"
	"unsafe"
)

// ExpressRateLimitName is express-rate-limit's name in specs.
const ExpressRateLimitName = "express-rate-limit"

func init() {
	Register(Kind{
		Name: ExpressRateLimitName, Rank: 280,
		Summary: "express-rate-limit 7/8 MemoryStore: limit requests per window of windowMs opened by a key's first request; refused requests count",
		Params: []Param{
			{Name: "windowMs", Doc: "the window, in milliseconds (default 60000)"},
			{Name: "limit", Doc: "requests a key may make per window (default 5)"},
		},
		Configure: configureExpressRateLimit,
	})
}

func configureExpressRateLimit(args Args) (Model, error) {
	window, err := args.count("windowMs", "milliseconds", 60000, 1)
	if err != nil {
		return nil, err
	}
	// express-rate-limit's MemoryStore refuses a window its setInterval cannot hold.
	if window > maxSetTimeoutMs {
		return nil, errExpressWindow
	}
	limit, err := args.count("limit", "requests", 5, 1)
	if err != nil {
		return nil, err
	}
	return expressModel{name: specText(ExpressRateLimitName, args), windowMs: window, limit: limit}, nil
}

// maxSetTimeoutMs is the longest delay Node's setTimeout and setInterval accept, 2³¹−1 ms.
const maxSetTimeoutMs = 1<<31 - 1

var errExpressWindow = errors.New("windowMs: want at most 2147483647 ms (Node's setInterval), as the MemoryStore checks")

type expressModel struct {
	name            string
	windowMs, limit int64
}

func (m expressModel) New(Policy) (Limiter, error) {
	return &ExpressRateLimit{name: m.name, windowMs: m.windowMs, limit: m.limit}, nil
}

// Bound: a key's windows never overlap (the next opens at a request after the last has
// reset), so an interval of length T meets at most ⌈T/windowMs⌉+1 of them, each of which
// admits limit.
func (m expressModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	windows := windowsMet(spanOf(p, span), time.Duration(m.windowMs)*time.Millisecond)
	return Bound{
		Value:   float64(m.limit * windows),
		Formula: "limit·(⌈T/windowMs⌉+1)",
		Source:  "express-rate-limit MemoryStore (source/memory-store.ts, v8): windows of windowMs opened by a key's first request never overlap; T meets at most ⌈T/windowMs⌉+1 of them, each admitting limit",
		Reached: true,
	}, true
}

// ExpressRateLimit is express-rate-limit's middleware over its default MemoryStore, as
// versions 7.0 to 8.7 decide (source/memory-store.ts and source/rate-limit.ts, checked
// against 8.7.5 from npm, the MemoryStore unchanged since 7.0.0's per-client reset
// times). Per key it keeps totalHits and resetTime, in milliseconds of Date.now(): a
// request at now (read as ⌊now/1ms⌋) first resets the key when resetTime <= now
// (totalHits 0, resetTime now+windowMs), then adds its hit, and is refused when totalHits
// exceeds limit. It keeps 16 bytes per key.
//
// Where it parts from the fixed window (fixed-window): the window is the key's own,
// opened by its first request after the last one reset rather than aligned to the clock,
// and refused requests count (the middleware increments before it compares), so a key
// that keeps knocking stays refused to the end of its window but never longer. Its worst
// case is a fixed window's all the same: limit at the end of one window and limit again
// at the start of the next, 2·limit in a span just over one millisecond.
//
// express-rate-limit counts requests, not costs; a request of cost c counts as c hits
// made at once, admitted when the last of them is (so cost 1 is the product exactly). A
// cost above limit can never pass.
//
// Decisions: Remaining is max(limit − totalHits, 0). RetryAfter of a refused request and
// Reset are the time until resetTime, when the key's next request opens a new window;
// RetryAfter is Never for a cost above limit.
//
// Time that goes backwards: the product's own rule keeps the contract. A request stamped
// before the key's resetTime counts in its current window, whatever its stamp, so a step
// back never resets it. The MemoryStore also drops keys idle for two windows on a
// setInterval; those have always reset already, so the model keeps them instead.
type ExpressRateLimit struct {
	name            string
	windowMs, limit int64
	state           []expressState
}

type expressState struct {
	resetMs int64 // resetTime, in milliseconds since the Unix epoch; unseen for a new key
	hits    int64 // totalHits in the window that ends there
}

var (
	_ Limiter  = (*ExpressRateLimit)(nil)
	_ Admitter = (*ExpressRateLimit)(nil)
)

// Name returns the spec, "express-rate-limit:windowMs=… limit=…".
func (e *ExpressRateLimit) Name() string { return e.name }

// Allow decides a request of the given cost for key at now.
func (e *ExpressRateLimit) Allow(key uint32, now int64, cost int64) Decision {
	s, ok := e.hit(key, now, cost)
	reset := ahead(msToNs(s.resetMs), now)
	d := Decision{Allowed: ok, Remaining: max(e.limit-s.hits, 0), Reset: reset}
	switch {
	case ok:
	case max(cost, 1) > e.limit:
		d.RetryAfter = Never
	default:
		d.RetryAfter = reset
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (e *ExpressRateLimit) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, ok := e.hit(key, now, cost)
	return ok, 0
}

// hit is MemoryStore.increment and the middleware's comparison.
func (e *ExpressRateLimit) hit(key uint32, now int64, cost int64) (*expressState, bool) {
	if int(key) >= len(e.state) {
		e.state = grow(e.state, key, expressState{resetMs: unseen})
	}
	s := &e.state[key]
	if ms := msFloor(now); s.resetMs <= ms {
		s.resetMs, s.hits = ms+e.windowMs, 0
	}
	s.hits += max(cost, 1)
	return s, s.hits <= e.limit
}

// Keys returns the number of keys held: the highest key decided plus one.
func (e *ExpressRateLimit) Keys() int { return len(e.state) }

// StateBytes returns 16 bytes per key held.
func (e *ExpressRateLimit) StateBytes() int64 {
	return int64(len(e.state)) * int64(unsafe.Sizeof(expressState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (e *ExpressRateLimit) Reserve(keys int) { e.state = reserve(e.state, keys) }
