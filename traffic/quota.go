package traffic

import (
	"fmt"
	"time"
)

// QuotaConfig is the retry quota of the AWS SDKs' "standard" retry mode: a client process
// holds Capacity units. A retry costs RetryCost (TimeoutCost when the failed attempt timed
// out) and is not sent when the quota cannot pay for it; a request that then succeeds gives
// back what its last retry cost, and a request that succeeds on its first try adds
// NoRetryIncrement, never above Capacity. A healthy service keeps the quota full; a failing
// one drains it in Capacity/RetryCost retries, after which the process stops retrying
// until successes refill it.
//
// The standard mode also bounds each request to MaxAttempts attempts, the first included
// (max_attempts, 3 by default in every AWS SDK's standard mode): a request that fails its
// last attempt is given up, as at the client's own attempt limit, whatever the quota
// holds. A quota without that bound is MaxAttempts 0.
type QuotaConfig struct {
	Capacity, RetryCost, TimeoutCost, NoRetryIncrement int
	MaxAttempts                                        int
}

// DefaultQuota is the AWS SDKs' standard mode: 500 units, 5 a retry, 10 after a timeout,
// 1 back per first-try success, at most 3 attempts a request.
var DefaultQuota = QuotaConfig{Capacity: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1, MaxAttempts: 3}

// Name returns "retry-quota".
func (QuotaConfig) Name() string { return "retry-quota" }

// New returns a full quota.
func (c QuotaConfig) New() Policy { return &RetryQuota{cfg: c, available: c.Capacity} }

func (c QuotaConfig) validate() error {
	switch {
	case c.Capacity < 1 || c.Capacity > 1_000_000_000:
		return fmt.Errorf("quota-capacity: must be between 1 and 1000000000, got %d", c.Capacity)
	case c.RetryCost < 0 || c.RetryCost > c.Capacity:
		return fmt.Errorf("quota-retry-cost: must be between 0 and the capacity %d, got %d", c.Capacity, c.RetryCost)
	case c.TimeoutCost < 0 || c.TimeoutCost > c.Capacity:
		return fmt.Errorf("quota-timeout-cost: must be between 0 and the capacity %d, got %d", c.Capacity, c.TimeoutCost)
	case c.NoRetryIncrement < 0 || c.NoRetryIncrement > c.Capacity:
		return fmt.Errorf("quota-refill: must be between 0 and the capacity %d, got %d", c.Capacity, c.NoRetryIncrement)
	case c.MaxAttempts < 0 || c.MaxAttempts > 1_000_000:
		return fmt.Errorf("quota-max-attempts: must be between 0 (no bound) and 1000000, got %d", c.MaxAttempts)
	}
	return nil
}

// RetryQuota is one client process's quota (QuotaConfig).
type RetryQuota struct {
	cfg       QuotaConfig
	available int
}

var (
	_ Policy         = (*RetryQuota)(nil)
	_ AttemptLimiter = (*RetryQuota)(nil)
)

// AttemptLimit implements AttemptLimiter: the standard mode's max_attempts.
func (q *RetryQuota) AttemptLimit() int { return q.cfg.MaxAttempts }

// Available is the units left.
func (q *RetryQuota) Available() int { return q.available }

// cost is what a retry after a failure o costs.
func (q *RetryQuota) cost(o Outcome) int {
	if o == TimedOut {
		return q.cfg.TimeoutCost
	}
	return q.cfg.RetryCost
}

// Send never holds an attempt back.
func (q *RetryQuota) Send(time.Duration, bool) (time.Duration, bool) { return 0, true }

// Retry pays for a retry after o, if the quota can.
func (q *RetryQuota) Retry(_ time.Duration, o Outcome) bool {
	c := q.cost(o)
	if c > q.available {
		return false
	}
	q.available -= c
	return true
}

// Observe refunds a successful retry's cost, or adds NoRetryIncrement for a first-try
// success.
func (q *RetryQuota) Observe(_ time.Duration, o, cause Outcome) {
	if o != Succeeded {
		return
	}
	back := q.cfg.NoRetryIncrement
	if cause != 0 {
		back = q.cost(cause)
	}
	q.available = min(q.cfg.Capacity, q.available+back)
}
