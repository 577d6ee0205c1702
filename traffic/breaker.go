package traffic

import (
	"fmt"
	"time"
)

// BreakerConfig is a client-side circuit breaker (Michael Nygard's pattern in "Release
// It!") whose trials must all pass, one per client process:
//
//   - closed: attempts go through; the breaker keeps the outcomes of the last Window
//     attempts (successes and retryable failures; a client error says nothing about the
//     server). Once it holds Window outcomes and at least FailureRatio of them failed, it
//     opens.
//   - open: every attempt, first tries included, is refused at once without reaching the
//     server, for OpenFor.
//   - half-open: after OpenFor, Probes attempts go through as trials and the rest are
//     refused; if every trial succeeds the breaker closes with an empty window, and the
//     first failure opens it again for another OpenFor.
//
// The window is count-based, the sleep window Hystrix's 5 s by default. resilience4j's
// breaker judges differently — a failure rate once a minimum of calls is in, and a rate
// among the trials to close: Resilience4jConfig.
type BreakerConfig struct {
	// Window is the number of recent outcomes judged (resilience4j's count-based window).
	Window int
	// FailureRatio is the share of failures in a full window that opens the breaker.
	FailureRatio float64
	// OpenFor is how long the breaker stays open before it lets trials through.
	OpenFor time.Duration
	// Probes is how many trials half-open lets through, and must see succeed.
	Probes int
}

// DefaultBreaker opens when half of the last 10 attempts failed, for 5 s, and closes after 3
// successful trials.
var DefaultBreaker = BreakerConfig{Window: 10, FailureRatio: 0.5, OpenFor: 5 * time.Second, Probes: 3}

// Name returns "circuit-breaker".
func (BreakerConfig) Name() string { return "circuit-breaker" }

// New returns a closed breaker.
func (c BreakerConfig) New() Policy { return &Breaker{cfg: c, window: make([]bool, c.Window)} }

func (c BreakerConfig) validate() error {
	switch {
	case c.Window < 1 || c.Window > 100_000:
		return fmt.Errorf("breaker-window: must be between 1 and 100000 outcomes, got %d", c.Window)
	case !(c.FailureRatio > 0 && c.FailureRatio <= 1):
		return fmt.Errorf("breaker-failure-ratio: must be above 0 and at most 1, got %g", c.FailureRatio)
	case c.OpenFor <= 0:
		return fmt.Errorf("breaker-open-for: must be positive, got %s", c.OpenFor)
	case c.Probes < 1 || c.Probes > 100_000:
		return fmt.Errorf("breaker-probes: must be between 1 and 100000, got %d", c.Probes)
	}
	return nil
}

// BreakerState is a circuit breaker's state.
type BreakerState uint8

// The states of a breaker.
const (
	Closed BreakerState = iota
	Open
	HalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	}
	return "half-open"
}

// Breaker is one client process's circuit breaker (BreakerConfig).
type Breaker struct {
	cfg   BreakerConfig
	state BreakerState
	// window holds the last outcomes (true: failed) in a ring; seen counts those held
	// (up to Window), failures the failed ones among them.
	window         []bool
	next, seen     int
	failures       int
	openedAt       time.Duration
	trials, passed int
}

var _ Policy = (*Breaker)(nil)

// State is the breaker's state as an attempt sent at now would find it.
func (b *Breaker) State(now time.Duration) BreakerState {
	if b.state == Open && now >= b.openedAt+b.cfg.OpenFor {
		return HalfOpen
	}
	return b.state
}

func (b *Breaker) open(now time.Duration) {
	b.state, b.openedAt = Open, now
}

func (b *Breaker) close() {
	b.state = Closed
	b.next, b.seen, b.failures = 0, 0, 0
}

// Send lets an attempt through when closed, refuses it when open, and lets Probes trials
// through when half-open.
func (b *Breaker) Send(now time.Duration, _ bool) (time.Duration, bool) {
	if b.state == Open && now >= b.openedAt+b.cfg.OpenFor {
		b.state, b.trials, b.passed = HalfOpen, 0, 0
	}
	switch b.state {
	case Closed:
		return 0, true
	case HalfOpen:
		if b.trials < b.cfg.Probes {
			b.trials++
			return 0, true
		}
	}
	return 0, false
}

// Retry never holds a retry back: the breaker judges each attempt at Send.
func (b *Breaker) Retry(time.Duration, Outcome) bool { return true }

// Observe records an outcome and moves the breaker.
func (b *Breaker) Observe(now time.Duration, o, _ Outcome) {
	failed := o.Retryable()
	if !failed && o != Succeeded {
		return
	}
	switch b.state {
	case Closed:
		if b.seen == len(b.window) {
			if b.window[b.next] {
				b.failures--
			}
		} else {
			b.seen++
		}
		b.window[b.next] = failed
		if failed {
			b.failures++
		}
		b.next = (b.next + 1) % len(b.window)
		if b.seen == len(b.window) && float64(b.failures) >= float64(b.cfg.FailureRatio*float64(len(b.window)))-1e-9 {
			b.open(now)
		}
	case HalfOpen:
		if failed {
			b.open(now)
			return
		}
		b.passed++
		if b.passed >= b.cfg.Probes {
			b.close()
		}
	}
	// Open: answers to attempts sent before the breaker opened change nothing.
}
