package cmd

import (
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/traffic"
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
	precision       string
	errorMix        string
	retryAll        bool
	processes       int
	capacity        float64
	loadWindow      time.Duration
	shedRetryAfter  time.Duration
}

// serverFlags are the flags of the server models, each with the models it applies to: a
// flag set for another model is a usage error rather than silently ignored.
var serverFlags = map[string][]string{
	"retry-after-precision": {"rate-limited", "overload"},
	"error-mix":             {"rate-limited"},
	"retry-all-errors":      {"rate-limited", "overload"},
	"processes":             {"rate-limited", "overload"},
	"capacity":              {"overload"},
	"load-window":           {"overload"},
	"shed-retry-after":      {"overload"},
}

func (r *rateLimitedFlags) register(f *pflag.FlagSet) {
	d := backoff.DefaultRateLimited
	f.StringVar(&r.algorithm, "algorithm", d.Algorithm, "rate-limited: the API's algorithm")
	r.limit, r.window = d.Policy.Limit, d.Policy.Window
	f.Var(unitsValue{&r.limit}, "limit", "rate-limited: units per window")
	f.Var(windowValue{&r.window}, "window", "rate-limited: window")
	f.Var(unitsValue{&r.burst}, "burst", "rate-limited: bucket capacity (default: limit)")
	f.StringVar(&r.key, "key", "shared", "rate-limited: shared (the API's capacity) or client (a limit per client)")
	f.IntVar(&r.requests, "requests", d.Requests, "rate-limited, overload: requests in each client's job")
	f.DurationVar(&r.spread, "spread", 0, "rate-limited, overload: start the clients evenly over this long instead of all at once (overload: 10s unless set)")
	f.DurationVar(&r.hiccupStart, "hiccup-start", d.Hiccup.Start, "rate-limited: when the hiccup starts")
	f.DurationVar(&r.hiccup, "hiccup", d.Hiccup.Duration, "rate-limited: how long the hiccup lasts (0: none)")
	f.StringVar(&r.hiccupKind, "hiccup-kind", d.Hiccup.Kind, "rate-limited: 503 (refuse) or slow (answer late)")
	f.DurationVar(&r.slowBy, "slow-by", 2*time.Second, "rate-limited: extra reply time of a slow hiccup")
	f.DurationVar(&r.hiccupRetry, "hiccup-retry-after", 0, "rate-limited: Retry-After carried by the hiccup's 503s (0: none)")
	f.DurationVar(&r.timeout, "timeout", 0, "rate-limited, overload: client timeout per attempt (0: none)")
	f.BoolVar(&r.nonIdempotent, "non-idempotent", false, "rate-limited: the requests must not run twice (payments)")
	f.BoolVar(&r.idempotencyKeys, "idempotency-keys", false, "rate-limited: clients send an idempotency key per request")
	f.BoolVar(&r.retryAfterDate, "retry-after-date", false, "rate-limited: the server sends Retry-After as an HTTP-date")
	f.StringVar(&r.precision, "retry-after-precision", "s", "rate-limited, overload: s (Retry-After in whole seconds, rounded up) or ms (also Retry-After-Ms, which clients read first)")
	f.StringVar(&r.errorMix, "error-mix", "", "rate-limited: errors of admitted requests, CODE[/RETRY_AFTER]=SHARE,… e.g. 503=2%,503/1s=1%,400=1% (a 4xx marks a share of requests, a 5xx a share of attempts)")
	f.BoolVar(&r.retryAll, "retry-all-errors", false, "rate-limited, overload: clients also retry 4xx answers other than 429 (counted as retried_wrongly); needs --max-attempts or --deadline")
	f.IntVar(&r.processes, "processes", 0, "rate-limited, overload: client processes the clients are dealt to round-robin; policies keep one state per process (0: one process per client)")
	o := backoff.DefaultOverload
	f.Float64Var(&r.capacity, "capacity", o.Capacity, "overload: requests per second the backend serves; above it each attempt fails with probability 1 − capacity/load")
	f.DurationVar(&r.loadWindow, "load-window", o.Window, "overload: the span the backend measures its load over")
	f.DurationVar(&r.shedRetryAfter, "shed-retry-after", 0, "overload: Retry-After on the backend's 503s (0: none)")
}

// common checks the flags both server models share and applies them to retry.
func (r *rateLimitedFlags) common(o *backoffOptions, retry *traffic.Retry) (ms bool, err error) {
	switch {
	case r.precision != "s" && r.precision != "ms":
		return false, usagef("--retry-after-precision: want s or ms, got %q", r.precision)
	case r.processes < 0 || r.processes > maxClients:
		return false, usagef("--processes: must be between 0 and %d, got %d", maxClients, r.processes)
	case r.timeout < 0:
		return false, usagef("--timeout: must not be negative, got %s", r.timeout)
	case r.requests < 1 || r.requests > 1_000_000:
		return false, usagef("--requests: must be between 1 and 1000000, got %d", r.requests)
	case r.spread < 0:
		return false, usagef("--spread: must not be negative, got %s", r.spread)
	case r.retryAll && o.maxAttempts == 0 && o.deadline == 0:
		return false, usagef("--retry-all-errors: a client that retries a 400 retries it for ever; bound it with --max-attempts or --deadline")
	}
	retry.MaxAttempts, retry.Deadline, retry.Timeout = o.maxAttempts, o.deadline, r.timeout
	retry.HonorRetryAfter = o.retryAfter == "honor"
	retry.RetryAllErrors = r.retryAll
	return r.precision == "ms", nil
}

func (r *rateLimitedFlags) overload(o *backoffOptions) (backoff.Overload, error) {
	m := backoff.DefaultOverload
	ms, err := r.common(o, &m.Retry)
	if err != nil {
		return m, err
	}
	switch {
	case !(r.capacity > 0 && r.capacity <= 1e9):
		return m, usagef("--capacity: must be between 0 and 1e9 requests per second, got %g", r.capacity)
	case r.loadWindow <= 0:
		return m, usagef("--load-window: must be positive, got %s", r.loadWindow)
	case r.shedRetryAfter < 0:
		return m, usagef("--shed-retry-after: must not be negative, got %s", r.shedRetryAfter)
	}
	m.Capacity, m.Window, m.RetryAfter, m.RetryAfterMs = r.capacity, r.loadWindow, r.shedRetryAfter, ms
	m.Requests, m.Spread, m.Processes = r.requests, r.spread, r.processes
	m.Bin = o.bin
	return m, nil
}

func (r *rateLimitedFlags) model(o *backoffOptions) (backoff.RateLimited, error) {
	m := backoff.DefaultRateLimited
	spec, err := algorithms.Parse(r.algorithm)
	if err != nil {
		return m, usagef("--algorithm: %v", err)
	}
	m.Algorithm = spec.Text
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
	}
	ms, err := r.common(o, &m.Retry)
	if err != nil {
		return m, err
	}
	mix, err := backoff.ParseErrorMix(r.errorMix)
	if err != nil {
		return m, usagef("--error-mix: %v", err)
	}
	m.Errors, m.RetryAfterMs, m.Processes = mix, ms, r.processes
	m.PerClient = r.key == "client"
	m.Requests, m.Spread = r.requests, r.spread
	m.NonIdempotent = r.nonIdempotent
	m.Hiccup = backoff.Hiccup{Start: r.hiccupStart, Duration: r.hiccup, Kind: r.hiccupKind, SlowBy: r.slowBy, RetryAfter: r.hiccupRetry}
	m.Retry.IdempotencyKeys = r.idempotencyKeys
	m.RetryAfterDate = r.retryAfterDate
	m.Bin = o.bin
	return m, nil
}
