package tune

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// BackendWindow is the span backend_peak is taken over, as replay and compare take it.
const BackendWindow = time.Second

// Candidate is one policy: a family's spec for a limit per window (and burst), keyed on
// Key.
type Candidate struct {
	// Family is the algorithm or product searched ("token-bucket", "nginx").
	Family string `json:"family"`
	// Spec is the spec a run names the candidate by, canonical
	// ("nginx:rate=10r/s burst=4 nodelay"; an algorithm's name for the textbook ones).
	Spec string `json:"algorithm"`
	Key  string `json:"key"`
	// Limit per Window is the promise the candidate is judged against, and a textbook
	// algorithm's policy; Burst is a bucket's capacity (what passes at once; nginx's
	// burst=N is N+1), 0 for a window family.
	Limit  int64         `json:"limit"`
	Window time.Duration `json:"-"`
	Burst  int64         `json:"burst"`
}

// Policy is the candidate's policy, as a replay or a run of it is given.
func (c Candidate) Policy() algorithms.Policy {
	return algorithms.Policy{Limit: c.Limit, Window: c.Window, Burst: c.Burst}
}

// String names the candidate in one line: "token-bucket 100/1m burst 40 by ip".
func (c Candidate) String() string {
	w, _ := productDuration(c.Window)
	s := fmt.Sprintf("%s %d/%s", c.Spec, c.Limit, w)
	if c.Spec != c.Family {
		s = fmt.Sprintf("%s (promise %d/%s)", c.Spec, c.Limit, w)
	} else if c.Burst > 0 {
		s += fmt.Sprintf(" burst %d", c.Burst)
	}
	return s + " by " + c.Key
}

// Metrics are a candidate's figures on the sample, named as a run's are.
type Metrics struct {
	Requests           int64   `json:"requests"`
	Admitted           int64   `json:"admitted"`
	Rejected           int64   `json:"rejected"`
	Legit              int64   `json:"legit"`
	LegitRejected      int64   `json:"legit_rejected"`
	Attacker           int64   `json:"attacker"`
	AttackerAdmitted   int64   `json:"attacker_admitted"`
	PeakWindowAdmitted int64   `json:"peak_window_admitted"`
	OverAdmissionRatio float64 `json:"over_admission"`
	FalseReject        int64   `json:"false_reject"`
	BackendPeak        int64   `json:"backend_peak"`
	StateBytesPerKey   float64 `json:"state_bytes_per_key"`
	Keys               int     `json:"keys"`
	// OverAdmission is OverAdmissionRatio, for Goal.value.
	OverAdmission float64 `json:"-"`

	legitKeys  int
	keyRefused []float64 // the refused share of legit requests of each key with any refused, sorted
}

// LegitRejectRate is the share of legitimate requests refused (0 without any).
func (m *Metrics) LegitRejectRate() float64 { return rate(m.LegitRejected, m.Legit) }

// AttackerAdmitRate is the share of attacker requests admitted (0 without any).
func (m *Metrics) AttackerAdmitRate() float64 { return rate(m.AttackerAdmitted, m.Attacker) }

// FalseRejectRate is the share of requests refused that the promise allowed.
func (m *Metrics) FalseRejectRate() float64 { return rate(m.FalseReject, m.Requests) }

func rate(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// keyRefusedAt is the refused share of a key's legitimate requests at percentile p of
// the keys with legitimate requests (nearest rank).
func (m *Metrics) keyRefusedAt(p float64) float64 {
	n := m.legitKeys
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	rank = min(max(rank, 1), n)
	zeros := n - len(m.keyRefused)
	if rank <= zeros {
		return 0
	}
	return m.keyRefused[rank-zeros-1]
}

// KeyRefusedAt is the refused share of legitimate requests of the key at percentile p
// (0 < p ≤ 1) of the keys that sent any.
func (m *Metrics) KeyRefusedAt(p float64) float64 { return m.keyRefusedAt(p) }

// evaluator runs candidates of one keying; one per goroutine.
type evaluator struct {
	s        *Sample
	kg       *Keying
	prof     *profiles
	refused  []bool // per request, for the backend's pass; reset after each run
	admitted []uint32
	delayed  []delayed
}

type delayed struct {
	i     uint32
	delay time.Duration
}

func newEvaluator(s *Sample, kg *Keying, prof *profiles) *evaluator {
	return &evaluator{s: s, kg: kg, prof: prof, refused: make([]bool, len(s.times))}
}

// budget stops a legit-only run once the legitimate refusals exceed what the goals allow.
type budget struct {
	legit      int64 // most legit requests refused; -1 for no bound
	keyShare   float64
	keysOver   int // most keys over keyShare; -1 for no bound
	keyGoal    bool
	keysSoFar  int
	legitSoFar int64
}

func newBudget(s *Sample, kg *Keying, goals []Goal) *budget {
	b := &budget{legit: -1, keysOver: -1}
	legitKeys := 0
	for _, n := range kg.keyLegit {
		if n > 0 {
			legitKeys++
		}
	}
	if kg.unkeyedLegit > 0 {
		legitKeys++ // the unkeyed requests, refused whole, count as one key
	}
	for _, g := range goals {
		switch g.Metric {
		case LegitRefused:
			n := int64(math.Floor(g.Max*float64(s.legit) + 1e-9))
			if b.legit < 0 || n < b.legit {
				b.legit = n
			}
		case KeyRefused:
			over := int(math.Floor((1-g.Percentile)*float64(legitKeys) + 1e-9))
			if !b.keyGoal || g.Max < b.keyShare || (g.Max == b.keyShare && over < b.keysOver) {
				b.keyShare, b.keysOver, b.keyGoal = g.Max, over, true
			}
		}
	}
	return b
}

// over says the refusals so far already break a legit goal.
func (b *budget) over() bool {
	return (b.legit >= 0 && b.legitSoFar > b.legit) || (b.keyGoal && b.keysSoFar > b.keysOver)
}

// limiter builds c's limiter.
func limiter(c Candidate) (algorithms.Limiter, error) {
	spec, err := algorithms.Parse(c.Spec)
	if err != nil {
		return nil, err
	}
	return spec.Model.New(c.Policy())
}

// legitOK runs c over the keys with legitimate requests only, stopping as soon as the
// refusals break goals, and says whether c meets every legit-side goal. Only keys with
// legitimate requests can break those, and a key's decisions depend on its own arrivals
// alone, so the answer is the full run's.
func (e *evaluator) legitOK(f *Family, c Candidate, goals []Goal) (bool, error) {
	lim, err := limiter(c)
	if err != nil {
		return false, err
	}
	defer algorithms.Finish(lim)
	b := newBudget(e.s, e.kg, goals)
	b.legitSoFar = e.kg.unkeyedLegit
	if e.kg.unkeyedLegit > 0 && b.keyGoal && b.keyShare < 1 {
		b.keysSoFar++
	}
	if b.over() {
		return false, nil
	}
	adm := algorithms.AdmitterOf(lim)
	skip := e.prof.skipper(f.skip, c.Limit, c.Window, c.Burst)
	for _, k := range e.prof.byLegit() {
		if skip(k) {
			continue
		}
		// A key is done with as soon as what it has refused settles the goals: the
		// legitimate budget spent, or (with no such budget) the key over its share.
		var refused int64
		keyOver := int64(math.Floor(b.keyShare*float64(e.kg.keyLegit[k])+1e-9)) + 1
		for _, i := range e.kg.order[e.kg.start[k]:e.kg.start[k+1]] {
			if ok, _ := adm.Admit(uint32(k), e.s.times[i], e.s.cost(i)); !ok && !e.s.attacker[i] {
				refused++
				if b.legit >= 0 && b.legitSoFar+refused > b.legit {
					return false, nil
				}
				if b.legit < 0 && refused >= keyOver {
					break
				}
			}
		}
		b.legitSoFar += refused
		if b.keyGoal && float64(refused) > b.keyShare*float64(e.kg.keyLegit[k]) {
			b.keysSoFar++
		}
		if b.over() {
			return false, nil
		}
	}
	return true, nil
}

// run runs c over every key and returns its figures; refused, when not nil, is given
// each refused request's index in the sample.
func (e *evaluator) run(f *Family, c Candidate, refused func(i uint32)) (*Metrics, error) {
	lim, err := limiter(c)
	if err != nil {
		return nil, err
	}
	defer algorithms.Finish(lim)
	s, kg := e.s, e.kg
	m := &Metrics{Requests: int64(len(s.times)), Legit: s.legit, Attacker: s.attacks, Keys: kg.Keys()}
	adm := algorithms.AdmitterOf(lim)
	skip := e.prof.skipper(f.skip, c.Limit, c.Window, c.Burst)
	var trailing []int64
	if f.skip != skipNone {
		trailing = e.prof.trailing(c.Window)
	}
	w := int64(c.Window)
	var marked []uint32
	for _, i := range kg.unkeyed {
		e.refused[i] = true
		marked = append(marked, i)
	}
	m.LegitRejected, m.AttackerAdmitted = kg.unkeyedLegit, 0
	if kg.unkeyedLegit > 0 {
		// The requests that could not be keyed, all refused, count as one key.
		m.legitKeys++
		m.keyRefused = append(m.keyRefused, 1)
	}
	for k := range kg.Names {
		if kg.keyLegit[k] > 0 {
			m.legitKeys++
		}
		if skip(k) {
			m.AttackerAdmitted += int64(kg.keyAttacker[k])
			m.PeakWindowAdmitted = max(m.PeakWindowAdmitted, trailing[k])
			continue
		}
		reqs := kg.order[kg.start[k]:kg.start[k+1]]
		e.admitted = e.admitted[:0]
		var sum int64
		head := 0
		var legitRefused int64
		for _, i := range reqs {
			t, cost := s.times[i], s.cost(i)
			for head < len(e.admitted) && s.times[e.admitted[head]] <= t-w {
				sum -= s.cost(e.admitted[head])
				head++
			}
			ok, delay := adm.Admit(uint32(k), t, cost)
			if ok {
				e.admitted = append(e.admitted, i)
				sum += cost
				m.PeakWindowAdmitted = max(m.PeakWindowAdmitted, sum)
				if s.attacker[i] {
					m.AttackerAdmitted++
				}
				if delay > 0 {
					e.delayed = append(e.delayed, delayed{i, delay})
				}
				continue
			}
			if sum+cost <= c.Limit {
				m.FalseReject++
			}
			if !s.attacker[i] {
				legitRefused++
			}
			e.refused[i] = true
			marked = append(marked, i)
		}
		m.LegitRejected += legitRefused
		if legitRefused > 0 {
			m.keyRefused = append(m.keyRefused, float64(legitRefused)/float64(kg.keyLegit[k]))
		}
	}
	slices.Sort(m.keyRefused)
	m.Rejected = int64(len(marked))
	m.Admitted = m.Requests - m.Rejected
	m.OverAdmission = float64(m.PeakWindowAdmitted) / float64(c.Limit)
	m.OverAdmissionRatio = m.OverAdmission
	m.BackendPeak = e.backendPeak()
	if n := lim.Keys(); n > 0 && lim.StateBytes() >= 0 {
		m.StateBytesPerKey = float64(lim.StateBytes()) / float64(n)
	}
	for _, i := range marked {
		if refused != nil {
			refused(i)
		}
		e.refused[i] = false
	}
	e.delayed = e.delayed[:0]
	return m, nil
}

// backendPeak is the most admitted cost reaching the backend in any trailing
// BackendWindow, at release times (an admitted request a limiter queued reaches it
// after its delay).
func (e *evaluator) backendPeak() int64 {
	s := e.s
	bw := int64(BackendWindow)
	var sum, peak int64
	if len(e.delayed) == 0 {
		j := 0
		for i, t := range s.times {
			if e.refused[i] {
				continue
			}
			for s.times[j] <= t-bw {
				if !e.refused[j] {
					sum -= s.cost(uint32(j))
				}
				j++
			}
			sum += s.cost(uint32(i))
			peak = max(peak, sum)
		}
		return peak
	}
	type event struct{ t, cost int64 }
	extra := map[uint32]time.Duration{}
	for _, d := range e.delayed {
		extra[d.i] = d.delay
	}
	var evs []event
	for i, t := range s.times {
		if !e.refused[i] {
			evs = append(evs, event{t + int64(extra[uint32(i)]), s.cost(uint32(i))})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(a.t, b.t) })
	j := 0
	for _, ev := range evs {
		for evs[j].t <= ev.t-bw {
			sum -= evs[j].cost
			j++
		}
		sum += ev.cost
		peak = max(peak, sum)
	}
	return peak
}

// Evaluate runs c over every key of s, as Search runs a candidate, and returns its
// figures; refused, when not nil, is given the index (in delivery order) of every
// request c refuses.
func Evaluate(s *Sample, c Candidate, refused func(i int)) (*Metrics, error) {
	kg := s.Keying(c.Key)
	if kg == nil {
		return nil, fmt.Errorf("the sample is not keyed by %s", c.Key)
	}
	f, err := LookupFamily(c.Family)
	if err != nil {
		return nil, err
	}
	var mark func(uint32)
	if refused != nil {
		mark = func(i uint32) { refused(int(i)) }
	}
	return newEvaluator(s, kg, newProfiles(s, kg)).run(f, c, mark)
}

// Attacker says whether request i (in delivery order) is labelled the attacker's.
func (s *Sample) Attacker(i int) bool { return s.attacker[i] }
