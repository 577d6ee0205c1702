package algorithms

import (
	"errors"
	"time"
	"unsafe"
)

// RateLimiterFlexibleName is rate-limiter-flexible's name in specs.
const RateLimiterFlexibleName = "rate-limiter-flexible"

func init() {
	Register(Kind{
		Name: RateLimiterFlexibleName, Rank: 290,
		Summary: "rate-limiter-flexible 11 RateLimiterMemory: points per duration opened by a key's first consume; refused consumes count; blockDuration locks a key out",
		Params: []Param{
			{Name: "points", Doc: "points a key may consume per duration (required)"},
			{Name: "duration", Doc: "the window, in seconds (required; 0: the points never come back)"},
			{Name: "blockDuration", Doc: "seconds a key is refused once it first goes over (default 0: not blocked)"},
		},
		Configure: configureRateLimiterFlexible,
	})
}

var errFlexibleRequired = errors.New("points and duration are required (RateLimiterMemory has had no defaults for them since v10): e.g. rate-limiter-flexible:points=100 duration=60")

func configureRateLimiterFlexible(args Args) (Model, error) {
	if !args.Has("points") || !args.Has("duration") {
		return nil, errFlexibleRequired
	}
	points, err := args.count("points", "points", 0, 1)
	if err != nil {
		return nil, err
	}
	duration, err := args.seconds("duration", 0, 0)
	if err != nil {
		return nil, err
	}
	block, err := args.seconds("blockDuration", 0, 0)
	if err != nil {
		return nil, err
	}
	return flexibleModel{name: specText(RateLimiterFlexibleName, args), points: points, durationMs: duration, blockMs: block}, nil
}

type flexibleModel struct {
	name                string
	points              int64
	durationMs, blockMs int64
}

func (m flexibleModel) New(Policy) (Limiter, error) {
	return &RateLimiterFlexible{name: m.name, points: m.points, durationMs: m.durationMs, blockMs: m.blockMs}, nil
}

// Bound: the windows in which a key can be admitted never overlap, and each admits at
// most points. One opens at least duration after the last (when it ran its course) or
// blockDuration after it went over (a block replaces it and admits nothing), so window
// starts are at least g = min(duration, blockDuration) apart, the one that is set, and an
// interval of length T meets at most ⌈T/g⌉+1 windows. With duration 0 and no block the
// one window never ends.
func (m flexibleModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	b := Bound{
		Source:  "rate-limiter-flexible RateLimiterMemory (lib/component/MemoryStorage/MemoryStorage.js, v11): windows opened by a key's first consume never overlap and start at least min(duration, blockDuration) apart; T meets at most ⌈T/g⌉+1 of them, each admitting points",
		Reached: true,
	}
	gap := m.durationMs
	switch {
	case gap == 0 && m.blockMs == 0:
		b.Value, b.Formula = float64(m.points), "points (duration 0: never renewed)"
		return b, true
	case gap == 0 || m.blockMs > 0 && m.blockMs < gap:
		gap = m.blockMs
		b.Formula = "points·(⌈T/blockDuration⌉+1)"
	default:
		b.Formula = "points·(⌈T/duration⌉+1)"
	}
	b.Value = float64(m.points * windowsMet(spanOf(p, span), time.Duration(gap)*time.Millisecond))
	return b, true
}

// RateLimiterFlexible is rate-limiter-flexible's RateLimiterMemory.consume, as version 11
// decides (lib/RateLimiterMemory.js and lib/component/MemoryStorage/MemoryStorage.js,
// checked against 11.4.0 from npm). Per key it keeps a record of the points consumed and
// when it expires, in milliseconds of Date.now(): a consume of c points at now (read as
// ⌊now/1ms⌋) adds c to the record while expiresAt − now > 0, and otherwise starts a new
// record of c expiring duration after now; it is refused when the record then holds more
// than points. With blockDuration > 0 the consume that first goes over replaces the record
// with one of the same value that expires blockDuration after now: every consume until
// then is refused, however the window would have run (a blockDuration shorter than what
// is left of the window shortens the lockout). It keeps 16 bytes per key.
//
// Where it parts from the fixed window (fixed-window): the window is the key's own,
// opened by its first consume after the last expired, refused consumes count, and a
// block outlasts the window. Its worst case is a fixed window's: points at the end of one
// window and points again at the start of the next.
//
// A request of cost c consumes c points, as consume(key, c) does. execEvenly, which
// delays admitted consumes, is not modelled.
//
// Decisions: Remaining is max(points − consumed, 0). RetryAfter of a refused request and
// Reset are the time until the record expires (msBeforeNext), Never for a record that
// never expires (duration 0) and for a cost above points.
//
// Time that goes backwards: the product's own rule keeps the contract. A consume stamped
// before its key's record expires adds to that record, so a step back never opens a new
// window. The library deletes an expired record on a timer; the model keeps it until the
// next consume replaces it, which decides the same on ordered time.
type RateLimiterFlexible struct {
	name                string
	points              int64
	durationMs, blockMs int64
	state               []flexibleState
}

type flexibleState struct {
	expiresMs int64 // expiresAt in milliseconds since the Unix epoch; noExpiry, or unseen for a new key
	value     int64 // the points consumed in the record
}

// noExpiry is the expiresAt of a record that never expires (the library's null).
const noExpiry = int64(1<<63 - 1)

var (
	_ Limiter  = (*RateLimiterFlexible)(nil)
	_ Admitter = (*RateLimiterFlexible)(nil)
)

// Name returns the spec, "rate-limiter-flexible:points=… duration=…".
func (f *RateLimiterFlexible) Name() string { return f.name }

// Allow decides a request of the given cost for key at now.
func (f *RateLimiterFlexible) Allow(key uint32, now int64, cost int64) Decision {
	s, ok := f.consume(key, now, cost)
	d := Decision{Allowed: ok, Remaining: max(f.points-s.value, 0), Reset: Never}
	if s.expiresMs != noExpiry {
		d.Reset = ahead(msToNs(s.expiresMs), now)
	}
	if !ok {
		d.RetryAfter = d.Reset
		if max(cost, 1) > f.points {
			d.RetryAfter = Never
		}
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (f *RateLimiterFlexible) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, ok := f.consume(key, now, cost)
	return ok, 0
}

// consume is MemoryStorage.incrby and RateLimiterMemory's comparison and block.
func (f *RateLimiterFlexible) consume(key uint32, now int64, cost int64) (*flexibleState, bool) {
	if int(key) >= len(f.state) {
		f.state = grow(f.state, key, flexibleState{expiresMs: unseen})
	}
	s := &f.state[key]
	cost = max(cost, 1)
	ms := msFloor(now)
	if s.expiresMs > ms { // expiresAt − now > 0, and noExpiry is above every ms
		s.value += cost
	} else {
		s.value, s.expiresMs = cost, f.expiry(ms, f.durationMs)
	}
	if s.value <= f.points {
		return s, true
	}
	// Only the consume that first goes over blocks: after it the value exceeds points
	// by more than any one consume adds.
	if f.blockMs > 0 && s.value <= f.points+cost {
		s.expiresMs = ms + f.blockMs
	}
	return s, false
}

// expiry is the expiresAt of a record set at ms for durationMs: noExpiry for 0.
func (f *RateLimiterFlexible) expiry(ms, durationMs int64) int64 {
	if durationMs == 0 {
		return noExpiry
	}
	return ms + durationMs
}

// Keys returns the number of keys held: the highest key decided plus one.
func (f *RateLimiterFlexible) Keys() int { return len(f.state) }

// StateBytes returns 16 bytes per key held.
func (f *RateLimiterFlexible) StateBytes() int64 {
	return int64(len(f.state)) * int64(unsafe.Sizeof(flexibleState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (f *RateLimiterFlexible) Reserve(keys int) { f.state = reserve(f.state, keys) }
