package traffic

import (
	"fmt"
	"math"
	"time"
)

// BudgetConfig is Finagle's RetryBudget (finagle-core service/RetryBudget.scala, unchanged
// since finagle 24.5.0, over util-core's TokenBucket.newLeakyBucket and WindowedAdder; the
// Rust tower crate's retry::Budget and linkerd follow it): a client process may retry as
// long as its balance holds one withdrawal, where
//
//	balance = reserve + the windowed sum of its deposits and withdrawals
//	deposit    = 1000 per request (first try; 0 when Ratio is 0)
//	withdrawal = ⌊1000 / Ratio⌋ per retry sent (1 when Ratio is 0)
//	reserve    = MinPerSecond × ⌊TTL in seconds⌋ × withdrawal
//
// so over about a TTL a process may send MinPerSecond·TTL retries *plus* Ratio × its
// requests: the two add ("in addition to any retries allowed for via minRetriesPerSec",
// Finagle's doc). Withdrawals are windowed too, so the reserve is spent and grows back as
// the window forgets the retries that spent it; it is not a per-second floor. A refused
// withdrawal changes nothing. The window is Finagle's WindowedAdder (windowedAdder): 10
// slices of TTL/10 on a millisecond clock, anchored where they are touched, so a deposit
// counts for TTL to TTL + TTL/10.
//
// Envoy's retry_budget is another rule, max(budget_percent × active requests,
// min_retry_concurrency), a bound on concurrent retries rather than retries over a
// window of time; rlsim does not model it.
type BudgetConfig struct {
	// Ratio is percentCanRetry: the retries each request earns (0.2: one per five
	// requests), 0 to 100.
	Ratio float64
	// MinPerSecond is minRetriesPerSec: the reserve, in retries per second of TTL (an
	// integer in Finagle; a fraction here rounds the reserve down).
	MinPerSecond float64
	// TTL is how long a deposit counts, from 1 s to 60 s as Finagle requires; the reserve
	// counts its whole seconds.
	TTL time.Duration
}

// DefaultBudget is Finagle's RetryBudget(): 20% of requests over 10 s, plus a reserve of
// 10 retries a second (100 over the TTL).
var DefaultBudget = BudgetConfig{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second}

// Name returns "retry-budget".
func (BudgetConfig) Name() string { return "retry-budget" }

// Finagle keeps the budget in integers scaled by this, so that a Ratio above 1 needs no
// floating point (TokenRetryBudget.ScaleFactor).
const budgetScale = 1000

// New returns a budget as Finagle builds it, its window anchored at t=0 (the process built
// its client before the run).
func (c BudgetConfig) New() Policy {
	b := &RetryBudget{empty: c.Ratio == 0 && c.MinPerSecond == 0, withdrawal: 1}
	if c.Ratio > 0 {
		b.deposit = budgetScale
		b.withdrawal = int64(budgetScale / c.Ratio)
	}
	whole := int64(c.TTL / time.Second)
	// A tiny tolerance: 0.1/s × 10 s × 10000 is 10000, not 9999.999999999998.
	b.reserve = int64(math.Floor(float64(c.MinPerSecond*float64(whole)*float64(b.withdrawal)) + 1e-9))
	b.window = newWindowedAdder(c.TTL.Milliseconds(), budgetSlices)
	return b
}

const budgetSlices = 10

func (c BudgetConfig) validate() error {
	switch {
	case !(c.Ratio >= 0 && c.Ratio <= 100):
		return fmt.Errorf("budget-ratio: must be between 0 and 100 (0%%–10000%%), got %g", c.Ratio)
	case !(c.MinPerSecond >= 0 && c.MinPerSecond <= 1e6):
		return fmt.Errorf("budget-min: must be between 0 and 1e6 retries per second, got %g", c.MinPerSecond)
	case c.TTL < time.Second || c.TTL > time.Minute:
		return fmt.Errorf("budget-ttl: must be between 1s and 1m0s (Finagle's bounds), got %s", c.TTL)
	}
	return nil
}

// RetryBudget is one client process's retry budget (BudgetConfig).
type RetryBudget struct {
	empty                        bool // Ratio and MinPerSecond both 0: Finagle's Empty, no retry ever
	deposit, withdrawal, reserve int64
	window                       windowedAdder
}

var _ Policy = (*RetryBudget)(nil)

// Send deposits for a request's first try; it never holds an attempt back.
func (b *RetryBudget) Send(now time.Duration, first bool) (time.Duration, bool) {
	if first && !b.empty {
		b.window.add(now.Milliseconds(), b.deposit)
	}
	return 0, true
}

// count is the bucket's content at now: the reserve and the window's sum.
func (b *RetryBudget) count(now time.Duration) int64 {
	return b.reserve + b.window.sum(now.Milliseconds())
}

// Balance is Finagle's balance at now: count ÷ withdrawal (Go's division), the retries
// the budget would allow at once. It goes below zero when deposits leave the window
// before the withdrawals they paid for.
func (b *RetryBudget) Balance(now time.Duration) int64 {
	if b.empty {
		return 0
	}
	return b.count(now) / b.withdrawal
}

// Retry withdraws one retry if the bucket holds a withdrawal's worth.
func (b *RetryBudget) Retry(now time.Duration, _ Outcome) bool {
	if b.empty || b.count(now) < b.withdrawal {
		return false
	}
	b.window.add(now.Milliseconds(), -b.withdrawal)
	return true
}

// Observe does nothing: a budget counts requests and retries, not their outcomes.
func (b *RetryBudget) Observe(time.Duration, Outcome, Outcome) {}

// windowedAdder is util-core's WindowedAdder: a sum over a window of range milliseconds
// kept as a current slice and the slices−1 before it, each range/slices long. A slice is
// closed lazily, by the first add or sum at least a slice length after the current one
// opened, and the next one opens at that moment (not on a grid): so slices are anchored
// at the moments the adder is touched. Slices skipped over by a long gap are cleared.
type windowedAdder struct {
	width   int64   // ms: one slice
	buf     []int64 // the closed slices, a ring; i the next to overwrite
	i       int
	current int64 // the open slice's sum
	opened  int64 // ms: when the open slice opened
}

func newWindowedAdder(rangeMS int64, slices int) windowedAdder {
	return windowedAdder{width: max(rangeMS/int64(slices), 1), buf: make([]int64, slices-1)}
}

// expire closes the open slice at now if it has lasted a slice length, clearing the
// slices a gap skipped.
func (w *windowedAdder) expire(now int64) {
	if now-w.opened < w.width {
		return
	}
	n := len(w.buf)
	w.buf[w.i] = w.current
	w.current = 0
	w.i = (w.i + 1) % n
	// The closed slice counts as one; every further whole slice length of the gap is a
	// slice that saw nothing.
	if skip := min((now-w.opened)/w.width-1, int64(n)); skip > 0 {
		for range skip {
			w.buf[w.i] = 0
			w.i = (w.i + 1) % n
		}
	}
	w.opened = now
}

func (w *windowedAdder) add(now, x int64) {
	w.expire(now)
	w.current += x
}

func (w *windowedAdder) sum(now int64) int64 {
	w.expire(now)
	s := w.current
	for _, v := range w.buf {
		s += v
	}
	return s
}
