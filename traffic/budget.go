package traffic

import (
	"fmt"
	"math"
	"time"
)

// BudgetConfig is a retry budget, after Finagle's RetryBudget and Envoy's retry_budget:
// over a trailing window of TTL, a client process may send at most
// max(Ratio × its requests, MinPerSecond × TTL) retries, where requests are first tries.
// Ratio bounds the extra load retries add when many requests fail; the minimum lets a
// process with little traffic still retry. The window is kept as 10 slices (Finagle's
// choice), so memory does not grow with traffic.
type BudgetConfig struct {
	// Ratio is the share of recent requests that may be retried (0.2: 20%).
	Ratio float64
	// MinPerSecond is the floor of the budget, in retries per second of TTL.
	MinPerSecond float64
	// TTL is the window over which requests and retries are counted.
	TTL time.Duration
}

// DefaultBudget is Finagle's default: 20% of requests over 10 s, at least 10 retries a
// second (Envoy also defaults to 20%).
var DefaultBudget = BudgetConfig{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second}

// Name returns "retry-budget".
func (BudgetConfig) Name() string { return "retry-budget" }

// New returns an empty budget.
func (c BudgetConfig) New() Policy {
	return &RetryBudget{cfg: c, requests: NewSliceCount(c.TTL, budgetSlices), retries: NewSliceCount(c.TTL, budgetSlices)}
}

const budgetSlices = 10

func (c BudgetConfig) validate() error {
	switch {
	case !(c.Ratio >= 0 && c.Ratio <= 100):
		return fmt.Errorf("budget-ratio: must be between 0 and 100 (0%%–10000%%), got %g", c.Ratio)
	case !(c.MinPerSecond >= 0 && c.MinPerSecond <= 1e9):
		return fmt.Errorf("budget-min: must be between 0 and 1e9 retries per second, got %g", c.MinPerSecond)
	case c.TTL <= 0:
		return fmt.Errorf("budget-ttl: must be positive, got %s", c.TTL)
	}
	return nil
}

// RetryBudget is one client process's retry budget (BudgetConfig).
type RetryBudget struct {
	cfg               BudgetConfig
	requests, retries SliceCount
}

var _ Policy = (*RetryBudget)(nil)

// Send counts a request's first try; it never holds an attempt back.
func (b *RetryBudget) Send(now time.Duration, first bool) (time.Duration, bool) {
	if first {
		b.requests.Add(now, 1)
	}
	return 0, true
}

// Allowed is how many retries the window ending at now allows.
func (b *RetryBudget) Allowed(now time.Duration) float64 {
	byRatio := float64(b.cfg.Ratio * float64(b.requests.Sum(now)))
	floor := float64(b.cfg.MinPerSecond * b.cfg.TTL.Seconds())
	return max(byRatio, floor)
}

// Retry spends one retry if the window has one left: fewer than ⌊Allowed⌋ spent.
func (b *RetryBudget) Retry(now time.Duration, _ Outcome) bool {
	// A tiny tolerance: 10% of 30 requests is 3 retries, not 2.9999999999999996.
	allowed := int64(math.Floor(b.Allowed(now) + 1e-9))
	if b.retries.Sum(now) >= allowed {
		return false
	}
	b.retries.Add(now, 1)
	return true
}

// Observe does nothing: a budget counts requests and retries, not their outcomes.
func (b *RetryBudget) Observe(time.Duration, Outcome, Outcome) {}
