package tune

import (
	"slices"
	"sync"
	"time"
)

// skipRule names a proof that a candidate never refuses a key, from one pass over the
// key's arrivals; a key so proven is admitted whole without running the limiter. Each
// rule is checked against running the limiter by a test (TestSkipRulesAgreeWithLimiters).
type skipRule uint8

const (
	skipNone skipRule = iota
	// skipCurve: a bucket of capacity B refilled at r never refuses a key whose
	// arrival curve — the most the key ever runs ahead of r, max over i ≤ j of
	// cost(i..j) − r·(t_j − t_i) — is at most B. One pass (the Lindley recursion).
	skipCurve
	// skipAligned: a fixed window never refuses a key that never sends more than L in
	// one aligned window.
	skipAligned
	// skipTwoAligned: the two-counter window's estimate is at most the previous window's
	// count plus the current one's, so a key that never sends more than L in two
	// consecutive aligned windows is never refused.
	skipTwoAligned
	// skipTrailing: the sliding log never refuses a key that never sends more than L in
	// any trailing window.
	skipTrailing
)

// curveMargin keeps the curve's proof clear of rounding: the limiter's float arithmetic
// and the curve's may differ in the last bits, so a key within this share of the
// capacity is run rather than skipped.
const curveMargin = 1e-9

// profiles caches what the skip rules and the figures of skipped keys read per keying:
// per window, each key's most cost in one trailing window, in one aligned window and in
// two consecutive aligned ones; per rate, each key's arrival curve.
type profiles struct {
	s  *Sample
	kg *Keying

	mu     sync.Mutex
	window map[time.Duration]*onceInts
	align  map[time.Duration]*onceInts
	two    map[time.Duration]*onceInts
	curve  map[[2]int64]*onceFloats

	legitOnce sync.Once
	legitKeys []int
}

// byLegit lists the keys with legitimate requests, the most first: a probe that breaks
// a goal breaks it soonest on the busiest keys.
func (p *profiles) byLegit() []int {
	p.legitOnce.Do(func() {
		for k, n := range p.kg.keyLegit {
			if n > 0 {
				p.legitKeys = append(p.legitKeys, k)
			}
		}
		slices.SortStableFunc(p.legitKeys, func(a, b int) int { return int(p.kg.keyLegit[b] - p.kg.keyLegit[a]) })
	})
	return p.legitKeys
}

type onceInts struct {
	once sync.Once
	v    []int64
}

type onceFloats struct {
	once sync.Once
	v    []float64
}

func newProfiles(s *Sample, kg *Keying) *profiles {
	return &profiles{s: s, kg: kg, window: map[time.Duration]*onceInts{}, align: map[time.Duration]*onceInts{},
		two: map[time.Duration]*onceInts{}, curve: map[[2]int64]*onceFloats{}}
}

func (p *profiles) ints(m map[time.Duration]*onceInts, w time.Duration, f func(time.Duration) []int64) []int64 {
	p.mu.Lock()
	e := m[w]
	if e == nil {
		e = &onceInts{}
		m[w] = e
	}
	p.mu.Unlock()
	e.once.Do(func() { e.v = f(w) })
	return e.v
}

// trailing is each key's most cost in any trailing window (t−w, t]: its
// peak_window_admitted when everything is admitted.
func (p *profiles) trailing(w time.Duration) []int64 {
	return p.ints(p.window, w, func(w time.Duration) []int64 {
		out := make([]int64, p.kg.Keys())
		for k := range out {
			reqs := p.kg.order[p.kg.start[k]:p.kg.start[k+1]]
			var sum, peak int64
			j := 0
			for _, i := range reqs {
				t := p.s.times[i]
				for p.s.times[reqs[j]] <= t-int64(w) {
					sum -= p.s.cost(reqs[j])
					j++
				}
				sum += p.s.cost(i)
				peak = max(peak, sum)
			}
			out[k] = peak
		}
		return out
	})
}

// aligned is each key's most cost in one window aligned to the clock (floor(t/w)), and
// with pair set in two consecutive ones.
func (p *profiles) aligned(w time.Duration, pair bool) []int64 {
	m := p.align
	if pair {
		m = p.two
	}
	return p.ints(m, w, func(w time.Duration) []int64 {
		out := make([]int64, p.kg.Keys())
		for k := range out {
			reqs := p.kg.order[p.kg.start[k]:p.kg.start[k+1]]
			var cur, prev, peak int64
			win := int64(-1 << 62)
			for _, i := range reqs {
				n := floorDiv(p.s.times[i], int64(w))
				switch {
				case n == win:
				case n == win+1:
					prev, cur = cur, 0
				default:
					prev, cur = 0, 0
				}
				win = n
				cur += p.s.cost(i)
				if pair {
					peak = max(peak, prev+cur)
				} else {
					peak = max(peak, cur)
				}
			}
			out[k] = peak
		}
		return out
	})
}

// arrivalCurve is each key's arrival curve at the rate of l per w: the smallest bucket
// that admits all of its traffic.
func (p *profiles) arrivalCurve(l int64, w time.Duration) []float64 {
	p.mu.Lock()
	e := p.curve[[2]int64{l, int64(w)}]
	if e == nil {
		e = &onceFloats{}
		p.curve[[2]int64{l, int64(w)}] = e
	}
	p.mu.Unlock()
	e.once.Do(func() {
		rate := float64(l) / float64(w) // units per ns
		out := make([]float64, p.kg.Keys())
		for k := range out {
			reqs := p.kg.order[p.kg.start[k]:p.kg.start[k+1]]
			var deficit, peak float64
			last := int64(0)
			for n, i := range reqs {
				t := p.s.times[i]
				if n > 0 {
					deficit = max(0, deficit-rate*float64(t-last))
				}
				last = t
				deficit += float64(p.s.cost(i))
				peak = max(peak, deficit)
			}
			out[k] = peak
		}
		e.v = out
	})
	return e.v
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// skipper says, for one candidate, which keys it provably never refuses.
type skipper func(key int) bool

func (p *profiles) skipper(rule skipRule, l int64, w time.Duration, b int64) skipper {
	switch rule {
	case skipCurve:
		curve, capacity := p.arrivalCurve(l, w), float64(b)
		return func(k int) bool { return curve[k] <= capacity*(1-curveMargin)-curveMargin }
	case skipAligned, skipTwoAligned:
		most := p.aligned(w, rule == skipTwoAligned)
		return func(k int) bool { return most[k] <= l }
	case skipTrailing:
		most := p.trailing(w)
		return func(k int) bool { return most[k] <= l }
	}
	return func(int) bool { return false }
}
