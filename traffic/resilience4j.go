package traffic

import (
	"fmt"
	"time"
)

// Resilience4jConfig is resilience4j's CircuitBreaker (CircuitBreakerStateMachine and
// CircuitBreakerMetrics, count-based sliding window), one per client process, in its own
// words:
//
//   - CLOSED: the outcomes of the last SlidingWindowSize calls are kept; after each
//     outcome, once the window holds at least min(MinimumNumberOfCalls,
//     SlidingWindowSize) calls, a failure rate (failed ÷ calls, in percent) at or above
//     FailureRateThreshold opens the breaker.
//   - OPEN: every call is refused without reaching the server; the first call asked for
//     after WaitDurationInOpenState has passed (strictly after) moves it to HALF_OPEN.
//   - HALF_OPEN: PermittedNumberOfCallsInHalfOpenState calls go through and the rest are
//     refused; its own count-based window of that size judges them, once it holds
//     min(MinimumNumberOfCalls, permitted) outcomes: at or above the threshold it opens
//     again, below it closes with an empty window.
//
// So where the circuit-breaker policy needs every trial to succeed, this one closes on a
// failure rate below the threshold among the trials, and it judges nothing until it has
// seen the minimum number of calls. An outcome that arrives while open is dropped;
// one that arrives half-open counts there, trial or late answer (resilience4j cannot
// tell them apart). Failures are retryable outcomes (throttled, server errors,
// timeouts); a client error says nothing of the server and is not recorded.
type Resilience4jConfig struct {
	FailureRateThreshold                  float64 // percent, above 0 and at most 100
	SlidingWindowSize                     int
	MinimumNumberOfCalls                  int
	WaitDurationInOpenState               time.Duration
	PermittedNumberOfCallsInHalfOpenState int
}

// DefaultResilience4j is resilience4j's CircuitBreakerConfig defaults: 50% of the last
// 100 calls, at least 100 calls, open 60 s, 10 calls half-open.
var DefaultResilience4j = Resilience4jConfig{FailureRateThreshold: 50, SlidingWindowSize: 100, MinimumNumberOfCalls: 100,
	WaitDurationInOpenState: time.Minute, PermittedNumberOfCallsInHalfOpenState: 10}

// Name returns "resilience4j-breaker".
func (Resilience4jConfig) Name() string { return "resilience4j-breaker" }

// New returns a closed breaker.
func (c Resilience4jConfig) New() Policy {
	b := &Resilience4jBreaker{cfg: c}
	b.toClosed()
	return b
}

func (c Resilience4jConfig) validate() error {
	switch {
	case !(c.FailureRateThreshold > 0 && c.FailureRateThreshold <= 100):
		return fmt.Errorf("r4j-failure-rate: must be above 0%% and at most 100%%, got %g%%", c.FailureRateThreshold)
	case c.SlidingWindowSize < 1 || c.SlidingWindowSize > 100_000:
		return fmt.Errorf("r4j-window: must be between 1 and 100000 calls, got %d", c.SlidingWindowSize)
	case c.MinimumNumberOfCalls < 1 || c.MinimumNumberOfCalls > 100_000:
		return fmt.Errorf("r4j-min-calls: must be between 1 and 100000 calls, got %d", c.MinimumNumberOfCalls)
	case c.WaitDurationInOpenState <= 0:
		return fmt.Errorf("r4j-wait: must be positive, got %s", c.WaitDurationInOpenState)
	case c.PermittedNumberOfCallsInHalfOpenState < 1 || c.PermittedNumberOfCallsInHalfOpenState > 100_000:
		return fmt.Errorf("r4j-half-open-calls: must be between 1 and 100000, got %d", c.PermittedNumberOfCallsInHalfOpenState)
	}
	return nil
}

// Resilience4jBreaker is one client process's breaker (Resilience4jConfig).
type Resilience4jBreaker struct {
	cfg      Resilience4jConfig
	state    BreakerState
	window   callWindow
	openedAt time.Duration
	permits  int // calls half-open may still let through
}

var _ Policy = (*Resilience4jBreaker)(nil)

// State is the state the breaker is in (an open breaker whose wait is over is still
// open until a call asks).
func (b *Resilience4jBreaker) State() BreakerState { return b.state }

// FailureRate is the window's failure rate in percent, or -1 below its minimum number
// of calls (resilience4j's getFailureRate).
func (b *Resilience4jBreaker) FailureRate() float64 { return b.window.rate() }

func (b *Resilience4jBreaker) toClosed() {
	b.state = Closed
	b.window = newCallWindow(b.cfg.SlidingWindowSize, b.cfg.MinimumNumberOfCalls)
}

func (b *Resilience4jBreaker) toOpen(now time.Duration) { b.state, b.openedAt = Open, now }

// Send lets a call through when closed, refuses it when open, and lets the permitted
// calls through when half-open.
func (b *Resilience4jBreaker) Send(now time.Duration, _ bool) (time.Duration, bool) {
	if b.state == Open && now > b.openedAt+b.cfg.WaitDurationInOpenState {
		n := b.cfg.PermittedNumberOfCallsInHalfOpenState
		b.state, b.permits, b.window = HalfOpen, n, newCallWindow(n, b.cfg.MinimumNumberOfCalls)
	}
	switch b.state {
	case Closed:
		return 0, true
	case HalfOpen:
		if b.permits > 0 {
			b.permits--
			return 0, true
		}
	}
	return 0, false
}

// Retry never holds a retry back: the breaker judges each call at Send.
func (b *Resilience4jBreaker) Retry(time.Duration, Outcome) bool { return true }

// Observe records an outcome and moves the breaker.
func (b *Resilience4jBreaker) Observe(now time.Duration, o, _ Outcome) {
	failed := o.Retryable()
	if (!failed && o != Succeeded) || b.state == Open {
		return
	}
	b.window.record(failed)
	r := b.window.rate()
	switch {
	case r < 0:
	case float32(r) >= float32(b.cfg.FailureRateThreshold):
		b.toOpen(now)
	case b.state == HalfOpen:
		b.toClosed()
	}
}

// callWindow is resilience4j's count-based sliding window: the last size outcomes, and
// the minimum it must hold before it judges (capped at its size, as resilience4j caps
// it).
type callWindow struct {
	failed          []bool // a ring
	next, held      int
	failures, least int
}

func newCallWindow(size, minimum int) callWindow {
	return callWindow{failed: make([]bool, size), least: min(minimum, size)}
}

func (w *callWindow) record(failed bool) {
	if w.held == len(w.failed) {
		if w.failed[w.next] {
			w.failures--
		}
	} else {
		w.held++
	}
	w.failed[w.next] = failed
	if failed {
		w.failures++
	}
	w.next = (w.next + 1) % len(w.failed)
}

// rate is the failure rate in percent, -1 below the minimum; computed in float32 as
// resilience4j computes it (failed × 100.0f / calls).
func (w *callWindow) rate() float64 {
	if w.held == 0 || w.held < w.least {
		return -1
	}
	return float64(float32(w.failures) * 100 / float32(w.held))
}
