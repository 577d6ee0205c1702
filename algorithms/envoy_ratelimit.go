package algorithms

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"
)

// EnvoyRatelimitName is the envoy ratelimit service's name in specs.
const EnvoyRatelimitName = "envoy-ratelimit"

func init() {
	Register(Kind{
		Name: EnvoyRatelimitName, Rank: 230,
		Summary: "envoyproxy/ratelimit service: requests_per_unit in windows of the unit aligned to the Unix epoch; refused requests count",
		Params: []Param{
			{Name: "unit", Doc: "second, minute, hour, day, week, month (30 days) or year (365 days) (required)"},
			{Name: "requests_per_unit", Doc: "requests a key may make per unit (required)"},
			{Name: "local_cache", Flag: true, Doc: "LOCAL_CACHE_SIZE_IN_BYTES > 0: over-limit keys answered from the service's memory"},
			{Name: "stop_cache_key_increment_when_overlimit", Flag: true, Doc: "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true"},
			{Name: "shadow_mode", Flag: true, Doc: "the rule's shadow_mode: every request passes; those it would refuse are counted"},
		},
		Configure: configureEnvoyRatelimit,
	})
}

// envoyUnits are the units' dividers in seconds (src/utils/utilities.go UnitToDivider).
var envoyUnits = map[string]int64{
	"second": 1, "minute": 60, "hour": 3600, "day": 86400,
	"week": 604800, "month": 2592000, "year": 31536000,
}

var errEnvoyRatelimitRequired = errors.New("unit and requests_per_unit are required, as a rate_limit of the service's config has them: e.g. envoy-ratelimit:unit=minute requests_per_unit=100")

func configureEnvoyRatelimit(args Args) (Model, error) {
	if !args.Has("unit") || !args.Has("requests_per_unit") {
		return nil, errEnvoyRatelimitRequired
	}
	unit, ok := envoyUnits[strings.ToLower(args["unit"])]
	if !ok {
		return nil, fmt.Errorf("unit: want second, minute, hour, day, week, month or year, got %q", args["unit"])
	}
	limit, err := args.count("requests_per_unit", "requests", 0, 1)
	if err != nil {
		return nil, err
	}
	return envoyRatelimitModel{
		name: specText(EnvoyRatelimitName, args), unit: time.Duration(unit) * time.Second, limit: limit,
		localCache: args.Has("local_cache"), shadow: args.Has("shadow_mode"),
	}, nil
}

type envoyRatelimitModel struct {
	name       string
	unit       time.Duration
	limit      int64
	localCache bool
	shadow     bool
}

func (m envoyRatelimitModel) New(Policy) (Limiter, error) {
	return &EnvoyRatelimit{name: m.name, limit: m.limit, unit: int64(m.unit), localCache: m.localCache, shadow: m.shadow,
		index: windowIndex{window: int64(m.unit)}}, nil
}

// Bound: aligned windows of the unit; an interval of length T meets at most ⌈T/unit⌉+1 of
// them, each admitting requests_per_unit. In shadow mode nothing is refused.
func (m envoyRatelimitModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	if m.shadow {
		return Bound{}, false
	}
	return Bound{
		Value:   float64(m.limit * windowsMet(spanOf(p, span), m.unit)),
		Formula: "requests_per_unit·(⌈T/unit⌉+1)",
		Source:  "envoyproxy/ratelimit (src/redis/fixed_cache_impl.go, src/limiter/base_limiter.go): a counter per window of the unit aligned to the Unix epoch; T meets at most ⌈T/unit⌉+1 of them",
		Reached: true,
	}, true
}

// EnvoyRatelimit is one rate limit rule of the envoyproxy/ratelimit service on its Redis
// backend, for one descriptor per request (rlsim's key), as src/redis/fixed_cache_impl.go
// and src/limiter/base_limiter.go decide on master (f2fb157; the project seldom tags).
// The service reads its wall clock in whole Unix seconds and counts each key in the
// window ⌊now/unit⌋·unit of seconds since the Unix epoch: a day starts at 00:00 UTC, a
// week on a Thursday, a month is 30 days and a year 365. A request INCRBYs its key's
// counter by its hits and is OVER_LIMIT when the result exceeds requests_per_unit, so
// refused requests count. It keeps 16 bytes per key.
//
// Where it parts from the fixed window (fixed-window): only in counting refused
// requests, which changes no decision inside a window (a count over the limit stays over
// it until the window ends). The surprise is the alignment: a "minute" is a minute of
// the clock, so 2·requests_per_unit pass across its edge, and "month" is not a calendar
// month.
//
// The options that change what the service does: with local_cache an over-limit key is
// answered from the service's memory without touching Redis, and with
// stop_cache_key_increment_when_overlimit the service first reads every descriptor's count
// and increments only those that would go over. Both change what Redis counts, and with
// several descriptors per request what another descriptor counts, but for one descriptor
// they change no decision: an over-limit window's key is over whether or not it is
// incremented again. The model accepts them so a configuration reads as written and
// counts as each does. With shadow_mode every request is OK, the counter still
// incremented; WouldRefuse counts the requests it would have refused.
//
// A request of cost c adds c hits (the request's hits_addend), so cost 1 is the
// product's default exactly.
//
// Decisions: Remaining is max(requests_per_unit − count, 0). RetryAfter of a refused
// request and Reset are the time until the window ends (DurationUntilReset); RetryAfter
// is Never for a cost above requests_per_unit.
//
// Time that goes backwards: as the fixed window, a request stamped in a window before
// its key's latest counts in the latest, so a step back never starts a count over.
type EnvoyRatelimit struct {
	name       string
	limit      int64
	unit       int64 // ns
	localCache bool
	shadow     bool
	index      windowIndex
	state      []fixedWindowState
	// wouldRefuse counts, in shadow mode, the requests the rule let through over its limit.
	wouldRefuse int64
}

// Shadowed is implemented by a limiter that can run in shadow mode, admitting every
// request and counting those its rule would have refused; reports show the count
// (would_refuse) beside what was admitted.
type Shadowed interface {
	WouldRefuse() int64
}

var (
	_ Limiter  = (*EnvoyRatelimit)(nil)
	_ Admitter = (*EnvoyRatelimit)(nil)
	_ Shadowed = (*EnvoyRatelimit)(nil)
)

// Name returns the spec, "envoy-ratelimit:unit=… requests_per_unit=…".
func (e *EnvoyRatelimit) Name() string { return e.name }

// WouldRefuse is the number of requests shadow mode let through that the rule would
// have refused (always 0 outside shadow mode).
func (e *EnvoyRatelimit) WouldRefuse() int64 { return e.wouldRefuse }

// Allow decides a request of the given cost for key at now.
func (e *EnvoyRatelimit) Allow(key uint32, now int64, cost int64) Decision {
	s, ok := e.hit(key, now, max(cost, 1))
	start := s.index * e.unit
	reset := ahead(satAdd(start, e.unit), now)
	d := Decision{Allowed: ok, Remaining: max(e.limit-s.count, 0), Reset: reset}
	if !ok {
		d.RetryAfter = reset
		if max(cost, 1) > e.limit {
			d.RetryAfter = Never
		}
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (e *EnvoyRatelimit) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, ok := e.hit(key, now, max(cost, 1))
	return ok, 0
}

// hit is DoLimit for one descriptor: the key of now's window (or the key's latest),
// INCRBY hits unless the local cache already knows the window is over, and the
// comparison.
func (e *EnvoyRatelimit) hit(key uint32, now, hits int64) (*fixedWindowState, bool) {
	if int(key) >= len(e.state) {
		e.state = grow(e.state, key, fixedWindowState{index: unseen})
	}
	s := &e.state[key]
	if index := e.index.of(now); index > s.index {
		s.index, s.count = index, 0
	}
	over := s.count > e.limit // only with the local cache can a count stop above the limit
	if !(e.localCache && over) {
		s.count += hits
		over = s.count > e.limit
	}
	if over && e.shadow {
		e.wouldRefuse++
		return s, true
	}
	return s, !over
}

// Keys returns the number of keys held: the highest key decided plus one.
func (e *EnvoyRatelimit) Keys() int { return len(e.state) }

// StateBytes returns 16 bytes per key held.
func (e *EnvoyRatelimit) StateBytes() int64 {
	return int64(len(e.state)) * int64(unsafe.Sizeof(fixedWindowState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (e *EnvoyRatelimit) Reserve(keys int) { e.state = reserve(e.state, keys) }
