package probe

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Decision is one request an endpoint decided, as observed from outside: times are
// nanoseconds of Unix time, so that a model on the Unix clock (nginx's milliseconds, a
// fixed window's edges) sees them where the server did.
type Decision struct {
	// Seq is the request's place in the order it was due, from 1 (a probe's retries come
	// after its plan); 0 when unknown.
	Seq  int
	Key  string
	Cost int64
	// Sent is when the request was handed to the connection and Answered when its
	// response's headers came back; both are zero for a decision read from a server's
	// own log, which gives Arrival alone.
	Sent, Answered int64
	// Arrival is when the endpoint decided: Sent plus the one-way estimate of Observed,
	// or the server's own time.
	Arrival  int64
	Status   int
	Admitted bool
	// Tag is the request's tag, when the probe sent one (TagHeader): what finds it in the
	// server's log.
	Tag string
}

// Observed is a set of decisions in order of arrival, with how well their arrivals are
// known.
type Observed struct {
	Decisions []Decision
	// OneWay is what was added to each send time to estimate its arrival: half the least
	// round trip of the run (the fastest exchange, halved: on loopback the two ways are
	// alike).
	OneWay time.Duration
	// Jitter is how far an arrival may be from its estimate: the 99th percentile of how
	// much longer than the least a refusal's round trip took (refusals are answered at
	// once by every limiter modelled; an admission may be queued), over every decision
	// when none was refused, and never less than MinJitter.
	Jitter time.Duration
}

// MinJitter is the least jitter an arrival is given: the millisecond of nginx's and
// HAProxy's clocks, whose ticks begin at an offset from the probe's clock that nothing
// measures.
const MinJitter = time.Millisecond

// Observe turns a probe's exchanges into decisions: those with a verdict (2xx admitted,
// refusedCodes refused), their times made absolute from start, their arrivals estimated
// (see Observed), sorted by estimated arrival.
func Observe(exchanges []Exchange, start time.Time, refusedCodes []int) Observed {
	refused := map[int]bool{}
	for _, c := range refusedCodes {
		refused[c] = true
	}
	base := start.UnixNano()
	var ds []Decision
	for i, x := range exchanges {
		if x.Unsent || x.Err != "" || x.Status == 0 {
			continue
		}
		ok := x.Status >= 200 && x.Status < 300
		if !ok && !refused[x.Status] {
			continue
		}
		ds = append(ds, Decision{Seq: i + 1, Key: x.Key, Cost: max(x.Cost, 1), Sent: base + int64(x.Sent),
			Answered: base + int64(x.Received), Status: x.Status, Admitted: ok, Tag: x.Tag})
	}
	return Estimate(ds)
}

// Estimate sets the arrival of every decision that has send and answer times to Sent +
// OneWay (see Observed), measures the jitter, and sorts them by arrival (stably). Decisions
// without send times (a server's log) keep their arrival and get MinJitter.
func Estimate(ds []Decision) Observed {
	var least int64 = -1
	for _, d := range ds {
		if d.Sent != 0 && d.Answered >= d.Sent && (least < 0 || d.Answered-d.Sent < least) {
			least = d.Answered - d.Sent
		}
	}
	o := Observed{Decisions: ds, Jitter: MinJitter}
	if least >= 0 {
		o.OneWay = time.Duration(least / 2)
		var extra, all []int64
		for i := range ds {
			d := &ds[i]
			if d.Sent == 0 {
				continue
			}
			d.Arrival = d.Sent + least/2
			e := max(d.Answered-d.Sent-least, 0)
			all = append(all, e)
			if !d.Admitted {
				extra = append(extra, e)
			}
		}
		if len(extra) == 0 {
			extra = all
		}
		if len(extra) > 0 {
			slices.Sort(extra)
			o.Jitter = max(o.Jitter, time.Duration(extra[(len(extra)*99+99)/100-1]))
		}
	}
	slices.SortStableFunc(ds, func(a, b Decision) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return o
}

// Agreement is how a model's decisions compare with an endpoint's, decision by decision.
type Agreement struct {
	// Spec is the model's canonical spec; Policy the promise a textbook algorithm was
	// configured by (a product's model reads its own parameters).
	Spec   string
	Policy algorithms.Policy
	// Decisions is how many were compared; Agreed how many the model decided as the
	// endpoint did on the estimated arrivals; WithinJitter how many more it decides so
	// with the request's arrival moved by at most the jitter (and no more differences
	// elsewhere for it).
	Decisions, Agreed, WithinJitter int
	// Differences are the decisions the model does not reproduce even so, with the
	// jittered ones, in order of arrival.
	Differences []Difference
	// Model is the model's decision for each decision, in the order of Observed, after
	// the moves within jitter.
	Model []bool
	// Jitter is the observation's.
	Jitter time.Duration
}

// Difference is one decision where the model and the endpoint part.
type Difference struct {
	// Index is the decision's place in Observed.Decisions.
	Index int
	// Observed is the endpoint's decision and Model the model's on the estimated arrival.
	Observed, Model bool
	// WithinJitter says the model decides as the endpoint did with the arrival moved by
	// Moved (at most the jitter either way).
	WithinJitter bool
	Moved        time.Duration
}

// Rate is the share of decisions agreed, those within jitter counted: 0 with none.
func (a Agreement) Rate() float64 {
	if a.Decisions == 0 {
		return 0
	}
	return float64(a.Agreed+a.WithinJitter) / float64(a.Decisions)
}

// String is "n of N decisions (x%)".
func (a Agreement) String() string {
	return fmt.Sprintf("%d of %d decisions (%.2f%%)", a.Agreed+a.WithinJitter, a.Decisions, 100*a.Rate())
}

// maxJitterTries bounds how many differences Agree tries to explain by jitter: a model
// that is plainly wrong differs everywhere, and each try replays every decision.
const maxJitterTries = 200

// Agree judges the observed decisions against the model spec names (any spec
// algorithms.Parse reads; a textbook algorithm is configured by policy), fed the
// estimated arrivals in order, and returns the agreement. It is what another command
// calls to verify a deployed configuration.
//
// Going through the decisions in order, one the model decides otherwise is tried again
// with its arrival moved by the jitter, and by half of it, each way (the model replayed
// afresh); a move is kept when the model then decides every decision up to this one as
// the endpoint did (but those already found to differ whatever the jitter), and the walk
// goes on from there with the move in place. A model whose state parted from the
// server's at a request near an edge parts on the requests after it too: the move brings
// them back. A decision no move reproduces is a real difference.
func Agree(obs Observed, spec string, policy algorithms.Policy) (Agreement, error) {
	return agree(obs, spec, policy, len(obs.Decisions))
}

// agree is Agree giving up on moves once more than maxReal decisions differ whatever
// the jitter (the rest count as differences): Identify needs no more of a candidate
// that can no longer rank first.
func agree(obs Observed, spec string, policy algorithms.Policy, maxReal int) (Agreement, error) {
	s, err := algorithms.Parse(spec)
	if err != nil {
		return Agreement{}, err
	}
	if _, err := newLimiter(s, policy); err != nil {
		return Agreement{}, err
	}
	ds := obs.Decisions
	a := Agreement{Spec: s.Text, Policy: policy, Decisions: len(ds), Jitter: obs.Jitter}
	keys := keyIDs(ds)
	arrivals := make([]int64, len(ds))
	for i, d := range ds {
		arrivals[i] = d.Arrival
	}
	model := replay(s, policy, ds, keys, arrivals)
	estimated := slices.Clone(model)
	j := int64(obs.Jitter)
	moves := []int64{-j, j, -j / 2, j / 2}
	moved := map[int]time.Duration{}
	real := map[int]bool{}
	// agreesTo says m decides every decision up to i as observed, but for those already
	// found to differ whatever the jitter.
	agreesTo := func(m []bool, i int) bool {
		for k := 0; k <= i; k++ {
			if m[k] != ds[k].Admitted && !real[k] {
				return false
			}
		}
		return true
	}
	tries := 0
	for i := range ds {
		if model[i] == ds[i].Admitted {
			continue
		}
		if tries == maxJitterTries || len(real) > maxReal {
			real[i] = true
			continue
		}
		tries++
		fixed := false
	search:
		for _, c := range moveCandidates(ds, i) {
			for _, m := range moves {
				if m == 0 {
					continue
				}
				trial := slices.Clone(arrivals)
				trial[c] += m
				if got := replay(s, policy, ds, keys, trial); agreesTo(got, i) {
					arrivals, model = trial, got
					moved[i], fixed = time.Duration(m), true
					break search
				}
			}
		}
		if !fixed {
			real[i] = true
		}
	}
	// Agreed counts the decisions the model reproduces on the estimated arrivals and after
	// the moves; those it reproduces only after them (moved, or following a move of an
	// earlier request of the run) are within jitter.
	a.Model = model
	a.Agreed = 0
	for i := range ds {
		switch {
		case model[i] == ds[i].Admitted && estimated[i] == ds[i].Admitted:
			a.Agreed++
		case model[i] == ds[i].Admitted:
			a.WithinJitter++
			a.Differences = append(a.Differences, Difference{Index: i, Observed: ds[i].Admitted, Model: estimated[i], WithinJitter: true, Moved: moved[i]})
		default:
			a.Differences = append(a.Differences, Difference{Index: i, Observed: ds[i].Admitted, Model: estimated[i]})
		}
	}
	return a, nil
}

// newLimiter builds s's limiter for policy, which a textbook algorithm needs valid; a
// product's model is built with a placeholder promise when policy is unset.
func newLimiter(s algorithms.Spec, policy algorithms.Policy) (algorithms.Limiter, error) {
	if len(s.Kind.Params) > 0 && policy.Validate() != nil {
		policy = algorithms.Policy{Limit: 1, Window: time.Second}
	}
	if err := policy.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Text, err)
	}
	return s.Model.New(policy)
}

// keyIDs numbers the decisions' keys in order of first appearance.
func keyIDs(ds []Decision) []uint32 {
	ids := map[string]uint32{}
	out := make([]uint32, len(ds))
	for i, d := range ds {
		id, ok := ids[d.Key]
		if !ok {
			id = uint32(len(ids))
			ids[d.Key] = id
		}
		out[i] = id
	}
	return out
}

// moveCandidates are the decisions whose arrival Agree moves to explain decision i: i
// itself, then the last few decisions of i's key before it. A limiter's decision on i
// depends on its key's state as the earlier requests left it: nginx's bucket one
// millisecond short of refilled refuses the third request of a burst that a full one
// admits, and what makes the difference is when the previous burst's last request
// arrived, a decision both sides agree on.
func moveCandidates(ds []Decision, i int) []int {
	const earlier = 4
	out := []int{i}
	for k := i - 1; k >= 0 && len(out) <= earlier; k-- {
		if ds[k].Key == ds[i].Key {
			out = append(out, k)
		}
	}
	return out
}

// replay runs a fresh limiter of s over the decisions at arrivals, in order of arrival
// (ties in the order given), and returns its decision for each, in the order given.
func replay(s algorithms.Spec, policy algorithms.Policy, ds []Decision, keys []uint32, arrivals []int64) []bool {
	lim, err := newLimiter(s, policy)
	if err != nil {
		return make([]bool, len(ds))
	}
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(arrivals[a], arrivals[b]) })
	out := make([]bool, len(ds))
	for _, i := range order {
		out[i] = lim.Allow(keys[i], arrivals[i], ds[i].Cost).Allowed
	}
	return out
}
