package worstcase

import (
	"context"
	"math/rand/v2"
	"time"
)

// Findings are what the search found for one algorithm: the worst case at T = W and the
// curve of the worst case over window lengths T.
type Findings struct {
	// Worst is the search at T = the policy's window, with the full budget.
	Worst Result
	// Curve is the worst found at each window length, in increasing T; at T = W it is
	// Worst itself.
	Curve []Result
}

// Find searches t (whose T is ignored) at T = W with budget, then at every other window
// length in spans with a quarter of it, all from rng in that order, so the same rng state
// gives the same findings. spans must be sorted and free of duplicates.
func Find(t Target, budget int, spans []time.Duration, rng *rand.Rand) (Findings, error) {
	return FindContext(context.Background(), t, budget, spans, rng)
}

// FindContext is Find stopped by ctx, as SearchContext is.
func FindContext(ctx context.Context, t Target, budget int, spans []time.Duration, rng *rand.Rand) (Findings, error) {
	t.T = t.Policy.Window
	worst, err := SearchContext(ctx, t, budget, rng)
	if err != nil {
		return Findings{}, err
	}
	f := Findings{Worst: worst}
	for _, T := range spans {
		if T == t.Policy.Window {
			f.Curve = append(f.Curve, worst)
			continue
		}
		at := t
		at.T = T
		r, err := SearchContext(ctx, at, budget/4, rng)
		if err != nil {
			return Findings{}, err
		}
		f.Curve = append(f.Curve, r)
	}
	return f, nil
}
