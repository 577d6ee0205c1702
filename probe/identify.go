package probe

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Pattern is what the observed decisions say about the limiter's parameters, from which
// Identify derives the few values of each parameter it tries.
type Pattern struct {
	// FirstRun is the fewest admissions any key got from its first request to its first
	// refusal, those up to twice the jitter after it counted (keys never refused left
	// out): a bucket that starts full lets its capacity and what refills meanwhile
	// through, a window its limit, so the capacity is at most this.
	FirstRun int64
	// Rate is the long-run admitted rate, per second: over the keys refused at least
	// once and admitted minRateSample times or more over minRateSpan or more after their
	// first run, those admissions divided by the time from the run's end to the last. Rates
	// are that, and the median and the highest of the same figure key by key (a key that
	// slowed down after its refusals lowers the first).
	Rate  float64
	Rates []float64
	// Span is from the first arrival to the last.
	Span time.Duration
	// Delayed says the endpoint held admissions back (at least 10% of them answered more
	// than max(50 ms, 2·jitter) after the quickest exchange): a queueing limiter, as
	// nginx without nodelay.
	Delayed bool
}

// minRateSample is the fewest admissions after its first refusal a key needs for its
// admitted rate to be read.
const minRateSample = 5

// minRateSpan is the shortest time after its first run over which a key's admitted rate
// is read: a burst's stragglers, admitted within milliseconds, say nothing of a rate.
const minRateSpan = 500 * time.Millisecond

// ErrNothingRefused is returned by Identify for an endpoint that refused nothing: there
// is no edge to tell one limiter from another by.
var ErrNothingRefused = errors.New("the endpoint refused nothing: no limit to identify (send more than it admits)")

// ReadPattern reads obs's admission pattern.
func ReadPattern(obs Observed) (Pattern, error) {
	type keyRun struct {
		run, admitted    int64
		refused          bool
		firstRefusal     int64
		lastAdmission    int64
		admittedAfterRun int64
	}
	runs := map[string]*keyRun{}
	var order []string
	var p Pattern
	ds := obs.Decisions
	if len(ds) > 0 {
		p.Span = time.Duration(ds[len(ds)-1].Arrival - ds[0].Arrival)
	}
	var least int64 = -1
	for _, d := range ds {
		if d.Sent != 0 && (least < 0 || d.Answered-d.Sent < least) {
			least = d.Answered - d.Sent
		}
	}
	held, admitted := 0, 0
	threshold := max(50*time.Millisecond, 2*obs.Jitter)
	// An admission up to 2·jitter after the key's first refusal may have arrived before
	// it: requests sent at once reach the server in any order. It counts in the run.
	slack := 2 * int64(obs.Jitter)
	for _, d := range ds {
		k := runs[d.Key]
		if k == nil {
			k = &keyRun{}
			runs[d.Key] = k
			order = append(order, d.Key)
		}
		if !d.Admitted {
			if !k.refused {
				k.refused, k.firstRefusal = true, d.Arrival
			}
			continue
		}
		admitted++
		if least >= 0 && d.Sent != 0 && time.Duration(d.Answered-d.Sent-least) > threshold {
			held++
		}
		switch {
		case !k.refused || d.Arrival <= k.firstRefusal+slack:
			k.run++
		default:
			k.admittedAfterRun++
			k.lastAdmission = d.Arrival
		}
	}
	p.Delayed = admitted > 0 && held*10 >= admitted
	p.FirstRun = -1
	var after int64
	var span time.Duration
	var rates []float64
	for _, key := range order {
		k := runs[key]
		if !k.refused {
			continue
		}
		if p.FirstRun < 0 || k.run < p.FirstRun {
			p.FirstRun = k.run
		}
		if d := time.Duration(k.lastAdmission - k.firstRefusal - slack); k.admittedAfterRun >= minRateSample && d >= minRateSpan {
			after += k.admittedAfterRun
			span += d
			rates = append(rates, float64(k.admittedAfterRun)/d.Seconds())
		}
	}
	if p.FirstRun < 0 {
		return p, ErrNothingRefused
	}
	if span > 0 {
		p.Rate = float64(after) / span.Seconds()
		slices.Sort(rates)
		p.Rates = []float64{p.Rate, rates[len(rates)/2], rates[len(rates)-1]}
	}
	return p, nil
}

// Candidate is one configuration Identify tried and how it agreed.
type Candidate struct {
	// Spec is the canonical spec; Policy configures a textbook algorithm (zero for a
	// product's model, which reads its own parameters).
	Spec   string
	Policy algorithms.Policy
	// Agreement is the candidate's, jitter counted for the best few and on the
	// estimated arrivals alone for the rest.
	Agreement Agreement
}

// Name is the candidate as a person would configure it: the spec, and for a textbook
// algorithm its policy ("gcra --limit 10 --window 1s --burst 21").
func (c Candidate) Name() string {
	if len(algorithms.Lookup(c.Spec).Params) > 0 {
		return c.Spec
	}
	s := fmt.Sprintf("%s --limit %d --window %s", c.Spec, c.Policy.Limit, c.Policy.Window)
	if algorithms.IsBucket(c.Spec) {
		s += fmt.Sprintf(" --burst %d", c.Policy.EffectiveBurst())
	}
	return s
}

// Grid lists the configurations Identify tries for pattern p: every kind of the
// catalogue (algorithms.Kinds), each with the values of its parameters that p makes
// likely, not every combination of every value:
//   - capacities (burst, a window's limit) from FirstRun − 3 to FirstRun, in each kind's
//     own terms (nginx's burst=N passes N+1; HAProxy's gt N passes N and ge N, N − 1);
//   - rates, for the buckets, the whole numbers per second next to each of Rate and Rates
//     (per minute below one a second);
//   - windows and periods, for the window counters, the durations of 1-2-5 steps from
//     100 ms to 1 h and the capacity over each of Rates (to 100 ms), each no longer than
//     the observation.
func Grid(p Pattern) []Candidate {
	var caps []int64
	for c := max(p.FirstRun-3, 1); c <= max(p.FirstRun, 1); c++ {
		caps = append(caps, c)
	}
	// Rates, per second; perMinute says the nginx form is r/m.
	type rate struct {
		perSecond float64
		n         int64
		perMinute bool
	}
	var rates []rate
	seen := map[rate]bool{}
	addRate := func(r rate) {
		if !seen[r] {
			seen[r] = true
			rates = append(rates, r)
		}
	}
	for _, est := range append([]float64{p.Rate}, p.Rates...) {
		if est >= 1 || est == 0 {
			r := max(math.Round(est), 1)
			for n := max(r-1, 1); n <= r+1; n++ {
				addRate(rate{perSecond: n, n: int64(n)})
			}
			continue
		}
		r := max(math.Round(est*60), 1)
		for n := max(r-1, 1); n <= r+1; n++ {
			addRate(rate{perSecond: n / 60, n: int64(n), perMinute: true})
		}
	}
	windows := map[time.Duration]bool{}
	for d := 100 * time.Millisecond; d <= time.Hour; d *= 10 {
		windows[d], windows[2*d], windows[5*d] = true, true, true
	}
	for _, r := range p.Rates {
		if r > 0 {
			windows[time.Duration(float64(p.FirstRun)/r*float64(time.Second)).Round(100*time.Millisecond)] = true
		}
	}
	delete(windows, 0)
	var ws []time.Duration
	for w := range windows {
		if w <= max(p.Span, time.Second) {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)

	var out []Candidate
	add := func(spec string, pol algorithms.Policy) {
		s, err := algorithms.Parse(spec)
		if err != nil {
			return
		}
		if len(s.Kind.Params) == 0 && pol.Validate() != nil {
			return
		}
		out = append(out, Candidate{Spec: s.Text, Policy: pol})
	}
	itoa := func(v int64) string { return strconv.FormatInt(v, 10) }
	seconds := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	nodelay := " nodelay"
	if p.Delayed {
		nodelay = ""
	}
	for _, k := range algorithms.Kinds() {
		for _, c := range caps {
			if k.Bucket || k.Name == algorithms.NginxName || isTokenProduct(k.Name) {
				for _, r := range rates {
					perSecond := algorithms.Policy{Limit: r.n, Window: time.Second, Burst: c}
					if r.perMinute {
						perSecond.Window = time.Minute
					}
					switch k.Name {
					case algorithms.NginxName:
						unit := "r/s"
						if r.perMinute {
							unit = "r/m"
						}
						spec := "nginx:rate=" + itoa(r.n) + unit
						if c > 1 {
							spec += " burst=" + itoa(c-1) + nodelay
						}
						add(spec, algorithms.Policy{})
					case "traefik":
						add("traefik:average="+itoa(r.n)+" period="+map[bool]string{false: "1s", true: "1m"}[r.perMinute]+" burst="+itoa(c), algorithms.Policy{})
					case "aws-apigateway":
						add("aws-apigateway:rate="+strconv.FormatFloat(math.Round(r.perSecond*1000)/1000, 'f', -1, 64)+" burst="+itoa(c), algorithms.Policy{})
					case "spring-gateway":
						if !r.perMinute && r.n <= c {
							add("spring-gateway:replenishRate="+itoa(r.n)+" burstCapacity="+itoa(c), algorithms.Policy{})
						}
					case "envoy-local":
						every := time.Duration(float64(time.Second) / r.perSecond)
						if every >= 50*time.Millisecond {
							add("envoy-local:max_tokens="+itoa(c)+" tokens_per_fill=1 fill_interval="+every.String(), algorithms.Policy{})
						}
						if !r.perMinute {
							add("envoy-local:max_tokens="+itoa(c)+" tokens_per_fill="+itoa(r.n)+" fill_interval=1s", algorithms.Policy{})
						}
					default:
						if k.Bucket {
							add(k.Name, perSecond)
						}
					}
				}
				continue
			}
			for _, w := range ws {
				switch k.Name {
				case algorithms.HAProxyName:
					var period string
					if w%time.Second == 0 {
						period = itoa(int64(w/time.Second)) + "s"
					} else {
						period = itoa(w.Milliseconds()) + "ms"
					}
					// ge N decides as gt N − 1: one of the two is enough.
					add("haproxy:period="+period+" gt="+itoa(c), algorithms.Policy{})
				case "express-rate-limit":
					add("express-rate-limit:windowMs="+itoa(w.Milliseconds())+" limit="+itoa(c), algorithms.Policy{})
				case "rate-limiter-flexible":
					if w%time.Second == 0 {
						add("rate-limiter-flexible:points="+itoa(c)+" duration="+seconds(w), algorithms.Policy{})
					}
				case "kong":
					if unit, ok := map[time.Duration]string{time.Second: "second", time.Minute: "minute", time.Hour: "hour"}[w]; ok {
						add("kong:"+unit+"="+itoa(c), algorithms.Policy{})
					}
				case "envoy-ratelimit":
					if unit, ok := map[time.Duration]string{time.Second: "second", time.Minute: "minute", time.Hour: "hour"}[w]; ok {
						add("envoy-ratelimit:unit="+unit+" requests_per_unit="+itoa(c), algorithms.Policy{})
					}
				default:
					if len(k.Params) == 0 {
						add(k.Name, algorithms.Policy{Limit: c, Window: w})
					}
				}
			}
		}
	}
	return out
}

// isTokenProduct names the products' models that are buckets with a rate and a capacity.
func isTokenProduct(name string) bool {
	switch name {
	case "traefik", "aws-apigateway", "spring-gateway", "envoy-local":
		return true
	}
	return false
}

// admittedFirst returns the arrivals of ds with the requests of a key that arrived
// within 2·jitter of each other (a burst sent at once, which reaches the server in any
// order) put admitted first: the times of such a run stay where they are and are handed
// out to its admissions, then to its refusals, each in the order observed. Every limiter
// of the catalogue admits the first requests of a burst it admits any of, so this is the
// order the server most likely saw; Identify ranks on it before judging the best with
// the jitter.
func admittedFirst(ds []Decision, jitter time.Duration) []int64 {
	out := make([]int64, len(ds))
	byKey := map[string][]int{}
	var keys []string
	for i, d := range ds {
		out[i] = d.Arrival
		if byKey[d.Key] == nil {
			keys = append(keys, d.Key)
		}
		byKey[d.Key] = append(byKey[d.Key], i)
	}
	span := 2 * int64(jitter)
	for _, k := range keys {
		idx := byKey[k]
		for lo := 0; lo < len(idx); {
			hi := lo + 1
			for hi < len(idx) && ds[idx[hi]].Arrival-ds[idx[hi-1]].Arrival <= span {
				hi++
			}
			run := idx[lo:hi]
			ordered := slices.Clone(run)
			slices.SortStableFunc(ordered, func(a, b int) int {
				switch {
				case ds[a].Admitted == ds[b].Admitted:
					return 0
				case ds[a].Admitted:
					return -1
				}
				return 1
			})
			// Times that tie (a server log's milliseconds) are parted by a nanosecond, so
			// that the replay, which takes ties in the order given, keeps this order.
			var prev int64
			for n, i := range ordered {
				out[i] = ds[run[n]].Arrival
				if n > 0 && out[i] <= prev {
					out[i] = prev + 1
				}
				prev = out[i]
			}
			lo = hi
		}
	}
	return out
}

// rejudged is how many of the best of each kind on the estimated arrivals Identify
// judges again with the jitter. Three left the truth out when probes were sent up to 23 ms
// late on a busy machine (nginx at 10r/s ranked below three neighbours of its own kind on
// the estimated arrivals, and 11r/s was named); eight leave more room for that.
const rejudged = 8

// Identify searches the catalogue for the configurations that reproduce obs (Grid of its
// pattern), ranks them by the decisions each reproduces on the estimated arrivals, judges
// the best few of each kind again with the jitter (Agree), and returns the best `best`,
// best first, with the pattern read. Ties go
// to a product's model before a textbook algorithm (a deployed limiter is a product's),
// then to the catalogue's order, then to the spec.
func Identify(obs Observed, best int) ([]Candidate, Pattern, error) {
	p, err := ReadPattern(obs)
	if err != nil {
		return nil, p, err
	}
	grid := Grid(p)
	ds := obs.Decisions
	keys := keyIDs(ds)
	arrivals := admittedFirst(ds, obs.Jitter)
	for i := range grid {
		c := &grid[i]
		s, err := algorithms.Parse(c.Spec)
		if err != nil {
			return nil, p, err
		}
		model := replay(s, c.Policy, ds, keys, arrivals)
		agreed := 0
		for j := range ds {
			if model[j] == ds[j].Admitted {
				agreed++
			}
		}
		c.Agreement = Agreement{Spec: s.Text, Policy: c.Policy, Decisions: len(ds), Agreed: agreed, Jitter: obs.Jitter}
	}
	rank := func(a, b Candidate) int {
		if c := cmp.Compare(b.Agreement.Agreed+b.Agreement.WithinJitter, a.Agreement.Agreed+a.Agreement.WithinJitter); c != 0 {
			return c
		}
		pa, pb := algorithms.Rank(a.Spec) >= 200, algorithms.Rank(b.Spec) >= 200
		if pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(algorithms.Rank(a.Spec), algorithms.Rank(b.Spec)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name(), b.Name())
	}
	slices.SortStableFunc(grid, rank)
	// The ranking on the estimated arrivals alone puts the truth near the top but not
	// always first: requests sent at once arrive in any order, and configurations of
	// other kinds that decide alike crowd the top. The best rejudged of each kind are
	// ranked again, jitter counted.
	perKind := map[string]int{}
	grid = slices.DeleteFunc(grid, func(c Candidate) bool {
		k := algorithms.Lookup(c.Spec).Name
		perKind[k]++
		return perKind[k] > rejudged
	})
	// In order of the ranking so far: a candidate that differs on more decisions than
	// the best judged yet is dropped as soon as that shows.
	bestAgreed := 0
	for i := range grid {
		a, err := agree(obs, grid[i].Spec, grid[i].Policy, len(ds)-bestAgreed)
		if err != nil {
			return nil, p, err
		}
		grid[i].Agreement = a
		bestAgreed = max(bestAgreed, a.Agreed+a.WithinJitter)
	}
	slices.SortStableFunc(grid, rank)
	return grid[:min(max(best, 1), len(grid))], p, nil
}
