package backoff

import (
	"math/rand/v2"
	"testing"
)

// The hops' normal draws must be NormFloat64's, draw for draw, leaving the generator where
// NormFloat64 leaves it (the strategies' jitter draws from the same generator next).
func TestNormalsAreNormFloat64(t *testing.T) {
	z := zigguratTables()
	if z == nil {
		t.Fatal("the tables read off NormFloat64 do not reproduce it: every hop goes through NormFloat64")
	}
	common := 0
	for seed := range uint64(20) {
		pcg, ref := rand.NewPCG(seed, ^seed), rand.NewPCG(seed, ^seed)
		rng, refRng := rand.New(pcg), rand.New(ref)
		for n := range 100_000 {
			next := *ref
			if _, ok := z.fast(next.Uint64()); ok {
				common++
			}
			got, want := z.draw(pcg, rng), refRng.NormFloat64()
			if got != want || *pcg != *ref {
				t.Fatalf("seed %d, draw %d: %v, NormFloat64 gives %v (generators equal: %v)", seed, n, got, want, *pcg == *ref)
			}
			if n%7 == 0 { // a jitter draw in between, as a strategy makes
				if rng.Float64() != refRng.Float64() {
					t.Fatalf("seed %d, draw %d: the generators went apart", seed, n)
				}
			}
		}
	}
	// Both ways of a draw are exercised: the common case and NormFloat64's others.
	if total := 20 * 100_000; common == total || common < total*95/100 {
		t.Errorf("%d of %d draws took the common case; want most, not all", common, total)
	}
	var none *normals
	a, b := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	if none.draw(nil, a) != b.NormFloat64() {
		t.Error("a nil table does not draw through NormFloat64")
	}
}
