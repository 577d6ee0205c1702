package worstcase

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
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
	d := &discovery{} // the limiter's own edges do not depend on T: probe them once
	worst, err := searchContext(ctx, t, budget, rng, d)
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
		r, err := searchContext(ctx, at, budget/4, rng, d)
		if err != nil {
			return Findings{}, err
		}
		f.Curve = append(f.Curve, r)
	}
	if err := f.carry(); err != nil {
		return Findings{}, err
	}
	return f, nil
}

// carry keeps the curve from falling below what was already run: a trailing window of
// length T holds one of any shorter length, so the schedule found at a shorter T admits
// at least as much in some window of T. Where the search at T found less (it has a
// quarter of the budget), that schedule is measured again at T and taken, named after
// where it was found; Worst follows the curve's point at W.
func (f *Findings) carry() error {
	for j := 1; j < len(f.Curve); j++ {
		prev, cur := f.Curve[j-1], f.Curve[j]
		if prev.Worst.Peak <= cur.Worst.Peak {
			continue
		}
		m, err := cur.Target.Measure(prev.Schedule)
		if err != nil {
			return err
		}
		if m.Peak > cur.Worst.Peak {
			cur.Worst, cur.Schedule, cur.FoundBy = m, prev.Schedule, prev.FoundBy
			if !strings.Contains(cur.FoundBy, " at T = ") {
				cur.FoundBy += fmt.Sprintf(" at T = %s", prev.Target.T)
			}
			f.Curve[j] = cur
			if cur.Target.T == f.Worst.Target.T {
				f.Worst = cur
			}
		}
	}
	return nil
}
