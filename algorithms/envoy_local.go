package algorithms

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// EnvoyLocalName is Envoy's local rate limit filter's name in specs.
const EnvoyLocalName = "envoy-local"

func init() {
	Register(Kind{
		Name: EnvoyLocalName, Rank: 220,
		Summary: "Envoy local_ratelimit token bucket: max_tokens refilled by tokens_per_fill every fill_interval, in steps on a timer before 1.31, continuously since",
		Params: []Param{
			{Name: "max_tokens", Doc: "the bucket's capacity and initial tokens (required)"},
			{Name: "tokens_per_fill", Doc: "tokens added per fill_interval (default 1)"},
			{Name: "fill_interval", Doc: "the refill period, a duration of at least 50ms (required)"},
			{Name: "version", Doc: "the Envoy release, as 1.30 or 1.33.2: before 1.31 the bucket is refilled by a timer (default: the continuous refill of 1.31 and later)"},
		},
		Configure: configureEnvoyLocal,
	})
}

var errEnvoyLocalRequired = errors.New("max_tokens and fill_interval are required, as Envoy's token_bucket requires them: e.g. envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s")

// envoyTimerBefore is the first Envoy release whose local rate limit refills lazily
// (changelogs/1.31.0.yaml: "non-timer based token bucket").
const envoyTimerBefore = 31

func configureEnvoyLocal(args Args) (Model, error) {
	if !args.Has("max_tokens") || !args.Has("fill_interval") {
		return nil, errEnvoyLocalRequired
	}
	maxTokens, err := args.count("max_tokens", "tokens", 0, 1)
	if err != nil {
		return nil, err
	}
	perFill, err := args.count("tokens_per_fill", "tokens", 1, 1)
	if err != nil {
		return nil, err
	}
	interval, err := args.duration("fill_interval", 0, 50*time.Millisecond)
	if err != nil {
		return nil, err
	}
	timer := false
	if v, ok := args["version"]; ok {
		minor, err := envoyMinor(v)
		if err != nil {
			return nil, err
		}
		timer = minor < envoyTimerBefore
	}
	return envoyLocalModel{
		name: specText(EnvoyLocalName, args), maxTokens: maxTokens, perFill: perFill, interval: interval, timer: timer,
	}, nil
}

// envoyMinor reads an Envoy release, "1.N" or "1.N.P", and returns N.
func envoyMinor(v string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	bad := fmt.Errorf("version: want an Envoy release as 1.30 or 1.31.2, got %q", v)
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "1" {
		return 0, bad
	}
	for _, p := range parts[1:] {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return 0, bad
		}
	}
	minor, _ := strconv.Atoi(parts[1])
	return minor, nil
}

type envoyLocalModel struct {
	name               string
	maxTokens, perFill int64
	interval           time.Duration
	timer              bool
}

func (m envoyLocalModel) New(Policy) (Limiter, error) {
	if m.timer {
		return &EnvoyLocalTimer{name: m.name, maxTokens: m.maxTokens, perFill: m.perFill,
			interval: int64(m.interval), index: windowIndex{window: int64(m.interval)}}, nil
	}
	return &envoyLocalContinuous{
		GCRA: NewGCRA(Policy{Limit: m.perFill, Window: m.interval, Burst: m.maxTokens}),
		name: m.name,
	}, nil
}

// Bound: the timer's bucket holds at most max_tokens when a key's first admission in
// the window comes, and gains min(tokens_per_fill, max_tokens) at each tick after it: an
// interval of length T holds at most ⌈T/fill_interval⌉ ticks. The continuous bucket is a
// token bucket of capacity max_tokens refilled at tokens_per_fill/fill_interval.
func (m envoyLocalModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	span = spanOf(p, span)
	if m.timer {
		ticks := windowsMet(span, m.interval) - 1
		return Bound{
			Value:   float64(m.maxTokens) + float64(min(m.perFill, m.maxTokens))*float64(ticks),
			Formula: "max_tokens + tokens_per_fill·⌈T/fill_interval⌉",
			Source:  "Envoy local_ratelimit before 1.31 (TimerTokenBucket::onFillTimer, local_ratelimit_impl.cc): a full bucket, then tokens_per_fill at each timer tick in T",
			Reached: true,
		}, true
	}
	return Bound{
		Value:   float64(m.maxTokens) + float64(m.perFill)*float64(span)/float64(m.interval),
		Formula: "max_tokens + (tokens_per_fill/fill_interval)·T",
		Source:  "Envoy local_ratelimit since 1.31 (AtomicTokenBucketImpl, token_bucket_impl.h): a token bucket's σ + ρT with σ = max_tokens, ρ = tokens_per_fill/fill_interval",
		Reached: false,
	}, true
}

// envoyLocalContinuous is Envoy's local rate limit since 1.31: AtomicTokenBucketImpl
// (source/common/common/token_bucket_impl.h, after folly's TokenBucket), which keeps one
// time, the instant the bucket was empty, t0, holds min(max_tokens, (now − t0)·rate)
// tokens at now with rate = tokens_per_fill/fill_interval, starts full, and on consuming c
// tokens moves t0 forward by c/rate. That is exactly GCRA with emission interval
// fill_interval/tokens_per_fill and tolerance max_tokens intervals (t0 + max_tokens/rate
// is GCRA's tat), so it is built on GCRA, which keeps the times exactly: Envoy computes in
// float64 seconds of its monotonic clock and may decide a request within a few
// nanoseconds of a token's arrival the other way. A refused request consumes nothing. It
// keeps 16 bytes per key.
//
// Where it parts from the token bucket: nowhere; it is one. The surprise is the step
// refill of the versions before it (EnvoyLocalTimer).
//
// Envoy's filter takes one token per request (its local_cluster_rate_limit shares scale
// that cost, not modelled); a request of cost c takes c tokens, so cost 1 is the product
// exactly. Decisions, and time that goes backwards, are GCRA's.
type envoyLocalContinuous struct {
	*GCRA
	name string
}

// Name returns the spec, "envoy-local:max_tokens=… tokens_per_fill=… fill_interval=…".
func (e *envoyLocalContinuous) Name() string { return e.name }

// EnvoyLocalTimer is Envoy's local rate limit before 1.31 (and 1.31 to 1.33 with the
// runtime guard envoy.reloadable_features.no_timer_based_rate_limit_token_bucket set to
// false; 1.34 removed it): TimerTokenBucket in
// source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc, checked
// against the 1.31 development line (016c0c80). A bucket holds whole tokens, starts with
// max_tokens, and a timer on the main thread adds tokens_per_fill, capped at max_tokens,
// every fill_interval from the moment the configuration was loaded; a request takes a
// token if one is left and is refused otherwise, consuming nothing. The model loads the
// configuration at a multiple of fill_interval on the Unix clock, so ticks fall at
// k·fill_interval; a request at a tick's instant sees its refill (Envoy leaves the order
// of the two to its event loop), and ticks are punctual (Envoy re-arms the timer after
// each, so its ticks drift late under load). It keeps 16 bytes per key.
//
// Where it parts from the token bucket: tokens come in steps. With tokens_per_fill=10
// per fill_interval=1s a drained bucket stays empty for the whole second and then gains
// ten at once, where the continuous bucket gains one every 100 ms; a client that waits
// for the tick gets max_tokens + tokens_per_fill in an instant across it.
//
// A request of cost c takes c tokens (Envoy's takes one), so cost 1 is the product
// exactly. A cost above max_tokens can never pass.
//
// Decisions: Remaining is the tokens left. RetryAfter of a refused request is the time
// until the tick that brings enough tokens; Reset the time until the tick that fills the
// bucket (zero when it is full).
//
// Time that goes backwards: a key's tick index only moves forward, so a request stamped
// before the key's latest tick is decided with the tokens the key holds, without a refill
// for ticks already counted. Its RetryAfter and Reset count from its own now.
type EnvoyLocalTimer struct {
	name               string
	maxTokens, perFill int64
	interval           int64 // fill_interval, ns
	index              windowIndex
	state              []envoyTimerState
}

type envoyTimerState struct {
	tick   int64 // the index of the latest tick the key has seen, ⌊t/fill_interval⌋; unseen for a new key
	tokens int64 // the tokens it holds after that tick
}

var (
	_ Limiter  = (*EnvoyLocalTimer)(nil)
	_ Admitter = (*EnvoyLocalTimer)(nil)
	_ Limiter  = (*envoyLocalContinuous)(nil)
)

// Name returns the spec, "envoy-local:… version=1.30".
func (e *EnvoyLocalTimer) Name() string { return e.name }

// Allow decides a request of the given cost for key at now.
func (e *EnvoyLocalTimer) Allow(key uint32, now int64, cost int64) Decision {
	s, ok := e.take(key, now, max(cost, 1))
	cost = max(cost, 1)
	d := Decision{Allowed: ok, Remaining: s.tokens, Reset: e.untilTokens(s, now, e.maxTokens)}
	if !ok {
		d.RetryAfter = Never
		if cost <= e.maxTokens {
			d.RetryAfter = e.untilTokens(s, now, cost)
		}
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (e *EnvoyLocalTimer) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	_, ok := e.take(key, now, max(cost, 1))
	return ok, 0
}

// take counts the ticks since the key's latest, then takes cost tokens if the bucket
// holds them.
func (e *EnvoyLocalTimer) take(key uint32, now, cost int64) (*envoyTimerState, bool) {
	if int(key) >= len(e.state) {
		e.state = grow(e.state, key, envoyTimerState{tick: unseen})
	}
	s := &e.state[key]
	if tick := e.index.of(now); s.tick == unseen {
		s.tick, s.tokens = tick, e.maxTokens
	} else if tick > s.tick {
		fills := tick - s.tick
		if fills >= (e.maxTokens+e.perFill-1)/e.perFill {
			s.tokens = e.maxTokens
		} else {
			s.tokens = min(s.tokens+fills*e.perFill, e.maxTokens)
		}
		s.tick = tick
	}
	if s.tokens < cost {
		return s, false
	}
	s.tokens -= cost
	return s, true
}

// untilTokens is the time from now until the tick after which s holds want tokens (<=
// max_tokens), zero if it holds them already.
func (e *EnvoyLocalTimer) untilTokens(s *envoyTimerState, now, want int64) time.Duration {
	if s.tokens >= want {
		return 0
	}
	ticks := (want - s.tokens + e.perFill - 1) / e.perFill
	if ticks > math.MaxInt64/e.interval-s.tick {
		return Never
	}
	return ahead((s.tick+ticks)*e.interval, now)
}

// Keys returns the number of keys held: the highest key decided plus one.
func (e *EnvoyLocalTimer) Keys() int { return len(e.state) }

// StateBytes returns 16 bytes per key held.
func (e *EnvoyLocalTimer) StateBytes() int64 {
	return int64(len(e.state)) * int64(unsafe.Sizeof(envoyTimerState{}))
}

// Reserve makes room for the state of keys keys (see Reserver).
func (e *EnvoyLocalTimer) Reserve(keys int) { e.state = reserve(e.state, keys) }
