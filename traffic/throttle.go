package traffic

import (
	"fmt"
	"math"
	"time"
)

// ThrottleConfig is gRPC's retry throttling (proposal A6, "gRPC Retry Design"): a client
// process keeps a token count that starts at MaxTokens; every attempt that fails
// (throttled, a server error, a timeout) takes one token, every success gives back
// TokenRatio, never above MaxTokens; retries are sent only while the count is above
// MaxTokens/2. When most attempts fail the count sinks below half and retries stop, until
// enough successes lift it again; first tries are never held back.
type ThrottleConfig struct {
	// MaxTokens is the count's ceiling and start (gRPC: 1 to 1000).
	MaxTokens int
	// TokenRatio is what a success gives back (gRPC: above 0, three decimals).
	TokenRatio float64
}

// DefaultThrottle is the example of the gRPC proposal: 10 tokens, 0.1 per success.
var DefaultThrottle = ThrottleConfig{MaxTokens: 10, TokenRatio: 0.1}

// Name returns "retry-throttle".
func (ThrottleConfig) Name() string { return "retry-throttle" }

// New returns a full token count.
func (c ThrottleConfig) New() Policy {
	return &RetryThrottle{max: int64(c.MaxTokens) * 1000, ratio: int64(math.Round(c.TokenRatio * 1000)), tokens: int64(c.MaxTokens) * 1000}
}

func (c ThrottleConfig) validate() error {
	switch {
	case c.MaxTokens < 1 || c.MaxTokens > 1000:
		return fmt.Errorf("throttle-max-tokens: must be between 1 and 1000, got %d", c.MaxTokens)
	case !(c.TokenRatio >= 0.001 && c.TokenRatio <= 1000):
		return fmt.Errorf("throttle-token-ratio: must be between 0.001 and 1000, got %g", c.TokenRatio)
	}
	return nil
}

// RetryThrottle is one client process's token count (ThrottleConfig). Tokens are kept in
// thousandths, as gRPC keeps the ratio to three decimals, so the count is exact.
type RetryThrottle struct {
	max, ratio, tokens int64
}

var _ Policy = (*RetryThrottle)(nil)

// Tokens is the token count.
func (t *RetryThrottle) Tokens() float64 { return float64(t.tokens) / 1000 }

// Send never holds an attempt back.
func (t *RetryThrottle) Send(time.Duration, bool) (time.Duration, bool) { return 0, true }

// Retry allows a retry while the count is above half the maximum.
func (t *RetryThrottle) Retry(time.Duration, Outcome) bool { return t.tokens*2 > t.max }

// Observe takes a token for a failed attempt and gives back TokenRatio for a success.
func (t *RetryThrottle) Observe(_ time.Duration, o, _ Outcome) {
	switch {
	case o == Succeeded:
		t.tokens = min(t.max, t.tokens+t.ratio)
	case o.Retryable():
		t.tokens = max(0, t.tokens-1000)
	}
}
