package algorithms

import (
	"math/rand/v2"
	"testing"
)

// TestDivisorIsFloorDivision checks div against the hardware division on the divisors the
// models use (rates in thousandths per second, periods in milliseconds) and on random
// ones, at exact multiples, one either side of them, and random numerators up to 2^62.
func TestDivisorIsFloorDivision(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	divisors := []int64{1, 3, 7, 16, 1000, 1001, 10000, 16666, 1_000_000_000_000, 1 << 31}
	for range 200 {
		divisors = append(divisors, 1+rng.Int64N(1<<40))
	}
	for _, d := range divisors {
		v := newDivisor(d)
		for range 2000 {
			var a int64
			switch rng.IntN(3) {
			case 0:
				a = d*rng.Int64N((1<<52)/d+1) + rng.Int64N(3) - 1
			case 1:
				a = rng.Int64N(1 << 52)
			default:
				a = rng.Int64N(1 << 62)
			}
			if a < 0 {
				continue
			}
			if got, want := v.div(a), a/d; got != want {
				t.Fatalf("%d/%d: got %d, want %d", a, d, got, want)
			}
		}
	}
}
