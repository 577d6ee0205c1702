package algorithms

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestTokenBucketTimeline(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
	}{
		// 10 per second, burst 5: a token every 100 ms.
		{"10 per second burst 5", Policy{Limit: 10, Window: time.Second, Burst: 5}, []step{
			{at: 0, cost: 5, want: allowed(0, 500*ms)}, // starts full
			{at: 0, want: refused(0, 100*ms, 500*ms)},
			{at: 100 * ms, want: allowed(0, 500*ms)},
			{at: 350 * ms, cost: 2, want: allowed(0, 450*ms)}, // 2.5 tokens, 0.5 left
			{at: 350 * ms, cost: 6, want: refused(0, Never, 450*ms)},
			{at: 350 * ms, want: refused(0, 50*ms, 450*ms)},
			// The refusals took nothing: 0.5 + 0.5 = 1 token at 400 ms.
			{at: 400 * ms, want: allowed(0, 500*ms)},
			{at: 2 * time.Second, n: 6, admit: 5, want: refused(0, 100*ms, 500*ms)},
			{at: 2 * time.Second, key: 1, want: allowed(4, 100*ms)},
		}},
		{"boundary", Policy{Limit: 100, Window: time.Minute}, []step{
			{at: 59900 * ms, n: 100, admit: 100, want: allowed(0, time.Minute)},
			// 0.2 s refills a third of a token. The missing two thirds take 400 ms, which
			// float64 puts a hair under, so x/time/rate's wait truncates to 1 ns less,
			// and the request does pass then.
			{at: 60100 * ms, n: 100, admit: 0, want: refused(0, 400*ms-1, time.Minute-200*ms)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runTimeline(t, NewTokenBucket(tt.policy), tt.steps)
		})
	}
}

// peerPolicies are the policies the peer tests run: whole and fractional refill periods,
// burst below, at and above the limit.
var peerPolicies = []Policy{
	{Limit: 100, Window: time.Minute},
	{Limit: 10, Window: time.Second, Burst: 5},
	{Limit: 3, Window: time.Second, Burst: 1},
	{Limit: 7, Window: 1300 * ms, Burst: 20},
	{Limit: 1_000_000, Window: time.Second, Burst: 50},
	{Limit: 5, Window: time.Hour, Burst: 2},
}

// TestTokenBucketMatchesXTimeRate replays random traces against TokenBucket and against one
// golang.org/x/time/rate Limiter per key, and requires every decision to be the same and,
// after each, the tokens of the key to be the same float64.
func TestTokenBucketMatchesXTimeRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range peerPolicies {
		t.Run(p.String(), func(t *testing.T) {
			tb := NewTokenBucket(p)
			burst := p.EffectiveBurst()
			peers := make([]*rate.Limiter, 4)
			for i := range peers {
				peers[i] = rate.NewLimiter(rate.Limit(float64(p.Limit)/p.Window.Seconds()), int(burst))
			}
			// Gaps around the time the average cost takes to refill, so that about half
			// the requests are refused.
			meanGap := int64(p.Window) / p.Limit * (burst + 3) / 4
			now := epoch
			admitted := 0
			for i := range 12000 {
				if rng.IntN(4) > 0 {
					now += rng.Int64N(2 * meanGap)
				}
				key := uint32(rng.IntN(len(peers)))
				cost := 1 + rng.Int64N(burst+2)
				got := tb.Allow(key, now, cost).Allowed
				want := peers[key].AllowN(time.Unix(0, now), int(cost))
				if got != want {
					t.Fatalf("arrival %d (key %d, +%v, cost %d): allowed %v, x/time/rate %v",
						i, key, time.Duration(now-epoch), cost, got, want)
				}
				if got {
					admitted++
				}
				s := &tb.state[key]
				if ours, theirs := tb.tokensAt(s, now), peers[key].TokensAt(time.Unix(0, now)); ours != theirs {
					t.Fatalf("arrival %d: tokens %v, x/time/rate %v", i, ours, theirs)
				}
			}
			if admitted < 2000 || admitted > 10000 {
				t.Errorf("admitted %d of 12000: the trace does not exercise both outcomes", admitted)
			}
		})
	}
}

// TestTokenBucketRespectsItsRate checks on random traces that over any span of length d
// between two admissions, the bucket admits at most Burst + rate·d.
func TestTokenBucketRespectsItsRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range propertyPolicies {
		perSec := float64(p.Limit) / p.Window.Seconds()
		tb := NewTokenBucket(p)
		var admitted []arrival
		for _, a := range randomTrace(rng, p, 1, 4000) {
			if tb.Allow(a.key, a.now, a.cost).Allowed {
				admitted = append(admitted, a)
			}
		}
		for i := range admitted {
			var sum int64
			for j := i; j < len(admitted); j++ {
				sum += admitted[j].cost
				d := time.Duration(admitted[j].now - admitted[i].now)
				if bound := float64(p.EffectiveBurst()) + perSec*d.Seconds(); float64(sum) > bound+1e-6 {
					t.Fatalf("%v: %d admitted in %v, more than burst + rate·d = %.3f", p, sum, d, bound)
				}
			}
		}
	}
}

func ExampleTokenBucket() {
	// 10 per second with a burst of 5: a full bucket, then a token every 100 ms.
	tb := NewTokenBucket(Policy{Limit: 10, Window: time.Second, Burst: 5})
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	fmt.Println(tb.Allow(0, now, 5))
	fmt.Println(tb.Allow(0, now, 1))
	fmt.Println(tb.Allow(0, now+int64(100*time.Millisecond), 1))
	// Output:
	// {true 0 0s 500ms 0s}
	// {false 0 100ms 500ms 0s}
	// {true 0 0s 500ms 0s}
}
