package cmd

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/backoff"
)

// rateLimitedFlags set up the rate-limited model of `rlsim backoff`.
type rateLimitedFlags struct {
	algorithm       string
	limit           int64
	window          time.Duration
	burst           int64
	key             string
	requests        int
	spread          time.Duration
	hiccupStart     time.Duration
	hiccup          time.Duration
	hiccupKind      string
	slowBy          time.Duration
	hiccupRetry     time.Duration
	timeout         time.Duration
	nonIdempotent   bool
	idempotencyKeys bool
	retryAfterDate  bool
}

func (r *rateLimitedFlags) register(f *pflag.FlagSet) {
	d := backoff.DefaultRateLimited
	f.StringVar(&r.algorithm, "algorithm", d.Algorithm, "rate-limited: the API's algorithm")
	f.Int64Var(&r.limit, "limit", d.Policy.Limit, "rate-limited: units per window")
	f.DurationVar(&r.window, "window", d.Policy.Window, "rate-limited: window")
	f.Int64Var(&r.burst, "burst", 0, "rate-limited: bucket capacity (default: limit)")
	f.StringVar(&r.key, "key", "shared", "rate-limited: shared (the API's capacity) or client (a limit per client)")
	f.IntVar(&r.requests, "requests", d.Requests, "rate-limited: requests in each client's job")
	f.DurationVar(&r.spread, "spread", 0, "rate-limited: start the clients evenly over this long instead of all at once")
	f.DurationVar(&r.hiccupStart, "hiccup-start", d.Hiccup.Start, "rate-limited: when the hiccup starts")
	f.DurationVar(&r.hiccup, "hiccup", d.Hiccup.Duration, "rate-limited: how long the hiccup lasts (0: none)")
	f.StringVar(&r.hiccupKind, "hiccup-kind", d.Hiccup.Kind, "rate-limited: 503 (refuse) or slow (answer late)")
	f.DurationVar(&r.slowBy, "slow-by", 2*time.Second, "rate-limited: extra reply time of a slow hiccup")
	f.DurationVar(&r.hiccupRetry, "hiccup-retry-after", 0, "rate-limited: Retry-After carried by the hiccup's 503s (0: none)")
	f.DurationVar(&r.timeout, "timeout", 0, "rate-limited: client timeout per attempt (0: none)")
	f.BoolVar(&r.nonIdempotent, "non-idempotent", false, "rate-limited: the requests must not run twice (payments)")
	f.BoolVar(&r.idempotencyKeys, "idempotency-keys", false, "rate-limited: clients send an idempotency key per request")
	f.BoolVar(&r.retryAfterDate, "retry-after-date", false, "rate-limited: the server sends Retry-After as an HTTP-date")
}

func (r *rateLimitedFlags) model(o *backoffOptions) (backoff.RateLimited, error) {
	m := backoff.DefaultRateLimited
	if !slices.Contains(algorithms.Names, r.algorithm) {
		return m, usagef("--algorithm: unknown algorithm %q (want %s)", r.algorithm, strings.Join(algorithms.Names, ", "))
	}
	m.Algorithm = r.algorithm
	m.Policy = algorithms.Policy{Limit: r.limit, Window: r.window, Burst: r.burst}
	switch {
	case r.limit <= 0:
		return m, usagef("--limit: must be positive, got %d", r.limit)
	case r.window <= 0:
		return m, usagef("--window: must be positive, got %s", r.window)
	case r.burst < 0:
		return m, usagef("--burst: must not be negative, got %d", r.burst)
	case r.key != "shared" && r.key != "client":
		return m, usagef("--key: want shared or client, got %q", r.key)
	case r.requests < 1 || r.requests > 1_000_000:
		return m, usagef("--requests: must be between 1 and 1000000, got %d", r.requests)
	case r.spread < 0:
		return m, usagef("--spread: must not be negative, got %s", r.spread)
	case r.hiccupStart < 0:
		return m, usagef("--hiccup-start: must not be negative, got %s", r.hiccupStart)
	case r.hiccup < 0:
		return m, usagef("--hiccup: must not be negative, got %s", r.hiccup)
	case !slices.Contains(backoff.HiccupKinds, r.hiccupKind):
		return m, usagef("--hiccup-kind: want 503 or slow, got %q", r.hiccupKind)
	case r.slowBy < 0:
		return m, usagef("--slow-by: must not be negative, got %s", r.slowBy)
	case r.hiccupRetry < 0:
		return m, usagef("--hiccup-retry-after: must not be negative, got %s", r.hiccupRetry)
	case r.timeout < 0:
		return m, usagef("--timeout: must not be negative, got %s", r.timeout)
	}
	m.PerClient = r.key == "client"
	m.Requests, m.Spread = r.requests, r.spread
	m.NonIdempotent = r.nonIdempotent
	m.Hiccup = backoff.Hiccup{Start: r.hiccupStart, Duration: r.hiccup, Kind: r.hiccupKind, SlowBy: r.slowBy, RetryAfter: r.hiccupRetry}
	m.Retry.MaxAttempts, m.Retry.Deadline, m.Retry.Timeout = o.maxAttempts, o.deadline, r.timeout
	m.Retry.HonorRetryAfter = o.retryAfter == "honor"
	m.Retry.IdempotencyKeys = r.idempotencyKeys
	m.RetryAfterDate = r.retryAfterDate
	m.Bin = o.bin
	return m, nil
}
