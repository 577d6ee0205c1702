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
type QuotaConfig struct {
	Capacity, RetryCost, TimeoutCost, NoRetryIncrement int
}

// DefaultQuota is the AWS SDKs' default: 500 units, 5 a retry, 10 after a timeout, 1 back
// per first-try success.
var DefaultQuota = QuotaConfig{Capacity: 500, RetryCost: 5, TimeoutCost: 10, NoRetryIncrement: 1}

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
	}
	return nil
}

// RetryQuota is one client process's quota (QuotaConfig).
type RetryQuota struct {
	cfg       QuotaConfig
	available int
}

var _ Policy = (*RetryQuota)(nil)

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
