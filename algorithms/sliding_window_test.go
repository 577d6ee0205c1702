package algorithms

import (
	"testing"
	"time"
)

func TestSlidingWindowTimeline(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		// The worked example of the design notes: 100/min, a full window k (10:00), then
		// window k+1 (10:01).
		{"100 per minute", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 10 * s, n: 100, admit: 100, want: allowed(0, 110*s)},
			// Full until prev has decayed by one unit: 0.6 s into the next window.
			{at: 10 * s, want: refused(0, 50*s+600*ms, 110*s)},
			// 20% into window k+1: 100·0.8 = 80, so 20 pass.
			{at: 72 * s, n: 21, admit: 20, want: refused(0, 600*ms, 108*s)},
			// 25% in: 100·0.75 + 20 = 95, so exactly 5 more pass.
			{at: 75 * s, n: 5, admit: 5, want: allowed(0, 105*s)},
			// 100·(1 − e/60 s) + 25 + 1 <= 100 from e = 15.6 s on.
			{at: 75 * s, want: refused(0, 600*ms, 105*s)},
			{at: 75*s + 600*ms - 1, want: refused(0, 1, 105*s-600*ms+1)},
			{at: 75*s + 600*ms, want: allowed(0, 105*s-600*ms)},
			{at: 75*s + 600*ms, cost: 101, want: refused(0, Never, 105*s-600*ms)},
			// Window k+2 starts at 120 s with prev = 26: 26·(1 − 30/60) = 13.
			{at: 150 * s, want: allowed(86, 90*s)},
			// The cost fits only once both counters have aged out, at 240 s.
			{at: 150 * s, cost: 100, want: refused(86, 90*s, 90*s)},
			// Skipping a whole window clears both counters.
			{at: 300 * s, cost: 100, want: allowed(0, 120*s)},
			{at: 300 * s, key: 1, cost: 101, want: refused(100, Never, 0)},
		}},
		// A third into the window after a full one, prev·(1 − 1/3) = 3·(2/3) = 2 leaves room
		// for exactly 1; a nanosecond earlier it does not.
		{"3 per 3s", Policy{Limit: 3, Window: 3 * s}, []step{
			{at: 0, n: 3, admit: 3, want: allowed(0, 6*s)},
			{at: 3 * s, want: refused(0, 1*s, 3*s)},
			{at: 4*s - 1, want: refused(0, 1, 2*s+1)},
			{at: 4 * s, want: allowed(0, 5*s)},
		}},
		{"boundary", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 59900 * ms, n: 100, admit: 100},
			{at: 60100 * ms, n: 100, admit: 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewSlidingWindow(tt.policy), tt.steps)
		})
	}
}
