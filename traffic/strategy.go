package traffic

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/response"
)

// Outcome is how one attempt ended, as its client sees it.
type Outcome uint8

// The outcomes. A zero Outcome is "none": the cause of a request's first try.
const (
	// Succeeded is a 2xx.
	Succeeded Outcome = iota + 1
	// Throttled is the server asking the client to slow down: a 429, or a 503 that names
	// a time to come back (Retry-After or Retry-After-Ms).
	Throttled
	// ServerError is any other 5xx: the server failed, transiently.
	ServerError
	// TimedOut is an attempt the client stopped waiting for.
	TimedOut
	// ClientError is any other answer (400, 404, 409, 413…): the request itself is at
	// fault and a retry cannot help.
	ClientError
)

var outcomeNames = [...]string{"none", "succeeded", "throttled", "server-error", "timed-out", "client-error"}

// String names the outcome ("throttled").
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// Retryable reports whether a request that ended so may be retried at all: throttling,
// server errors and timeouts; not success, and not a client error.
func (o Outcome) Retryable() bool { return o == Throttled || o == ServerError || o == TimedOut }

// Classify names the outcome of a response (timedOut: the client stopped waiting, r is
// unused).
func Classify(r response.Response, timedOut bool) Outcome {
	switch s := r.Status; {
	case timedOut:
		return TimedOut
	case s >= 200 && s < 300:
		return Succeeded
	case s == http.StatusTooManyRequests:
		return Throttled
	case s == http.StatusServiceUnavailable && r.Header != nil &&
		(r.Header.Get("Retry-After") != "" || r.Header.Get(response.RetryAfterMsHeader) != ""):
		return Throttled
	case s >= 500:
		return ServerError
	}
	return ClientError
}

// Policy is the state one client process keeps to decide whether its clients' attempts
// may be sent at all; the backoff shape then decides when. A client asks every policy of
// its strategy, in order, at three moments: before each attempt leaves (Send), when a
// failed request would be retried (Retry), and when an attempt's answer or timeout comes
// back (Observe). Time is the run's virtual time; a policy reads no clock, and draws
// random numbers only from the run's RNG, handed to it as a Drawing.
type Policy interface {
	// Send is asked before an attempt leaves at now; first is set for a request's first
	// try. It returns how long the attempt must wait before it leaves (0: at once), or ok
	// false to withhold it: the client then gives the request up without sending.
	Send(now time.Duration, first bool) (wait time.Duration, ok bool)
	// Retry is asked at now when a request failed with o (a retryable outcome) and the
	// client would retry it; false withholds the retry and the client gives the request up.
	Retry(now time.Duration, o Outcome) bool
	// Observe reports how an attempt ended at now: o, and cause, the outcome that made the
	// attempt a retry (zero for a request's first try).
	Observe(now time.Duration, o Outcome, cause Outcome)
}

// Pacer is a policy that makes attempts wait (adaptive). When its Send returns a wait,
// the client asks Resume, not Send, when the wait ends, and goes on to the next policy
// once Resume returns 0; a client that stops waiting (its deadline) calls Cancel. A policy
// that returns a wait and is not a Pacer is not asked again.
type Pacer interface {
	// Resume is asked at now, at the end of a wait: another wait, or 0 to go.
	Resume(now time.Duration) time.Duration
	// Cancel tells the policy that an attempt it made wait will not come back.
	Cancel()
}

// Drawing is a policy that draws random numbers (sre-throttle): the client population
// hands it the run's RNG when it makes the policy's state.
type Drawing interface {
	UseRNG(r *rand.Rand)
}

// AttemptLimiter is a policy that bounds the attempts of each request, the first
// included (the AWS standard mode's max_attempts, with retry-quota): a request whose
// attempts reached the limit is given up, as at Retry.MaxAttempts, before any policy is
// asked for a retry. A limit of 0 bounds nothing.
type AttemptLimiter interface {
	AttemptLimit() int
}

// PolicyMaker is a policy's settings: it names the policy and makes fresh state for one
// client process.
type PolicyMaker interface {
	// Name is the policy's name on the command line ("retry-budget").
	Name() string
	// New returns the state of one client process, as at the start of a run.
	New() Policy
}

// PolicyNames lists the policies a strategy may add to a backoff shape.
var PolicyNames = []string{"retry-budget", "retry-throttle", "retry-quota", "adaptive", "circuit-breaker", "sre-throttle", "resilience4j-breaker"}

// Strategy is how a client retries: a backoff shape that chooses each sleep, and policies
// that decide whether (and, for adaptive, when) an attempt may be sent at all.
type Strategy struct {
	Backoff  Backoff
	Policies []PolicyMaker
}

// Name is the strategy's full name: the shape, then "+policy" for each policy
// ("full-jitter+retry-budget").
func (s Strategy) Name() string {
	var b strings.Builder
	b.WriteString(s.Backoff.Name())
	for _, p := range s.Policies {
		b.WriteString("+" + p.Name())
	}
	return b.String()
}

// Plain returns the strategy of a backoff shape alone.
func Plain(b Backoff) Strategy { return Strategy{Backoff: b} }

// StrategyConfig holds the settings of every shape and policy; a strategy's name picks
// which of them it uses.
type StrategyConfig struct {
	Base, Cap time.Duration
	// Jitter is proportional-jitter's J.
	Jitter   float64
	Budget   BudgetConfig
	Throttle ThrottleConfig
	Quota    QuotaConfig
	Adaptive AdaptiveConfig
	Breaker  BreakerConfig
	SRE      SREThrottleConfig
	R4j      Resilience4jConfig
}

// DefaultStrategyConfig is every policy at the defaults of the system it comes from.
func DefaultStrategyConfig(base, cap time.Duration) StrategyConfig {
	return StrategyConfig{
		Base: base, Cap: cap, Jitter: DefaultJitter,
		Budget: DefaultBudget, Throttle: DefaultThrottle, Quota: DefaultQuota, Adaptive: DefaultAdaptive, Breaker: DefaultBreaker,
		SRE: DefaultSREThrottle, R4j: DefaultResilience4j,
	}
}

// BareShape is the shape a strategy named by policies alone uses ("retry-budget" is
// "full-jitter+retry-budget"): full jitter, the shape AWS recommends and its SDKs use.
const BareShape = "full-jitter"

// ParseStrategy reads a strategy name: a backoff shape followed by zero or more
// "+policy" ("exponential+retry-quota+adaptive"), or policies alone, which mean BareShape
// plus those policies. A policy may appear once.
func ParseStrategy(name string, cfg StrategyConfig) (Strategy, error) {
	parts := strings.Split(strings.TrimSpace(name), "+")
	shape := parts[0]
	policies := parts[1:]
	if slices.Contains(PolicyNames, shape) {
		shape, policies = BareShape, parts
	}
	if !slices.Contains(ShapeNames, shape) {
		return Strategy{}, fmt.Errorf("strategy %q: unknown backoff shape or policy %q (shapes: %s; policies: %s)",
			name, shape, strings.Join(ShapeNames, ", "), strings.Join(PolicyNames, ", "))
	}
	b, err := NewShape(shape, cfg.Base, cfg.Cap, cfg.Jitter)
	if err != nil {
		return Strategy{}, fmt.Errorf("strategy %q: %w", name, err)
	}
	s := Strategy{Backoff: b}
	for i, p := range policies {
		if slices.Contains(policies[:i], p) {
			return Strategy{}, fmt.Errorf("strategy %q: policy %q appears twice", name, p)
		}
		var m PolicyMaker
		switch p {
		case "retry-budget":
			m = cfg.Budget
		case "retry-throttle":
			m = cfg.Throttle
		case "retry-quota":
			m = cfg.Quota
		case "adaptive":
			m = cfg.Adaptive
		case "circuit-breaker":
			m = cfg.Breaker
		case "sre-throttle":
			m = cfg.SRE
		case "resilience4j-breaker":
			m = cfg.R4j
		default:
			return Strategy{}, fmt.Errorf("strategy %q: unknown policy %q (want one of %s; a shape comes first)", name, p, strings.Join(PolicyNames, ", "))
		}
		s.Policies = append(s.Policies, m)
	}
	return s, nil
}

// Validate reports settings a policy cannot run with, naming the setting as the
// command line does ("budget-ratio").
func (c StrategyConfig) Validate() error {
	for _, err := range []error{c.Budget.validate(), c.Throttle.validate(), c.Quota.validate(), c.Adaptive.validate(), c.Breaker.validate(), c.SRE.validate(), c.R4j.validate()} {
		if err != nil {
			return err
		}
	}
	return nil
}
