package worstcase

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// TestSearchMatchesExhaustiveEnumeration checks the search against every schedule on a
// small grid: 2 per 6 ns, windows aligned at t=0, 0–2 requests at each nanosecond from 0
// to 10 (3^11 schedules). The search must find at least the grid's best, and no more than
// the analytic bound.
func TestSearchMatchesExhaustiveEnumeration(t *testing.T) {
	const instants = 11
	p := algorithms.Policy{Limit: 2, Window: 6 * time.Nanosecond}
	for _, alg := range algorithms.Defaults() {
		target := Target{Algorithm: alg, Policy: p}
		best := exhaustiveBest(t, target, instants)
		r, err := Search(target, 100, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if r.Worst.Peak < best {
			t.Errorf("%s: search found %d, the grid holds a schedule admitting %d", alg, r.Worst.Peak, best)
		}
		if r.Worst.Peak > r.Bound.MaxAdmitted() {
			t.Errorf("%s: search found %d above the bound %.1f", alg, r.Worst.Peak, r.Bound.Value)
		}
		t.Logf("%s: grid best %d, search %d, bound %s = %.2f", alg, best, r.Worst.Peak, r.Bound.Formula, r.Bound.Value)
	}
}

// exhaustiveBest runs every schedule of 0–2 requests at each of the first n nanoseconds
// through a fresh limiter and returns the most admitted in one window.
func exhaustiveBest(t *testing.T, target Target, n int) int64 {
	t.Helper()
	counts := make([]int64, n)
	var best int64
	var admitted []int64
	w := int64(target.window())
	for {
		lim, err := algorithms.New(target.Algorithm, target.Policy)
		if err != nil {
			t.Fatal(err)
		}
		admitted = admitted[:0]
		for at, c := range counts {
			for range c {
				if lim.Allow(0, target.Epoch+int64(at), 1).Allowed {
					admitted = append(admitted, int64(at))
				}
			}
		}
		if peak, _ := peakWindow(admitted, w); peak > best {
			best = peak
		}
		// Next schedule: count in base 3.
		i := 0
		for i < n && counts[i] == 2 {
			counts[i] = 0
			i++
		}
		if i == n {
			return best
		}
		counts[i]++
	}
}
