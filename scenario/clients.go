package scenario

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/traffic"
)

// ClientsSpec is the clients section: closed-loop clients that retry refused or failed
// requests, run against each of the scenario's algorithms with each strategy. Every client
// has one job of Requests requests; all start at Start, or evenly over Spread.
//
//	clients:
//	  count: 1000
//	  strategies: [exponential, full-jitter, exponential+retry-budget]
//	  base: 500ms
//	  cap: 30s
//	  retry_after: honor          # or ignore
//	  hiccup: {start: 0s, duration: 500ms, kind: "503"}
//
// With server: overload the clients meet a backend of finite capacity instead of a
// limiter: the scenario's policy is that capacity (limit per window, the load measured
// over the window) and no algorithm runs.
type ClientsSpec struct {
	Count    int      `yaml:"count"`
	Start    Offset   `yaml:"start"`
	Spread   Duration `yaml:"spread"`
	Requests int      `yaml:"requests"`
	// Key is "shared" (one key for all clients: the API's capacity) or "client" (a limit
	// per client).
	Key        string   `yaml:"key"`
	Strategies []string `yaml:"strategies"`
	Base       Duration `yaml:"base"`
	Cap        Duration `yaml:"cap"`
	// MaxAttempts bounds the tries of a request (0: none); Deadline bounds a job (0: none);
	// Timeout is how long a client waits for an answer (0: for ever).
	MaxAttempts int      `yaml:"max_attempts"`
	Deadline    Duration `yaml:"deadline"`
	Timeout     Duration `yaml:"timeout"`
	// RetryAfter is honor (wait max(backoff, Retry-After)) or ignore.
	RetryAfter string `yaml:"retry_after"`
	// RetryAfterForm is how the server writes Retry-After: seconds or date.
	RetryAfterForm  string      `yaml:"retry_after_form"`
	NonIdempotent   bool        `yaml:"non_idempotent"`
	IdempotencyKeys bool        `yaml:"idempotency_keys"`
	Hiccup          *HiccupSpec `yaml:"hiccup"`
	// Bin is the width of the arrival bins (default 10ms); Runs the seeded runs averaged
	// per algorithm and strategy (default 5).
	Bin  Duration `yaml:"bin"`
	Runs int      `yaml:"runs"`
	// Server is rate-limited (the scenario's algorithms guard the API; the default) or
	// overload (a backend of the policy's capacity, no limiter).
	Server string `yaml:"server"`
	// ShedRetryAfter is the Retry-After of an overloaded backend's 503s (0: none).
	ShedRetryAfter Duration `yaml:"shed_retry_after"`
	// RetryAfterPrecision is s (whole seconds) or ms (Retry-After-Ms too).
	RetryAfterPrecision string `yaml:"retry_after_precision"`
	// ErrorMix is the API's errors, as --error-mix writes them ("503=2%,400=1%").
	ErrorMix string `yaml:"error_mix"`
	// RetryAllErrors makes clients retry 4xx answers too (retried_wrongly).
	RetryAllErrors bool `yaml:"retry_all_errors"`
	// Processes is the number of client processes the policies keep state per (0: one
	// per client).
	Processes int `yaml:"processes"`
	// Jitter is proportional-jitter's share (default 0.2).
	Jitter *float64 `yaml:"jitter"`
	// The policies' settings; a strategy names the policies it uses.
	RetryBudget    *BudgetSpec        `yaml:"retry_budget"`
	RetryThrottle  *ThrottleSpec      `yaml:"retry_throttle"`
	RetryQuota     *QuotaSpec         `yaml:"retry_quota"`
	Adaptive       *AdaptiveSpec      `yaml:"adaptive"`
	CircuitBreaker *ClientBreakerSpec `yaml:"circuit_breaker"`
	SREThrottle    *SREThrottleSpec   `yaml:"sre_throttle"`
	Resilience4j   *Resilience4jSpec  `yaml:"resilience4j_breaker"`
}

// BudgetSpec sets the retry budget; an unset field keeps its default.
type BudgetSpec struct {
	Ratio        *float64 `yaml:"ratio"`
	MinPerSecond *float64 `yaml:"min_per_second"`
	TTL          Duration `yaml:"ttl"`
}

// ThrottleSpec sets gRPC-style retry throttling.
type ThrottleSpec struct {
	MaxTokens  int     `yaml:"max_tokens"`
	TokenRatio float64 `yaml:"token_ratio"`
}

// QuotaSpec sets the AWS-style retry quota; MaxAttempts is the standard mode's
// max_attempts (default 3, 0: no bound).
type QuotaSpec struct {
	Capacity    int  `yaml:"capacity"`
	RetryCost   *int `yaml:"retry_cost"`
	TimeoutCost *int `yaml:"timeout_cost"`
	Refill      *int `yaml:"refill"`
	MaxAttempts *int `yaml:"max_attempts"`
}

// SREThrottleSpec sets the SRE book's client-side adaptive throttling: K and the window
// requests and accepts are counted over.
type SREThrottleSpec struct {
	K      float64  `yaml:"k"`
	Window Duration `yaml:"window"`
}

// Resilience4jSpec sets the resilience4j-style breaker, in resilience4j's own names
// (failure_rate_threshold in percent).
type Resilience4jSpec struct {
	FailureRateThreshold                  float64  `yaml:"failure_rate_threshold"`
	SlidingWindowSize                     int      `yaml:"sliding_window_size"`
	MinimumNumberOfCalls                  int      `yaml:"minimum_number_of_calls"`
	WaitDurationInOpenState               Duration `yaml:"wait_duration_in_open_state"`
	PermittedNumberOfCallsInHalfOpenState int      `yaml:"permitted_number_of_calls_in_half_open_state"`
}

// AdaptiveSpec sets the AWS-style adaptive rate limiter.
type AdaptiveSpec struct {
	Beta    float64 `yaml:"beta"`
	Scale   float64 `yaml:"scale"`
	MinRate float64 `yaml:"min_rate"`
}

// ClientBreakerSpec sets the clients' circuit breaker.
type ClientBreakerSpec struct {
	Window       int      `yaml:"window"`
	FailureRatio float64  `yaml:"failure_ratio"`
	OpenFor      Duration `yaml:"open_for"`
	Probes       int      `yaml:"probes"`
}

// DefaultClientsBin is the width of a clients section's arrival bins unless it sets bin.
const DefaultClientsBin = 10 * time.Millisecond

// defaults fills in what the clients section leaves out.
func (c *ClientsSpec) defaults() {
	if c.Base == 0 {
		c.Base = Duration(500 * time.Millisecond)
	}
	if c.Cap == 0 {
		c.Cap = Duration(max(30*time.Second, time.Duration(c.Base)))
	}
	if c.Requests == 0 {
		c.Requests = 1
	}
	if len(c.Strategies) == 0 {
		c.Strategies = []string{"exponential", "full-jitter"}
	}
	if c.Runs == 0 {
		c.Runs = 5
	}
	if c.Bin == 0 {
		c.Bin = Duration(DefaultClientsBin)
	}
	c.Key = orDefault(c.Key, "shared")
	c.Server = orDefault(c.Server, "rate-limited")
	c.RetryAfter = orDefault(c.RetryAfter, "honor")
	c.RetryAfterForm = orDefault(c.RetryAfterForm, "seconds")
	c.RetryAfterPrecision = orDefault(c.RetryAfterPrecision, "s")
	if c.Hiccup != nil {
		c.Hiccup.Kind = orDefault(c.Hiccup.Kind, "503")
	}
}

// StrategyConfig is the section's backoff shapes and retry policies settings: the
// library's defaults, with what the section sets.
func (c *ClientsSpec) StrategyConfig() traffic.StrategyConfig {
	cfg := traffic.DefaultStrategyConfig(time.Duration(c.Base), time.Duration(c.Cap))
	if c.Jitter != nil {
		cfg.Jitter = *c.Jitter
	}
	if b := c.RetryBudget; b != nil {
		if b.Ratio != nil {
			cfg.Budget.Ratio = *b.Ratio
		}
		if b.MinPerSecond != nil {
			cfg.Budget.MinPerSecond = *b.MinPerSecond
		}
		if b.TTL != 0 {
			cfg.Budget.TTL = time.Duration(b.TTL)
		}
	}
	if t := c.RetryThrottle; t != nil {
		if t.MaxTokens != 0 {
			cfg.Throttle.MaxTokens = t.MaxTokens
		}
		if t.TokenRatio != 0 {
			cfg.Throttle.TokenRatio = t.TokenRatio
		}
	}
	if q := c.RetryQuota; q != nil {
		if q.Capacity != 0 {
			cfg.Quota.Capacity = q.Capacity
		}
		if q.RetryCost != nil {
			cfg.Quota.RetryCost = *q.RetryCost
		}
		if q.TimeoutCost != nil {
			cfg.Quota.TimeoutCost = *q.TimeoutCost
		}
		if q.Refill != nil {
			cfg.Quota.NoRetryIncrement = *q.Refill
		}
		if q.MaxAttempts != nil {
			cfg.Quota.MaxAttempts = *q.MaxAttempts
		}
	}
	if a := c.Adaptive; a != nil {
		if a.Beta != 0 {
			cfg.Adaptive.Beta = a.Beta
		}
		if a.Scale != 0 {
			cfg.Adaptive.Scale = a.Scale
		}
		if a.MinRate != 0 {
			cfg.Adaptive.MinRate = a.MinRate
		}
	}
	if b := c.CircuitBreaker; b != nil {
		if b.Window != 0 {
			cfg.Breaker.Window = b.Window
		}
		if b.FailureRatio != 0 {
			cfg.Breaker.FailureRatio = b.FailureRatio
		}
		if b.OpenFor != 0 {
			cfg.Breaker.OpenFor = time.Duration(b.OpenFor)
		}
		if b.Probes != 0 {
			cfg.Breaker.Probes = b.Probes
		}
	}
	if t := c.SREThrottle; t != nil {
		if t.K != 0 {
			cfg.SRE.K = t.K
		}
		if t.Window != 0 {
			cfg.SRE.Window = time.Duration(t.Window)
		}
	}
	if r := c.Resilience4j; r != nil {
		if r.FailureRateThreshold != 0 {
			cfg.R4j.FailureRateThreshold = r.FailureRateThreshold
		}
		if r.SlidingWindowSize != 0 {
			cfg.R4j.SlidingWindowSize = r.SlidingWindowSize
		}
		if r.MinimumNumberOfCalls != 0 {
			cfg.R4j.MinimumNumberOfCalls = r.MinimumNumberOfCalls
		}
		if r.WaitDurationInOpenState != 0 {
			cfg.R4j.WaitDurationInOpenState = time.Duration(r.WaitDurationInOpenState)
		}
		if r.PermittedNumberOfCallsInHalfOpenState != 0 {
			cfg.R4j.PermittedNumberOfCallsInHalfOpenState = r.PermittedNumberOfCallsInHalfOpenState
		}
	}
	return cfg
}

// policyFields maps the settings' names in Validate's errors to the section's fields.
var policyFields = map[string]string{
	"budget-ratio": "retry_budget.ratio", "budget-min": "retry_budget.min_per_second", "budget-ttl": "retry_budget.ttl",
	"throttle-max-tokens": "retry_throttle.max_tokens", "throttle-token-ratio": "retry_throttle.token_ratio",
	"quota-capacity": "retry_quota.capacity", "quota-retry-cost": "retry_quota.retry_cost",
	"quota-timeout-cost": "retry_quota.timeout_cost", "quota-refill": "retry_quota.refill", "quota-max-attempts": "retry_quota.max_attempts",
	"adaptive-beta": "adaptive.beta", "adaptive-scale": "adaptive.scale", "adaptive-min-rate": "adaptive.min_rate",
	"breaker-window": "circuit_breaker.window", "breaker-failure-ratio": "circuit_breaker.failure_ratio",
	"breaker-open-for": "circuit_breaker.open_for", "breaker-probes": "circuit_breaker.probes",
	"sre-k": "sre_throttle.k", "sre-window": "sre_throttle.window",
	"r4j-failure-rate": "resilience4j_breaker.failure_rate_threshold", "r4j-window": "resilience4j_breaker.sliding_window_size",
	"r4j-min-calls": "resilience4j_breaker.minimum_number_of_calls", "r4j-wait": "resilience4j_breaker.wait_duration_in_open_state",
	"r4j-half-open-calls": "resilience4j_breaker.permitted_number_of_calls_in_half_open_state",
}

// HiccupSpec is a window in which the API wobbles: kind "503" (down: every request fails)
// or "slow" (answers SlowBy late).
type HiccupSpec struct {
	Start      Offset   `yaml:"start"`
	Duration   Duration `yaml:"duration"`
	Kind       string   `yaml:"kind"`
	SlowBy     Duration `yaml:"slow_by"`
	RetryAfter Duration `yaml:"retry_after"`
}

// maxScenarioClients bounds a clients section so a typo cannot ask for a billion.
const maxScenarioClients = 1_000_000

func (s *Scenario) validateClients(file string, epoch time.Time) error {
	c := s.Clients
	const f = "clients"
	if c.Count < 1 || c.Count > maxScenarioClients {
		return s.fail(file, f+".count", "must be between 1 and %d, got %d", maxScenarioClients, c.Count)
	}
	if c.Start.Resolve(epoch) < 0 {
		return s.fail(file, f+".start", "is before the scenario's start")
	}
	if c.Spread < 0 {
		return s.fail(file, f+".spread", "must not be negative")
	}
	if c.Requests < 0 || c.Requests > 1_000_000 {
		return s.fail(file, f+".requests", "must be between 1 and 1000000, got %d", c.Requests)
	}
	switch c.Key {
	case "", "shared", "client":
	default:
		return s.fail(file, f+".key", "want shared or client, got %q", c.Key)
	}
	switch c.Server {
	case "", "rate-limited":
	case "overload":
		if len(s.Traffic) > 0 {
			return s.fail(file, f+".server", "overload is a clients-only scenario: its policy is the backend's capacity, so it takes no traffic")
		}
		if len(s.Algorithms) > 0 {
			return s.fail(file, "algorithms", "a clients section with server: overload runs no limiter; leave algorithms out")
		}
		if len(s.Limits) > 0 {
			return s.fail(file, "limits", "a clients section with server: overload runs no limiter; leave limits out")
		}
		if c.Hiccup != nil {
			return s.fail(file, f+".hiccup", "belongs to server: rate-limited; an overloaded backend fails by its own load")
		}
		if c.ErrorMix != "" {
			return s.fail(file, f+".error_mix", "belongs to server: rate-limited")
		}
	default:
		return s.fail(file, f+".server", "want rate-limited or overload, got %q", c.Server)
	}
	if c.ShedRetryAfter < 0 {
		return s.fail(file, f+".shed_retry_after", "must not be negative")
	}
	if c.ShedRetryAfter > 0 && c.Server != "overload" {
		return s.fail(file, f+".shed_retry_after", "belongs to server: overload")
	}
	switch c.RetryAfterPrecision {
	case "", "s", "ms":
	default:
		return s.fail(file, f+".retry_after_precision", "want s or ms, got %q", c.RetryAfterPrecision)
	}
	if _, err := backoff.ParseErrorMix(c.ErrorMix); err != nil {
		return s.fail(file, f+".error_mix", "%v", err)
	}
	if c.RetryAllErrors && c.MaxAttempts == 0 && c.Deadline == 0 {
		return s.fail(file, f+".retry_all_errors", "a client that retries a 400 retries it for ever; set max_attempts or deadline")
	}
	if c.Processes < 0 || c.Processes > maxScenarioClients {
		return s.fail(file, f+".processes", "must be between 0 and %d, got %d", maxScenarioClients, c.Processes)
	}
	if c.Base < 0 {
		return s.fail(file, f+".base", "must be positive")
	}
	if c.Cap < c.Base {
		return s.fail(file, f+".cap", "must be at least the base %s", time.Duration(c.Base))
	}
	cfg := c.StrategyConfig()
	if !(cfg.Jitter >= 0 && cfg.Jitter <= 1) {
		return s.fail(file, f+".jitter", "must be between 0 and 1, got %g", cfg.Jitter)
	}
	if err := cfg.Validate(); err != nil {
		name, msg, _ := strings.Cut(err.Error(), ": ")
		return s.fail(file, f+"."+policyFields[name], "%s", msg)
	}
	seen := map[string]bool{}
	for i, name := range c.Strategies {
		field := fmt.Sprintf("%s.strategies[%d]", f, i)
		st, err := traffic.ParseStrategy(name, cfg)
		if err != nil {
			return s.fail(file, field, "%v", err)
		}
		if seen[st.Name()] {
			return s.fail(file, field, "%s is listed twice", st.Name())
		}
		seen[st.Name()] = true
	}
	if c.MaxAttempts < 0 {
		return s.fail(file, f+".max_attempts", "must not be negative, got %d", c.MaxAttempts)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"deadline", c.Deadline}, {"timeout", c.Timeout}, {"bin", c.Bin}} {
		if d.v < 0 {
			return s.fail(file, f+"."+d.name, "must not be negative")
		}
	}
	switch c.RetryAfter {
	case "", "honor", "ignore":
	default:
		return s.fail(file, f+".retry_after", "want honor or ignore, got %q", c.RetryAfter)
	}
	switch c.RetryAfterForm {
	case "", "seconds", "date":
	default:
		return s.fail(file, f+".retry_after_form", "want seconds or date, got %q", c.RetryAfterForm)
	}
	if c.Runs < 0 || c.Runs > 10000 {
		return s.fail(file, f+".runs", "must be between 1 and 10000, got %d", c.Runs)
	}
	if h := c.Hiccup; h != nil {
		if h.Start.Resolve(epoch) < 0 {
			return s.fail(file, f+".hiccup.start", "is before the scenario's start")
		}
		if h.Duration <= 0 {
			return s.fail(file, f+".hiccup.duration", "must be positive")
		}
		switch h.Kind {
		case "", "503", "slow":
		default:
			return s.fail(file, f+".hiccup.kind", "want 503 or slow, got %q", h.Kind)
		}
		if h.SlowBy < 0 {
			return s.fail(file, f+".hiccup.slow_by", "must not be negative")
		}
		if h.RetryAfter < 0 {
			return s.fail(file, f+".hiccup.retry_after", "must not be negative")
		}
	}
	return nil
}
