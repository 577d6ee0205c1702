package worstcase

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Result is the worst case found for one Target.
type Result struct {
	Target Target
	// Bound is the analytic bound; Known is false when the algorithm has none.
	Bound Bound
	Known bool
	// Worst is what the engine measured for Schedule: Worst.Peak is the most admitted in
	// one trailing window of length T. It is never a formula's value.
	Worst    Measure
	Schedule Schedule
	// FoundBy names the structured attack that found Worst, or "search from <attack>"
	// when the local search improved on one.
	FoundBy string
	// Structured and Searched count the candidates run through the engine: the structured
	// attacks, and the local search's perturbations (at most the budget).
	Structured, Searched int
}

// OverAdmission is Worst.Peak over the policy's Limit.
func (r Result) OverAdmission() float64 {
	return float64(r.Worst.Peak) / float64(r.Target.Policy.Limit)
}

// candidate is one schedule and what the engine measured for it.
type candidate struct {
	name     string
	schedule Schedule
	measure  Measure
}

// better reports whether a beats b: more admitted in one window, then fewer requests
// (a leaner schedule reads better and searches faster).
func (a candidate) better(b candidate) bool {
	if a.measure.Peak != b.measure.Peak {
		return a.measure.Peak > b.measure.Peak
	}
	return a.measure.Requests < b.measure.Requests
}

// searcher holds what every attack on one target shares.
type searcher struct {
	t        Target
	w        int64 // the policy's window, ns
	span     int64 // the measured window T, ns
	windows  int64 // ⌈T/W⌉
	edge     int64 // an aligned window start at least one window after t=0, as an offset
	big      int64 // the most one instant can get through: max(Limit, Burst)
	gap      int64 // W/L, the spacing of a drip at the advertised rate, ns (at least 1)
	capacity int64 // the most requests a candidate may hold, to bound each run
	// found are the edges the limiter revealed when run (discover), for the local
	// search to place bursts around.
	found []edges
	// discovered, when not nil, is shared by the searches of one Find (see discovery).
	discovered *discovery
	// ctx stops the search between two runs of the limiter: its cause is the error.
	ctx context.Context
}

func newSearcher(t Target) (*searcher, error) {
	if err := t.Policy.Validate(); err != nil {
		return nil, err
	}
	if t.Own == nil {
		if _, err := algorithms.New(t.Algorithm, t.Policy); err != nil {
			return nil, err
		}
	}
	if t.T < 0 {
		return nil, fmt.Errorf("window length T must be positive, got %s", t.T)
	}
	w := int64(t.Policy.Window)
	s := &searcher{
		t:       t,
		w:       w,
		span:    int64(t.window()),
		windows: windowsIn(t.window(), t.Policy.Window),
		big:     max(t.Policy.Limit, t.Policy.EffectiveBurst()),
		gap:     max(w/t.Policy.Limit, 1),
	}
	// Fixed windows start at multiples of W on the Unix clock; find the first one at or
	// after t=0 and step one window further, so attacks can start just before an edge on
	// a key that has never been seen.
	phase := ((t.Epoch % w) + w) % w
	s.edge = (w-phase)%w + w
	s.capacity = 4 * (s.big + t.Policy.Limit) * (s.windows + 2)
	return s, nil
}

// stopped is the cause of the search's context once it has ended, or nil.
func (s *searcher) stopped() error {
	if s.ctx == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// measure runs the engine over sched and names the result.
func (s *searcher) measure(name string, sched Schedule) (candidate, error) {
	if err := s.stopped(); err != nil {
		return candidate{}, err
	}
	sched = sched.normalize()
	m, err := s.t.Measure(sched)
	return candidate{name: name, schedule: sched, measure: m}, err
}

// Search attacks t: first every structured attack, then budget perturbations of the best
// of them (a randomized local search driven by rng, so the same rng state gives the same
// result). Budget 0 runs the structured attacks only. Every candidate is measured by the
// engine; the result is the best measured schedule with refused requests and the requests
// after the peak left out (neither changes what the limiter decided inside the peak
// window, and the engine confirms the peak without them).
func Search(t Target, budget int, rng *rand.Rand) (Result, error) {
	return SearchContext(context.Background(), t, budget, rng)
}

// SearchContext is Search stopped by ctx: once ctx ends, no further candidate is run
// (the one running finishes) and the search returns ctx's cause.
func SearchContext(ctx context.Context, t Target, budget int, rng *rand.Rand) (Result, error) {
	return searchContext(ctx, t, budget, rng, nil)
}

// searchContext is SearchContext with the edges found of t's limiter shared through d
// (nil: found afresh).
func searchContext(ctx context.Context, t Target, budget int, rng *rand.Rand, d *discovery) (Result, error) {
	s, err := newSearcher(t)
	if err != nil {
		return Result{}, err
	}
	s.ctx, s.discovered = ctx, d
	if budget < 0 {
		return Result{}, fmt.Errorf("budget must not be negative, got %d", budget)
	}
	res := Result{Target: t}
	res.Bound, res.Known = t.Bound()
	if !res.Known {
		res.Bound = Bound{Formula: "—", Source: "no analytic bound is known for a limiter rlsim does not ship; the figures are what the search measured"}
	}

	attacks, err := s.structured()
	if err != nil {
		return Result{}, err
	}
	var pool []candidate
	for _, a := range attacks {
		c, err := s.measure(a.name, a.schedule)
		if err != nil {
			return Result{}, err
		}
		res.Structured++
		pool = append(pool, c)
	}
	best := pool[0]
	for _, c := range pool[1:] {
		if c.better(best) {
			best = c
		}
	}
	if budget > 0 {
		best, res.Searched, err = s.localSearch(pool, budget, rng)
		if err != nil {
			return Result{}, err
		}
	}
	best, err = s.prune(best)
	if err != nil {
		return Result{}, err
	}
	res.Worst, res.Schedule, res.FoundBy = best.measure, best.schedule, best.name
	return res, nil
}

// prune drops from c's schedule the refused requests and everything after the window
// that holds the peak (later arrivals cannot change earlier decisions), and keeps the
// pruned schedule when the engine measures the same peak for it.
func (s *searcher) prune(c candidate) (candidate, error) {
	admitted, err := s.t.admissions(c.schedule)
	if err != nil {
		return c, err
	}
	end := int64(c.measure.PeakEnd)
	for len(admitted) > 0 && admitted[len(admitted)-1] > end {
		admitted = admitted[:len(admitted)-1]
	}
	pruned := fromTimes(admitted)
	p, err := s.measure(c.name, pruned)
	if err != nil {
		return c, err
	}
	if p.measure.Peak == c.measure.Peak {
		return p, nil
	}
	return c, nil
}

// fromTimes groups sorted arrival offsets (one request each) into bursts.
func fromTimes(times []int64) Schedule {
	var s Schedule
	for _, t := range times {
		if n := len(s); n > 0 && int64(s[n-1].At) == t {
			s[n-1].Count++
			continue
		}
		s = append(s, Burst{At: time.Duration(t), Count: 1})
	}
	return s
}

// Curve searches t over each window length in spans and returns the worst found for each,
// in the order given.
func Curve(t Target, spans []time.Duration, budget int, rng *rand.Rand) ([]Result, error) {
	out := make([]Result, 0, len(spans))
	for _, T := range spans {
		at := t
		at.T = T
		r, err := Search(at, budget, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
