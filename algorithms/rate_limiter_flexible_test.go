package algorithms

import (
	"testing"
	"time"
)

// TestRateLimiterFlexibleTimeline: the reference's hand cases (a) and (b) — points=2,
// duration=1: A A R R A A; with blockDuration=5 the consume that first goes over blocks
// the key until 5.2 s — and a cost of several points.
func TestRateLimiterFlexibleTimeline(t *testing.T) {
	t.Run("window", func(t *testing.T) {
		runTimeline(t, mustNew(t, "rate-limiter-flexible:points=2 duration=1"), []step{
			{at: 0, want: allowed(1, time.Second)},
			{at: 100 * ms, want: allowed(0, 900*ms)},
			{at: 200 * ms, want: refused(0, 800*ms, 800*ms)},
			{at: 999 * ms, want: refused(0, ms, ms)},
			{at: 1000 * ms, want: allowed(1, time.Second)}, // expiresAt − now = 0: a new record
			{at: 1500 * ms, want: allowed(0, 500*ms)},
			{at: 1500 * ms, key: 1, cost: 2, want: allowed(0, time.Second)},
			{at: 1600 * ms, key: 1, cost: 3, want: refused(0, Never, 900*ms)},
		})
	})
	t.Run("blockDuration", func(t *testing.T) {
		runTimeline(t, mustNew(t, "rate-limiter-flexible:points=2 duration=1 blockDuration=5"), []step{
			{at: 0, n: 2, admit: 2, want: allowed(0, time.Second)},
			{at: 200 * ms, want: refused(0, 5*time.Second, 5*time.Second)}, // blocked until 5.2 s
			{at: 999 * ms, want: refused(0, 4201*ms, 4201*ms)},
			{at: 1000 * ms, want: refused(0, 4200*ms, 4200*ms)}, // the window would have ended
			{at: 5200*ms - 1, want: refused(0, 1, 1)},
			{at: 5200 * ms, want: allowed(1, time.Second)},
		})
	})
	t.Run("short block", func(t *testing.T) {
		// A block shorter than the rest of the window ends the lockout early.
		runTimeline(t, mustNew(t, "rate-limiter-flexible:points=1 duration=60 blockDuration=0.5"), []step{
			{at: 0, want: allowed(0, time.Minute)},
			{at: 100 * ms, want: refused(0, 500*ms, 500*ms)},
			{at: 600 * ms, want: allowed(0, time.Minute)},
		})
	})
	t.Run("duration 0", func(t *testing.T) {
		runTimeline(t, mustNew(t, "rate-limiter-flexible:points=2 duration=0"), []step{
			{at: 0, n: 3, admit: 2, want: refused(0, Never, Never)},
			{at: 365 * 24 * time.Hour, want: refused(0, Never, Never)},
		})
	})
	t.Run("backwards", func(t *testing.T) {
		runTimeline(t, mustNew(t, "rate-limiter-flexible:points=2 duration=1"), []step{
			{at: 2 * time.Second, want: allowed(1, time.Second)},
			{at: 1 * time.Second, want: allowed(0, 2*time.Second)}, // counted in [2 s, 3 s)
			{at: 1 * time.Second, want: refused(0, 2*time.Second, 2*time.Second)},
		})
	})
}
