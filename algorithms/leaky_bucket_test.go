package algorithms

import (
	"math/rand/v2"
	"testing"
	"time"
)

func queued(remaining int64, reset, delay time.Duration) Decision {
	return Decision{Allowed: true, Remaining: remaining, Reset: reset, Delay: delay}
}

func TestLeakyBucketTimeline(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		// One unit drains every 100 ms; the queue holds 3.
		{"10 per second burst 3", Policy{Limit: 10, Window: time.Second, Burst: 3}, []step{
			{at: 0, want: queued(2, 100*ms, 0)},
			{at: 0, cost: 2, want: queued(0, 300*ms, 100*ms)},
			{at: 0, want: refused(0, 100*ms, 300*ms)},
			{at: 100 * ms, want: queued(0, 300*ms, 200*ms)},
			{at: 150 * ms, cost: 4, want: refused(0, Never, 250*ms)},
			{at: 1 * time.Second, want: queued(2, 100*ms, 0)},
		}},
		// Releases one unit every 333333333⅓ ns, rounded up to whole nanoseconds.
		{"3 per second", Policy{Limit: 3, Window: time.Second}, []step{
			{at: 0, want: queued(2, 333333334, 0)},
			{at: 0, want: queued(1, 666666667, 333333334)},
			{at: 0, want: queued(0, time.Second, 666666667)},
			{at: 0, want: refused(0, 333333334, time.Second)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewLeakyBucket(tt.policy), tt.steps)
		})
	}
}

// TestLeakyBucketIsGCRAWithDelay checks on random traces that the leaky bucket admits
// exactly what GCRA admits, that the backend sees its requests in arrival order one
// emission interval per unit apart, and that none waits longer than a full queue takes.
func TestLeakyBucketIsGCRAWithDelay(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range propertyPolicies {
		leaky, gcra := NewLeakyBucket(p), NewGCRA(p)
		clock := newCellClock(p)
		type release struct {
			start instant // exact release time
			end   instant // start + cost·T
		}
		last := map[uint32]release{}
		for i, a := range randomTrace(rng, p, 3, 5000) {
			d, g := leaky.Allow(a.key, a.now, a.cost), gcra.Allow(a.key, a.now, a.cost)
			if d.Allowed != g.Allowed || d.Remaining != g.Remaining || d.RetryAfter != g.RetryAfter || d.Reset != g.Reset {
				t.Fatalf("%v arrival %d: leaky %+v, gcra %+v", p, i, d, g)
			}
			if !d.Allowed {
				continue
			}
			if maxWait := clock.span(p.EffectiveBurst() - a.cost).until(0); d.Delay > maxWait {
				t.Fatalf("%v arrival %d: delay %v beyond a full queue's %v", p, i, d.Delay, maxWait)
			}
			// The exact release is next − cost·T; Delay is it rounded up.
			end := leaky.gcra.tat[a.key]
			start := clock.sub(end, clock.span(a.cost))
			if got := start.until(a.now); got != d.Delay {
				t.Fatalf("%v arrival %d: delay %v, release at %v", p, i, d.Delay, got)
			}
			if prev, ok := last[a.key]; ok && start.before(prev.end) {
				t.Fatalf("%v arrival %d: released before the previous request drained", p, i)
			}
			last[a.key] = release{start: start, end: end}
		}
	}
}
