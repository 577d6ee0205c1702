package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestSlidingLogTimeline(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{"3 per 10s", Policy{Limit: 3, Window: 10 * time.Second}, []step{
			{at: 1 * time.Second, want: allowed(2, 10*time.Second)},
			{at: 2 * time.Second, cost: 2, want: allowed(0, 10*time.Second)},
			// The entry of 1s frees enough when it leaves, at 11s.
			{at: 3 * time.Second, want: refused(0, 8*time.Second, 9*time.Second)},
			{at: 11*time.Second - 1, want: refused(0, 1, time.Second+1)},
			{at: 11 * time.Second, want: allowed(0, 10*time.Second)}, // (1s, 1) left at 11s exactly
			// Cost 2 needs the entry of 2s gone, at 12s.
			{at: 11 * time.Second, cost: 2, want: refused(0, 1*time.Second, 10*time.Second)},
			{at: 12 * time.Second, cost: 2, want: allowed(0, 10*time.Second)},
			{at: 12 * time.Second, cost: 4, want: refused(0, Never, 10*time.Second)},
			// Cost 3 needs both the entry of 11s and the one of 12s gone.
			{at: 12 * time.Second, cost: 3, want: refused(0, 10*time.Second, 10*time.Second)},
			{at: 22 * time.Second, cost: 3, want: allowed(0, 10*time.Second)},
			{at: 40 * time.Second, key: 1, cost: 4, want: refused(3, Never, 0)},
		}},
		{"100 per minute at the boundary", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 59900 * ms, n: 100, admit: 100, want: allowed(0, time.Minute)},
			{at: 60100 * ms, n: 100, admit: 0, want: refused(0, 59800*ms, 59800*ms)},
			{at: 119900 * ms, n: 100, admit: 100, want: allowed(0, time.Minute)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewSlidingLog(tt.policy), tt.steps)
		})
	}
}

// TestSlidingLogKeepsThePromise checks on random traces that no window (t−W, t], in any
// alignment, ever holds more than Limit admitted units.
func TestSlidingLogKeepsThePromise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, p := range propertyPolicies {
		lim := NewSlidingLog(p)
		var admitted [][]arrival // per key, in time order
		for _, a := range randomTrace(rng, p, 4, 20000) {
			if !lim.Allow(a.key, a.now, a.cost).Allowed {
				continue
			}
			for int(a.key) >= len(admitted) {
				admitted = append(admitted, nil)
			}
			admitted[a.key] = append(admitted[a.key], a)
		}
		for key, as := range admitted {
			// The heaviest window ends at an admission; slide its start behind it.
			var sum int64
			first := 0
			for _, a := range as {
				sum += a.cost
				for as[first].now <= a.now-int64(p.Window) {
					sum -= as[first].cost
					first++
				}
				if sum > p.Limit {
					t.Fatalf("%v key %d: %d admitted in the window ending at +%v", p, key, sum, time.Duration(a.now-epoch))
				}
			}
		}
	}
}
