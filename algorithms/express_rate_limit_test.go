package algorithms

import (
	"testing"
	"time"
)

// mustNew builds the limiter of spec, whatever the policy (a product's model decides by
// its own parameters).
func mustNew(t *testing.T, spec string) Limiter {
	t.Helper()
	lim, err := New(spec, Policy{Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatalf("New(%q): %v", spec, err)
	}
	if lim.Name() != Canonical(spec) {
		t.Fatalf("New(%q).Name() = %q, want %q", spec, lim.Name(), Canonical(spec))
	}
	return lim
}

// TestExpressRateLimitTimeline: the hand case of the reference (windowMs=1000, limit=2;
// A A R R A A A), then what the middleware does with sub-millisecond stamps, a step back
// in time, a cost above the limit and a second key.
func TestExpressRateLimitTimeline(t *testing.T) {
	lim := mustNew(t, "express-rate-limit:limit=2 windowMs=1000")
	runTimeline(t, lim, []step{
		{at: 0, want: allowed(1, 1000*ms)}, // the first request opens [0, 1000)
		{at: 100 * ms, want: allowed(0, 900*ms)},
		{at: 200 * ms, want: refused(0, 800*ms, 800*ms)}, // counted: hits 3
		{at: 999*ms + 999_999, want: refused(0, 1, 1)},   // still millisecond 999
		{at: 1000 * ms, want: allowed(1, 1000*ms)},       // resetTime <= now: a new window
		{at: 1500 * ms, want: allowed(0, 500*ms)},
		{at: 2100 * ms, want: allowed(1, 1000*ms)}, // opened by this request, not at 2000
		{at: 1500 * ms, want: allowed(0, 1600*ms)}, // stamped back: counted in [2100, 3100)
		{at: 1600 * ms, want: refused(0, 1500*ms, 1500*ms)},
		{at: 2100 * ms, key: 1, cost: 3, want: refused(0, Never, 1000*ms)}, // three hits at once, never within 2
		{at: 2100 * ms, key: 1, want: refused(0, 1000*ms, 1000*ms)},        // those hits counted
		{at: 3100 * ms, key: 1, cost: 2, want: allowed(0, 1000*ms)},
	})
	if lim.Keys() != 2 || lim.StateBytes() != 32 {
		t.Errorf("%d keys, %d bytes; want 2 keys of 16 bytes", lim.Keys(), lim.StateBytes())
	}
}

// TestExpressRateLimitDefaults: express-rate-limit's own defaults, 5 per minute.
func TestExpressRateLimitDefaults(t *testing.T) {
	lim := mustNew(t, "express-rate-limit")
	runTimeline(t, lim, []step{
		{at: 59 * time.Second, n: 6, admit: 5, want: refused(0, time.Minute, time.Minute)},
		{at: 119 * time.Second, want: allowed(4, time.Minute)},
	})
}
