package tune

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Range is a set of whole numbers to search: a list (Values), or every number from Lo to
// Hi, bisected; Lo and Hi 0 mean chosen from the sample.
type Range struct {
	Lo, Hi int64
	Values []int64
}

// Auto says the range is left to the search.
func (r Range) Auto() bool { return r.Lo == 0 && r.Hi == 0 && len(r.Values) == 0 }

// String writes the range as ParseRange reads it ("" when automatic).
func (r Range) String() string {
	if len(r.Values) > 0 {
		s := make([]string, len(r.Values))
		for i, v := range r.Values {
			s[i] = strconv.FormatInt(v, 10)
		}
		return strings.Join(s, ",")
	}
	if r.Auto() {
		return ""
	}
	return fmt.Sprintf("%d..%d", r.Lo, r.Hi)
}

// ParseRange reads "50..500" (every whole number between, bisected), "50,100,200" or
// "100"; each number at least 1.
func ParseRange(s string) (Range, error) {
	num := func(x string) (int64, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil || v < 1 || v > 1<<52 {
			return 0, fmt.Errorf("%q is not a whole number from 1 to 2^52", strings.TrimSpace(x))
		}
		return v, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		a, err := num(lo)
		if err != nil {
			return Range{}, err
		}
		b, err := num(hi)
		if err != nil {
			return Range{}, err
		}
		if b < a {
			return Range{}, fmt.Errorf("%q: the range is empty (%d is above %d)", s, a, b)
		}
		return Range{Lo: a, Hi: b}, nil
	}
	var r Range
	for _, part := range strings.Split(s, ",") {
		v, err := num(part)
		if err != nil {
			return Range{}, err
		}
		if !slices.Contains(r.Values, v) {
			r.Values = append(r.Values, v)
		}
	}
	slices.Sort(r.Values)
	return r, nil
}

// Space is what Search may choose among.
type Space struct {
	// Families are the algorithms and products searched (Families lists them).
	Families []string
	// Keys are the key specs; each must be a keying of the sample.
	Keys []string
	// Windows are the windows W of the promise "L per W".
	Windows []time.Duration
	// Limits are the values of L; Bursts a bucket's capacities (what passes at once).
	Limits, Bursts Range
}

// ErrEmptySpace is wrapped by Search when no candidate can be formed.
var ErrEmptySpace = errors.New("the search space is empty")

// Point is an evaluated candidate: its figures and how it fares against the goals.
type Point struct {
	Candidate
	Metrics
	// Meets says every goal holds; Miss sums by how much the goals that fail miss,
	// each relative to its bound.
	Meets bool    `json:"meets_goals"`
	Miss  float64 `json:"miss"`
}

// GoalCost says what one goal costs: the pick with the goal tightened (a legit-side
// goal, ten times stricter) or dropped (the others), beside the recommendation.
type GoalCost struct {
	Goal Goal `json:"goal"`
	// Change is "tightened" or "dropped"; With is the goal as changed ("" when dropped).
	Change string `json:"change"`
	With   string `json:"with,omitempty"`
	// Pick is the best candidate under the changed goals; nil when none meets them.
	Pick *Point `json:"pick"`
}

// Result is a search's outcome.
type Result struct {
	Goals []Goal
	Space Space
	// Evaluated counts the candidates run over every key; Probes the bisection's runs
	// over the keys with legitimate requests.
	Evaluated, Probes int
	// Points are every candidate run over every key, in search order; Front the ones no
	// other beats on legit refused, attacker admitted and backend peak at once.
	Points []Point
	Front  []Point
	// Recommended is the best point meeting every goal (nil when none does); Closest,
	// then, the one that misses least.
	Recommended, Closest *Point
	// RunnersUp are, per family, the best point meeting every goal other than the
	// recommendation.
	RunnersUp []Point
	Costs     []GoalCost
}

// ladderSteps is how many limits the search runs whole for each window; the bisection's
// answer is run beside them.
const ladderSteps = 6

// combo is the search of one family, keying and window.
type combo struct {
	f   *Family
	kg  *Keying
	w   time.Duration
	out []Point
	n   int // probes
	err error
}

// Search runs the candidates of sp over s and judges them by goals, on workers
// goroutines (at least 1). Every candidate's figures are those of a run of it over the
// whole sample.
func Search(s *Sample, sp Space, goals []Goal, workers int) (*Result, error) {
	var combos []*combo
	profs := map[string]*profiles{}
	for _, key := range sp.Keys {
		kg := s.Keying(key)
		if kg == nil {
			return nil, fmt.Errorf("the sample is not keyed by %s", key)
		}
		profs[key] = newProfiles(s, kg)
		for _, name := range sp.Families {
			f, err := LookupFamily(name)
			if err != nil {
				return nil, err
			}
			for _, w := range sp.Windows {
				if _, ok := f.spec(1, w, 2); !ok {
					continue
				}
				combos = append(combos, &combo{f: f, kg: kg, w: w})
			}
		}
	}
	if len(combos) == 0 || s.Requests() == 0 {
		return nil, fmt.Errorf("%w: no family can express a window of %s", ErrEmptySpace, windowList(sp.Windows))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(workers, 1))
	for _, c := range combos {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.out, c.n, c.err = searchCombo(s, profs[c.kg.Key], c.f, c.w, sp, goals)
		}()
	}
	wg.Wait()
	res := &Result{Goals: goals, Space: sp}
	for _, c := range combos {
		if c.err != nil {
			return nil, c.err
		}
		res.Points = append(res.Points, c.out...)
		res.Probes += c.n
	}
	res.Evaluated = len(res.Points)
	if res.Evaluated == 0 {
		return nil, fmt.Errorf("%w: no limit in %s fits the families' units", ErrEmptySpace, sp.Limits)
	}
	for i := range res.Points {
		judge(&res.Points[i], goals)
	}
	res.Front = front(res.Points)
	res.Recommended, res.Closest = pick(res.Points)
	if res.Recommended != nil {
		res.RunnersUp = runnersUp(res.Points, res.Recommended)
		costs, probes, err := goalCosts(s, profs, res, sp, goals)
		if err != nil {
			return nil, err
		}
		res.Costs, res.Probes = costs, res.Probes+probes
	}
	return res, nil
}

func windowList(ws []time.Duration) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i], _ = productDuration(w)
	}
	return strings.Join(s, ",")
}

// searchCombo searches one family on one keying and window: for a window family the
// smallest limit meeting the legit-side goals (bisected) and a ladder of limits; for a
// bucket, at each limit of the ladder, the smallest burst meeting them.
func searchCombo(s *Sample, prof *profiles, f *Family, w time.Duration, sp Space, goals []Goal) ([]Point, int, error) {
	e := newEvaluator(s, prof.kg, prof)
	probes := 0
	ok := func(l, b int64) (bool, error) {
		probes++
		c, _ := candidate(f, prof.kg.Key, l, w, b)
		return e.legitOK(f, c, goals)
	}
	limits := sp.Limits.Values
	hi := limitCeiling(prof, w)
	lo := int64(1)
	if !sp.Limits.Auto() && len(limits) == 0 {
		lo, hi = sp.Limits.Lo, sp.Limits.Hi
	}
	if len(limits) == 0 {
		limits = ladder(lo, hi, ladderSteps)
	}
	var out []Point
	run := func(l, b int64) error {
		c, expressible := candidate(f, prof.kg.Key, l, w, b)
		if !expressible {
			return nil
		}
		for _, p := range out {
			if p.Candidate == c {
				return nil
			}
		}
		m, err := e.run(f, c, nil)
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		out = append(out, Point{Candidate: c, Metrics: *m})
		return nil
	}
	legitMet := func() bool {
		p := &out[len(out)-1]
		for _, g := range goals {
			if g.legitSide() && g.miss(g.value(&p.Metrics)) > 0 {
				return false
			}
		}
		return true
	}
	if !f.Bucket {
		// The ladder first: its runs bracket the least limit meeting the legit-side
		// goals, and the bisection searches only between its neighbours.
		blo, bhi := lo, hi
		for _, l := range limits {
			if err := run(l, 0); err != nil {
				return nil, probes, err
			}
			if out[len(out)-1].Limit != l {
				continue
			}
			if legitMet() {
				bhi = min(bhi, l)
			} else if l < bhi {
				blo = max(blo, l+1)
			}
		}
		if len(sp.Limits.Values) == 0 && blo <= bhi {
			best, err := bisect(blo, bhi, func(l int64) (bool, error) { return ok(l, 0) })
			if err != nil {
				return nil, probes, err
			}
			if err := run(best, 0); err != nil {
				return nil, probes, err
			}
		}
		return out, probes, nil
	}
	// From the highest rate down: a lower rate never needs a smaller burst, so the least
	// burst at one rate is where the bisection at the next starts.
	floor := int64(0)
	for li := len(limits) - 1; li >= 0; li-- {
		l := limits[li]
		if _, expressible := f.spec(l, w, 2); !expressible {
			continue
		}
		if len(sp.Bursts.Values) > 0 {
			for _, b := range sp.Bursts.Values {
				if err := run(l, b); err != nil {
					return nil, probes, err
				}
			}
			continue
		}
		blo, bhi := sp.Bursts.Lo, sp.Bursts.Hi
		if sp.Bursts.Auto() {
			blo, bhi = 1, burstCeiling(prof, l, w)
		}
		if floor > blo {
			blo, bhi = min(floor, bhi), max(bhi, floor)
		}
		best, err := bisect(blo, bhi, func(b int64) (bool, error) { return ok(l, b) })
		if err != nil {
			return nil, probes, err
		}
		if err := run(l, best); err != nil {
			return nil, probes, err
		}
		if legitMet() {
			floor = best
		}
		// Below the least burst meeting the goals, the front: fewer attacker requests
		// through for some legitimate ones refused.
		for _, b := range []int64{best / 2} {
			if b >= max(sp.Bursts.Lo, 1) {
				if err := run(l, b); err != nil {
					return nil, probes, err
				}
			}
		}
	}
	return out, probes, nil
}

// limitCeiling is a limit per w above which no window family refuses anything: the most
// any key sends in two consecutive aligned windows (at least what it sends in any
// trailing one).
func limitCeiling(prof *profiles, w time.Duration) int64 {
	hi := int64(1)
	for _, v := range prof.aligned(w, true) {
		hi = max(hi, v)
	}
	for _, v := range prof.trailing(w) {
		hi = max(hi, v)
	}
	return hi
}

// burstCeiling is a burst that admits every legitimate key's traffic at l per w: the
// largest arrival curve among keys with legitimate requests, and one more for the
// products that count a burst beside the request that passes.
func burstCeiling(prof *profiles, l int64, w time.Duration) int64 {
	curve := prof.arrivalCurve(l, w)
	var most float64
	for k, v := range curve {
		if prof.kg.keyLegit[k] > 0 {
			most = max(most, v)
		}
	}
	return max(int64(math.Ceil(most))+1, 1)
}

// bisect returns the smallest v in [lo, hi] for which ok holds, taking ok as monotone
// (false below some v, true from it); hi when ok holds nowhere.
func bisect(lo, hi int64, ok func(int64) (bool, error)) (int64, error) {
	for lo < hi {
		mid := lo + (hi-lo)/2
		good, err := ok(mid)
		if err != nil {
			return 0, err
		}
		if good {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi, nil
}

// ladder is up to n whole numbers from lo to hi, spaced geometrically, both ends
// included.
func ladder(lo, hi int64, n int) []int64 {
	if hi <= lo || n < 2 {
		return []int64{lo}
	}
	var out []int64
	ratio := math.Pow(float64(hi)/float64(lo), 1/float64(n-1))
	for i := range n {
		v := int64(math.Round(float64(lo) * math.Pow(ratio, float64(i))))
		v = min(max(v, lo), hi)
		if len(out) == 0 || v > out[len(out)-1] {
			out = append(out, v)
		}
	}
	if out[len(out)-1] != hi {
		out = append(out, hi)
	}
	return out
}

// candidate writes the family's candidate of l per w and burst b, keyed on key, with
// its canonical spec; false when the family cannot express it.
func candidate(f *Family, key string, l int64, w time.Duration, b int64) (Candidate, bool) {
	text, ok := f.spec(l, w, b)
	if !ok {
		return Candidate{}, false
	}
	if !f.Bucket {
		b = 0
	}
	return Candidate{Family: f.Name, Spec: canonical(text), Key: key, Limit: l, Window: w, Burst: b}, true
}

var (
	canonicalMu sync.Mutex
	canonicals  = map[string]string{}
)

// canonical is the spec as every output names it (the parameters in the kind's order).
func canonical(text string) string {
	canonicalMu.Lock()
	defer canonicalMu.Unlock()
	if c, ok := canonicals[text]; ok {
		return c
	}
	c := text
	if spec, err := parseSpec(text); err == nil {
		c = spec
	}
	canonicals[text] = c
	return c
}

func judge(p *Point, goals []Goal) {
	p.Meets, p.Miss = true, 0
	for _, g := range goals {
		if m := g.miss(g.value(&p.Metrics)); m > 0 {
			p.Meets = false
			p.Miss += m
		}
	}
}

// better orders points by the default objective: fewer attacker requests admitted,
// then a lower backend peak, then less state per key, then fewer legit refusals, then
// the smaller limit and burst.
func better(a, b *Point) bool {
	switch {
	case a.AttackerAdmitted != b.AttackerAdmitted:
		return a.AttackerAdmitted < b.AttackerAdmitted
	case a.BackendPeak != b.BackendPeak:
		return a.BackendPeak < b.BackendPeak
	case a.StateBytesPerKey != b.StateBytesPerKey:
		return a.StateBytesPerKey < b.StateBytesPerKey
	case a.LegitRejected != b.LegitRejected:
		return a.LegitRejected < b.LegitRejected
	case a.Limit != b.Limit:
		return a.Limit < b.Limit
	case a.Burst != b.Burst:
		return a.Burst < b.Burst
	case a.Window != b.Window:
		return a.Window < b.Window
	}
	return a.Spec+a.Key < b.Spec+b.Key
}

func pick(points []Point) (best, closest *Point) {
	for i := range points {
		p := &points[i]
		if p.Meets {
			if best == nil || better(p, best) {
				best = p
			}
			continue
		}
		if closest == nil || p.Miss < closest.Miss || (p.Miss == closest.Miss && better(p, closest)) {
			closest = p
		}
	}
	if best != nil {
		return clonePoint(best), nil
	}
	return nil, clonePoint(closest)
}

func clonePoint(p *Point) *Point {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

func runnersUp(points []Point, rec *Point) []Point {
	byFamily := map[string]*Point{}
	for i := range points {
		p := &points[i]
		if !p.Meets || p.Candidate == rec.Candidate {
			continue
		}
		if b := byFamily[p.Family]; b == nil || better(p, b) {
			byFamily[p.Family] = p
		}
	}
	var out []Point
	for _, name := range Families() {
		if p := byFamily[name]; p != nil {
			out = append(out, *p)
		}
	}
	return out
}

// front is the points no other point beats on all of legit refused, attacker admitted
// and backend peak (and equals on none), sorted by legit refused.
func front(points []Point) []Point {
	var out []Point
	for i := range points {
		a := &points[i]
		dominated := false
		for j := range points {
			b := &points[j]
			if i == j {
				continue
			}
			le := b.LegitRejected <= a.LegitRejected && b.AttackerAdmitted <= a.AttackerAdmitted && b.BackendPeak <= a.BackendPeak
			lt := b.LegitRejected < a.LegitRejected || b.AttackerAdmitted < a.AttackerAdmitted || b.BackendPeak < a.BackendPeak
			// Of equal points, the better by the objective stands for them.
			if le && (lt || better(b, a)) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, *a)
		}
	}
	slices.SortStableFunc(out, func(a, b Point) int {
		if a.LegitRejected != b.LegitRejected {
			return cmp.Compare(a.LegitRejected, b.LegitRejected)
		}
		if better(&a, &b) {
			return -1
		}
		return 1
	})
	return out
}

// goalCosts says what each goal costs against the recommendation: a legit-side goal
// tightened tenfold, at the recommendation's family, key, window (and rate, for a
// bucket), re-bisected; any other goal dropped, the pick among the points run.
func goalCosts(s *Sample, profs map[string]*profiles, res *Result, sp Space, goals []Goal) ([]GoalCost, int, error) {
	rec := res.Recommended
	f, err := LookupFamily(rec.Family)
	if err != nil {
		return nil, 0, err
	}
	prof := profs[rec.Key]
	e := newEvaluator(s, prof.kg, prof)
	probes := 0
	var out []GoalCost
	for gi, g := range goals {
		changed := slices.Clone(goals)
		if !g.legitSide() || g.Max == 0 {
			changed = slices.Delete(changed, gi, gi+1)
			points := slices.Clone(res.Points)
			for i := range points {
				judge(&points[i], changed)
			}
			best, _ := pick(points)
			out = append(out, GoalCost{Goal: g, Change: "dropped", Pick: best})
			continue
		}
		tight := g
		tight.Max = g.Max / 10
		tight.Text = string(g.Metric) + "<=" + tightText(g)
		changed[gi] = tight
		ok := func(l, b int64) (bool, error) {
			probes++
			c, _ := candidate(f, rec.Key, l, rec.Window, b)
			return e.legitOK(f, c, changed)
		}
		l, b := rec.Limit, rec.Burst
		if f.Bucket {
			hi := burstCeiling(prof, l, rec.Window)
			if !sp.Bursts.Auto() && len(sp.Bursts.Values) == 0 {
				hi = sp.Bursts.Hi
			}
			if b, err = bisect(rec.Burst, max(hi, rec.Burst), func(b int64) (bool, error) { return ok(l, b) }); err != nil {
				return nil, probes, err
			}
		} else {
			hi := limitCeiling(prof, rec.Window)
			if l, err = bisect(rec.Limit, max(hi, rec.Limit), func(l int64) (bool, error) { return ok(l, 0) }); err != nil {
				return nil, probes, err
			}
		}
		c, _ := candidate(f, rec.Key, l, rec.Window, b)
		m, err := e.run(f, c, nil)
		if err != nil {
			return nil, probes, err
		}
		p := &Point{Candidate: c, Metrics: *m}
		judge(p, changed)
		if !p.Meets {
			p = nil
		}
		out = append(out, GoalCost{Goal: g, Change: "tightened", With: tight.Text, Pick: p})
	}
	return out, probes, nil
}

// tightText writes a share goal's bound ten times stricter, in percent.
func tightText(g Goal) string {
	v := strconv.FormatFloat(g.Max/10*100, 'g', 6, 64) + "%"
	if g.Percentile > 0 {
		v += "@p" + strconv.FormatFloat(g.Percentile*100, 'g', 6, 64)
	}
	return v
}
