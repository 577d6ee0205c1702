package algorithms

import (
	"testing"
	"time"
)

func TestFixedWindowTimeline(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"3 per 10s", Policy{Limit: 3, Window: 10 * time.Second}, []step{
			{at: 1 * time.Second, want: allowed(2, 9*time.Second)},
			{at: 2 * time.Second, cost: 2, want: allowed(0, 8*time.Second)},
			{at: 3 * time.Second, want: refused(0, 7*time.Second, 7*time.Second)},
			{at: 10*time.Second - 1, want: refused(0, 1, 1)},
			{at: 10 * time.Second, want: allowed(2, 10*time.Second)}, // a new window
			{at: 10 * time.Second, cost: 4, want: refused(2, Never, 10*time.Second)},
			{at: 10 * time.Second, cost: 2, want: allowed(0, 10*time.Second)},
			{at: 35 * time.Second, cost: 3, want: allowed(0, 5*time.Second)},    // two windows skipped
			{at: 35 * time.Second, key: 1, cost: 4, want: refused(3, Never, 0)}, // nothing held: no Reset
			{at: 35 * time.Second, key: 1, n: 4, admit: 3, want: refused(0, 5*time.Second, 5*time.Second)},
		}},
		// The boundary case of the design notes: 200 admitted within 200 ms.
		{"100 per minute at the boundary", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 59900 * ms, n: 100, admit: 100, want: allowed(0, 100*ms)},
			{at: 60100 * ms, n: 100, admit: 100, want: allowed(0, 59900*ms)},
			{at: 60100 * ms, want: refused(0, 59900*ms, 59900*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewFixedWindow(tt.policy), tt.steps)
		})
	}
}
