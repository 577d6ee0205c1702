package worstcase

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// TestWorstPossibleNeverBelowObserved: a proven bound the engine measured more than is
// not printed as the worst possible; the measurement is, marked found.
func TestWorstPossibleNeverBelowObserved(t *testing.T) {
	pol := algorithms.Policy{Limit: 20, Window: 10 * time.Second}
	for _, c := range []struct {
		bound    float64
		reached  bool
		peak     int64
		figure   string
		provenOK bool
	}{
		{40, true, 40, "40", true},
		{40, false, 39, "<40", true},
		{39, true, 40, "40", false},
		{0, false, 39, "39", false},
	} {
		x := Result{Target: Target{Policy: pol}, Known: c.bound > 0,
			Bound: Bound{Value: c.bound, Reached: c.reached}, Worst: Measure{Peak: c.peak}}
		figure, _, proven := WorstPossible(x)
		if figure != c.figure || proven != c.provenOK {
			t.Errorf("bound %v (reached %v), measured %d: %s proven %v, want %s proven %v", c.bound, c.reached, c.peak, figure, proven, c.figure, c.provenOK)
		}
	}
}
