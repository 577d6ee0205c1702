package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/rlsim/rlsim/traffic"
)

// shareValue is a flag holding a share, written as a percentage ("20%") or a fraction
// ("0.2").
type shareValue float64

func (s *shareValue) String() string {
	return strconv.FormatFloat(float64(*s)*100, 'g', -1, 64) + "%"
}

func (s *shareValue) Set(v string) error {
	p, percent := strings.CutSuffix(strings.TrimSpace(v), "%")
	f, err := strconv.ParseFloat(p, 64)
	if err != nil {
		return fmt.Errorf("want a percentage (20%%) or a fraction (0.2), got %q", v)
	}
	if percent {
		f /= 100
	}
	*s = shareValue(f)
	return nil
}

func (s *shareValue) Type() string { return "share" }

// strategyFlags are the settings of the backoff shapes and policies a strategy names.
type strategyFlags struct {
	jitter        shareValue
	budgetRatio   shareValue
	budgetMin     float64
	budgetTTL     time.Duration
	throttleMax   int
	throttleRatio float64
	quota         traffic.QuotaConfig
	adaptive      traffic.AdaptiveConfig
	breakerWindow int
	breakerRatio  shareValue
	breakerOpen   time.Duration
	breakerProbes int
	sre           traffic.SREThrottleConfig
	r4j           traffic.Resilience4jConfig
	r4jRate       shareValue
}

// strategyFlagNames are the flags of strategyFlags, for telling which the user set.
var strategyFlagNames = []string{
	"jitter", "budget-ratio", "budget-min", "budget-ttl", "throttle-max-tokens", "throttle-token-ratio",
	"quota-capacity", "quota-retry-cost", "quota-timeout-cost", "quota-refill", "quota-max-attempts",
	"adaptive-beta", "adaptive-scale", "adaptive-min-rate",
	"breaker-window", "breaker-failure-ratio", "breaker-open-for", "breaker-probes",
	"sre-k", "sre-window",
	"r4j-failure-rate", "r4j-window", "r4j-min-calls", "r4j-wait", "r4j-half-open-calls",
}

func (s *strategyFlags) register(f *pflag.FlagSet) {
	s.jitter = traffic.DefaultJitter
	f.Var(&s.jitter, "jitter", "proportional-jitter: the sleep is the exponential one ± this share")
	b := traffic.DefaultBudget
	s.budgetRatio, s.budgetMin, s.budgetTTL = shareValue(b.Ratio), b.MinPerSecond, b.TTL
	f.Var(&s.budgetRatio, "budget-ratio", "retry-budget: retries allowed as a share of the process's requests in the last --budget-ttl")
	f.Float64Var(&s.budgetMin, "budget-min", b.MinPerSecond, "retry-budget: retries per second a process may always send")
	f.DurationVar(&s.budgetTTL, "budget-ttl", b.TTL, "retry-budget: the window requests and retries are counted over")
	t := traffic.DefaultThrottle
	f.IntVar(&s.throttleMax, "throttle-max-tokens", t.MaxTokens, "retry-throttle: tokens a process starts with; it retries while it holds more than half")
	f.Float64Var(&s.throttleRatio, "throttle-token-ratio", t.TokenRatio, "retry-throttle: tokens a success gives back (a failure takes 1)")
	q := traffic.DefaultQuota
	f.IntVar(&s.quota.Capacity, "quota-capacity", q.Capacity, "retry-quota: units a process holds")
	f.IntVar(&s.quota.RetryCost, "quota-retry-cost", q.RetryCost, "retry-quota: units a retry costs (refunded if it succeeds)")
	f.IntVar(&s.quota.TimeoutCost, "quota-timeout-cost", q.TimeoutCost, "retry-quota: units a retry after a timeout costs")
	f.IntVar(&s.quota.NoRetryIncrement, "quota-refill", q.NoRetryIncrement, "retry-quota: units a first-try success adds")
	f.IntVar(&s.quota.MaxAttempts, "quota-max-attempts", q.MaxAttempts, "retry-quota: attempts a request may make, the first included (the standard mode's max_attempts; 0: no bound)")
	a := traffic.DefaultAdaptive
	f.Float64Var(&s.adaptive.Beta, "adaptive-beta", a.Beta, "adaptive: a throttling answer cuts the send rate to this share")
	f.Float64Var(&s.adaptive.Scale, "adaptive-scale", a.Scale, "adaptive: scale of the cubic rate recovery")
	f.Float64Var(&s.adaptive.MinRate, "adaptive-min-rate", a.MinRate, "adaptive: lowest send rate, attempts per second")
	br := traffic.DefaultBreaker
	s.breakerRatio = shareValue(br.FailureRatio)
	f.IntVar(&s.breakerWindow, "breaker-window", br.Window, "circuit-breaker: recent outcomes judged")
	f.Var(&s.breakerRatio, "breaker-failure-ratio", "circuit-breaker: share of failures in a full window that opens it")
	f.DurationVar(&s.breakerOpen, "breaker-open-for", br.OpenFor, "circuit-breaker: how long it stays open before trials")
	f.IntVar(&s.breakerProbes, "breaker-probes", br.Probes, "circuit-breaker: trials half-open lets through, all needed to close")
	sre := traffic.DefaultSREThrottle
	f.Float64Var(&s.sre.K, "sre-k", sre.K, "sre-throttle: K, the attempts a process may send per accept before it refuses some itself")
	f.DurationVar(&s.sre.Window, "sre-window", sre.Window, "sre-throttle: the window requests and accepts are counted over")
	r := traffic.DefaultResilience4j
	s.r4jRate = shareValue(r.FailureRateThreshold / 100)
	f.Var(&s.r4jRate, "r4j-failure-rate", "resilience4j-breaker: failureRateThreshold, the failure rate that opens it")
	f.IntVar(&s.r4j.SlidingWindowSize, "r4j-window", r.SlidingWindowSize, "resilience4j-breaker: slidingWindowSize, the calls judged")
	f.IntVar(&s.r4j.MinimumNumberOfCalls, "r4j-min-calls", r.MinimumNumberOfCalls, "resilience4j-breaker: minimumNumberOfCalls before it judges")
	f.DurationVar(&s.r4j.WaitDurationInOpenState, "r4j-wait", r.WaitDurationInOpenState, "resilience4j-breaker: waitDurationInOpenState")
	f.IntVar(&s.r4j.PermittedNumberOfCallsInHalfOpenState, "r4j-half-open-calls", r.PermittedNumberOfCallsInHalfOpenState, "resilience4j-breaker: permittedNumberOfCallsInHalfOpenState")
}

// config is the flags as a traffic.StrategyConfig; a bad setting is a usage error naming
// its flag.
func (s *strategyFlags) config(base, cap time.Duration) (traffic.StrategyConfig, error) {
	c := traffic.DefaultStrategyConfig(base, cap)
	c.Jitter = float64(s.jitter)
	c.Budget = traffic.BudgetConfig{Ratio: float64(s.budgetRatio), MinPerSecond: s.budgetMin, TTL: s.budgetTTL}
	c.Throttle = traffic.ThrottleConfig{MaxTokens: s.throttleMax, TokenRatio: s.throttleRatio}
	c.Quota = s.quota
	c.Adaptive = s.adaptive
	c.Breaker = traffic.BreakerConfig{Window: s.breakerWindow, FailureRatio: float64(s.breakerRatio), OpenFor: s.breakerOpen, Probes: s.breakerProbes}
	c.SRE = s.sre
	c.R4j = s.r4j
	c.R4j.FailureRateThreshold = float64(s.r4jRate) * 100
	if !(c.Jitter >= 0 && c.Jitter <= 1) {
		return c, usagef("--jitter: must be between 0%% and 100%%, got %s", s.jitter.String())
	}
	if err := c.Validate(); err != nil {
		return c, usagef("--%v", err)
	}
	return c, nil
}
