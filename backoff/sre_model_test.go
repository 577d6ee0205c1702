package backoff

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// stormModel is the retry-budget scenario's storm written again from its description,
// sharing no code with the Overload model or traffic.Clients, for clients under the SRE
// book's adaptive throttling: 3000 clients, one request each, starting evenly over 10 s,
// in 10 processes; hops |N(10 ms, 2 ms)| each way; a backend of 200 a second that fails an
// attempt with probability 1 − 1/ρ, ρ its attempts in the last second (exact, not in
// slices) over 200; exponential backoff min(10 s, 100 ms·2ⁿ) after the n-th failure; and
// per process the throttle's exact two-minute windows of requests and accepts, refusing
// an attempt with probability max(0, (requests − 2·accepts)/(requests + 1)) — a refused
// attempt ends its request.
type stormModel struct {
	rng    *rand.Rand
	events stormQueue
	seq    int
	load   []time.Duration // arrival times at the backend, oldest first
	procs  [10]struct{ requests, accepts []time.Duration }
	calls  int
}

type stormEvent struct {
	at     time.Duration
	seq    int
	client int
	kind   int // 0: the client tries to send; 1: the attempt reaches the backend; 2: the answer reaches the client
	n      int // failures so far
	ok     bool
}

type stormQueue []stormEvent

func (q stormQueue) Len() int { return len(q) }
func (q stormQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q stormQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *stormQueue) Push(x any)   { *q = append(*q, x.(stormEvent)) }
func (q *stormQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func (m *stormModel) at(e stormEvent) {
	m.seq++
	e.seq = m.seq
	heap.Push(&m.events, e)
}

func (m *stormModel) hop() time.Duration {
	return time.Duration(math.Abs(10e6 + 2e6*m.rng.NormFloat64()))
}

// trim drops the times before from from the front of ts.
func trim(ts []time.Duration, from time.Duration) []time.Duration {
	i := 0
	for i < len(ts) && ts[i] <= from {
		i++
	}
	return ts[i:]
}

func (m *stormModel) run(clients int) float64 {
	const spread = 10 * time.Second
	for c := range clients {
		m.at(stormEvent{at: time.Duration(float64(spread) * float64(c) / float64(clients-1)), client: c})
	}
	for len(m.events) > 0 {
		e := heap.Pop(&m.events).(stormEvent)
		p := &m.procs[e.client%len(m.procs)]
		switch e.kind {
		case 0:
			p.requests = trim(p.requests, e.at-2*time.Minute)
			p.accepts = trim(p.accepts, e.at-2*time.Minute)
			req, acc := float64(len(p.requests)), float64(len(p.accepts))
			reject := max(0, (req-2*acc)/(req+1))
			p.requests = append(p.requests, e.at)
			if reject > 0 && m.rng.Float64() < reject {
				continue // refused by the client: the request is given up
			}
			m.calls++
			e.kind = 1
			e.at += m.hop()
			m.at(e)
		case 1:
			m.load = append(trim(m.load, e.at-time.Second), e.at)
			rho := float64(len(m.load)) / 200
			e.ok = !(rho > 1 && m.rng.Float64() < 1-1/rho)
			e.kind = 2
			e.at += m.hop()
			m.at(e)
		case 2:
			if e.ok {
				p.accepts = append(p.accepts, e.at)
				continue
			}
			e.n++
			e.kind = 0
			e.at += min(10*time.Second, 100*time.Millisecond<<e.n)
			m.at(e)
		}
	}
	return float64(m.calls) / float64(clients)
}

// The sre-throttle strategy in the retry-budget scenario's storm amplifies the load as
// much as an independent model of the same storm does, within 5%.
func TestSREThrottleMatchesAnIndependentModel(t *testing.T) {
	const runs = 10
	var independent float64
	for seed := range uint64(runs) {
		m := &stormModel{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
		independent += m.run(3000) / runs
	}
	cfg := traffic.DefaultStrategyConfig(100*time.Millisecond, 10*time.Second)
	model := DefaultOverload
	model.Capacity, model.Processes = 200, 10
	e := Experiment{Model: model, Strategies: parse(t, cfg, "exponential+sre-throttle"), Clients: []int{3000}, Runs: runs, Seed: 1}
	rs, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	got := rs[0].Amplification
	t.Logf("amplification: rlsim %.3f, the independent model %.3f", got, independent)
	if math.Abs(got/independent-1) > 0.05 {
		t.Errorf("rlsim's sre-throttle amplifies %.3f×, the independent model %.3f×: more than 5%% apart", got, independent)
	}
	if rs[0].Withheld == 0 {
		t.Error("the throttle refused nothing in a storm at 1.5× capacity")
	}
}
