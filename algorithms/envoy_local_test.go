package algorithms

import (
	"testing"
	"time"
)

// TestEnvoyLocalTimeline: the reference's hand case (max_tokens=10, tokens_per_fill=10,
// fill_interval=10s; 11 requests at 0, 6 at 5 s, 1 at 10 s) in both refills — the timer's
// step refill refuses all six at 5 s, the continuous one admits five — and the spec of
// the docs, 10 per second into a bucket of 20.
func TestEnvoyLocalTimeline(t *testing.T) {
	t.Run("timer, 1.30", func(t *testing.T) {
		runTimeline(t, mustNew(t, "envoy-local:max_tokens=10 tokens_per_fill=10 fill_interval=10s version=1.30"), []step{
			{at: 0, n: 11, admit: 10, want: refused(0, 10*time.Second, 10*time.Second)},
			{at: 5 * time.Second, n: 6, admit: 0, want: refused(0, 5*time.Second, 5*time.Second)}, // no tick yet
			{at: 10 * time.Second, want: allowed(9, 10*time.Second)},                              // the tick refills first
			{at: 10 * time.Second, key: 1, cost: 11, want: refused(10, Never, 0)},
		})
	})
	t.Run("continuous, 1.31", func(t *testing.T) {
		runTimeline(t, mustNew(t, "envoy-local:max_tokens=10 tokens_per_fill=10 fill_interval=10s version=1.31.0"), []step{
			{at: 0, n: 11, admit: 10, want: refused(0, time.Second, 10*time.Second)},
			{at: 5 * time.Second, n: 6, admit: 5, want: refused(0, time.Second, 10*time.Second)},
			{at: 10 * time.Second, want: allowed(4, 6*time.Second)},
		})
	})
	t.Run("steps of ten", func(t *testing.T) {
		runTimeline(t, mustNew(t, "envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s version=1.30"), []step{
			{at: 500 * ms, n: 21, admit: 20, want: refused(0, 500*ms, 1500*ms)},
			{at: 999 * ms, want: refused(0, 1*ms, 1001*ms)},
			{at: 1000 * ms, n: 11, admit: 10, want: refused(0, time.Second, 2*time.Second)}, // ten at once at the tick
			{at: 3500 * ms, n: 21, admit: 20},                                               // two ticks fill it
			{at: 2 * time.Second, want: refused(0, 2*time.Second, 3*time.Second)},           // stamped back: no refill
		})
	})
	t.Run("default version is continuous", func(t *testing.T) {
		runTimeline(t, mustNew(t, "envoy-local:max_tokens=20 tokens_per_fill=10 fill_interval=1s"), []step{
			{at: 500 * ms, n: 21, admit: 20},
			{at: 600 * ms, want: allowed(0, 2*time.Second)}, // one token every 100 ms
		})
	})
	lim := mustNew(t, "envoy-local:max_tokens=2 fill_interval=1s version=1.30")
	lim.Allow(2, epoch, 1)
	if lim.Keys() != 3 || lim.StateBytes() != 48 {
		t.Errorf("%d keys, %d bytes; want 3 keys of 16 bytes", lim.Keys(), lim.StateBytes())
	}
}
