package traffic

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

const (
	testBase = 5 * time.Millisecond
	testCap  = 2 * time.Second
)

func mustBackoff(t *testing.T, name string) Backoff {
	t.Helper()
	b, err := NewBackoff(name, testBase, testCap)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sample draws n delays for one attempt number with a fixed seed and returns min, max, mean.
func sample(b Backoff, attempt int, prev time.Duration, n int) (lo, hi time.Duration, mean float64) {
	rng := rand.New(rand.NewPCG(7, 11))
	lo, hi = time.Duration(math.MaxInt64), 0
	var sum float64
	for range n {
		d := b.Delay(attempt, prev, rng)
		lo, hi = min(lo, d), max(hi, d)
		sum += float64(d)
	}
	return lo, hi, sum / float64(n)
}

func TestBackoffDistributions(t *testing.T) {
	const n = 200000
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	tests := []struct {
		name     string
		attempt  int
		prev     time.Duration
		lo, hi   time.Duration // every delay in [lo, hi]
		wantMean time.Duration
	}{
		{"none", 3, 0, 0, 0, 0},
		{"constant", 7, 0, testBase, testBase, testBase},
		{"exponential", 1, 0, ms(10), ms(10), ms(10)},
		{"exponential", 4, 0, ms(80), ms(80), ms(80)},
		{"exponential", 20, 0, testCap, testCap, testCap}, // 5ms·2^20 is far above the cap
		{"exponential", 1000, 0, testCap, testCap, testCap},
		// full: uniform [0, v): mean v/2
		{"full-jitter", 1, 0, 0, ms(10), ms(5)},
		{"full-jitter", 4, 0, 0, ms(80), ms(40)},
		{"full-jitter", 30, 0, 0, testCap, time.Second},
		// equal: v/2 + uniform [0, v/2): in [v/2, v), mean 3v/4
		{"equal-jitter", 1, 0, ms(5), ms(10), ms(7.5)},
		{"equal-jitter", 4, 0, ms(40), ms(80), ms(60)},
		{"equal-jitter", 30, 0, time.Second, testCap, 1500 * time.Millisecond},
		// decorrelated: uniform [base, 3·prev): prev=base gives [5, 15), mean 10
		{"decorrelated-jitter", 1, 0, testBase, ms(15), ms(10)},
		{"decorrelated-jitter", 5, ms(100), testBase, ms(300), ms(152.5)},
		// near the cap the draw is clamped: [5ms, 3s) capped at 2s has mean
		// (∫_5^2000 x dx + 2000·1000)/2995 ms
		{"decorrelated-jitter", 9, time.Second, testBase, testCap, ms((2000*2000/2.0 - 5*5/2.0 + 2000*1000) / 2995)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustBackoff(t, tt.name)
			if b.Name() != tt.name {
				t.Fatalf("Name = %q", b.Name())
			}
			lo, hi, mean := sample(b, tt.attempt, tt.prev, n)
			if lo < tt.lo || hi > tt.hi {
				t.Errorf("attempt %d: delays in [%s, %s], want within [%s, %s]", tt.attempt, lo, hi, tt.lo, tt.hi)
			}
			// The mean of n uniform draws is within 1% of the range of the true mean at
			// this n with overwhelming probability; a wrong formula is off by 25% or more.
			tol := 0.01*float64(tt.hi-tt.lo) + 1
			if math.Abs(mean-float64(tt.wantMean)) > tol {
				t.Errorf("attempt %d: mean %s, want %s ± %s", tt.attempt, time.Duration(mean), tt.wantMean, time.Duration(tol))
			}
			if tt.lo != tt.hi && hi-lo < (tt.hi-tt.lo)*9/10 {
				t.Errorf("attempt %d: delays span only [%s, %s] of [%s, %s]", tt.attempt, lo, hi, tt.lo, tt.hi)
			}
		})
	}
}

func TestBackoffSameSeedSameSleeps(t *testing.T) {
	for _, name := range BackoffNames {
		b := mustBackoff(t, name)
		run := func() []time.Duration {
			rng := rand.New(rand.NewPCG(3, 4))
			var out []time.Duration
			prev := time.Duration(0)
			for a := 1; a <= 20; a++ {
				prev = b.Delay(a, prev, rng)
				out = append(out, prev)
			}
			return out
		}
		x, y := run(), run()
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("%s: sleep %d differs between runs with one seed: %s vs %s", name, i, x[i], y[i])
			}
			if x[i] < 0 || x[i] > testCap {
				t.Fatalf("%s: sleep %d = %s outside [0, cap]", name, i, x[i])
			}
		}
	}
}

func TestNewBackoffRejectsBadInput(t *testing.T) {
	for _, tt := range []struct {
		name      string
		base, cap time.Duration
	}{
		{"fibonacci", testBase, testCap},
		{"full-jitter", 0, testCap},
		{"full-jitter", -time.Second, testCap},
		{"full-jitter", time.Second, time.Millisecond},
	} {
		if _, err := NewBackoff(tt.name, tt.base, tt.cap); err == nil {
			t.Errorf("NewBackoff(%q, %s, %s) succeeded", tt.name, tt.base, tt.cap)
		}
	}
}
