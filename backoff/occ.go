package backoff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

// OCC is the optimistic-concurrency model of Brooker's experiment. Clients all start at
// t=0. An attempt reads the row's version (one hop to the server, one back), then writes
// it back (one hop there, one back); the server accepts the write only if the version is
// still the one read, and then bumps it. A client whose write was refused sleeps its
// strategy's backoff and starts over with a new read; it stops after its first accepted
// write, or gives up at MaxAttempts writes or past Deadline. Every hop takes
// |Normal(HopMean, HopStdDev)|. Calls are the write calls; arrivals are retried writes
// (every write after a client's first) reaching the server.
//
// The first failure sleeps Delay(1): with base 5 ms that is 10 ms for exponential, as in
// the blog's simulator, whose attempt counter is already 1 when the first sleep is drawn.
type OCC struct {
	HopMean, HopStdDev time.Duration
	// Bin is the width of the bins of peak_arrivals (retried writes per bin).
	Bin time.Duration
	// MaxAttempts bounds the writes per client (0: no bound).
	MaxAttempts int
	// Deadline is how long a client tries before giving up, from t=0 (0: no deadline).
	Deadline time.Duration
}

// DefaultOCC is the blog's setup: 10 ms ± 2 ms per hop, 10 ms bins, no limits.
var DefaultOCC = OCC{HopMean: 10 * time.Millisecond, HopStdDev: 2 * time.Millisecond, Bin: 10 * time.Millisecond}

var _ Model = OCC{}

// Name returns "occ".
func (OCC) Name() string { return "occ" }

// String describes the setup: "hops |N(10ms, 2ms)|, no attempt limit, no deadline".
func (m OCC) String() string {
	s := fmt.Sprintf("hops |N(%s, %s)|", m.HopMean, m.HopStdDev)
	if m.MaxAttempts > 0 {
		s += fmt.Sprintf(", at most %d writes", m.MaxAttempts)
	}
	if m.Deadline > 0 {
		s += fmt.Sprintf(", deadline %s", m.Deadline)
	}
	return s
}

// Run implements Model. The OCC model has no answers for policies to read: it retries
// with strategy's backoff shape alone (Experiment.Run refuses policies).
func (m OCC) Run(strategy traffic.Strategy, clients int, seed uint64) RunStats {
	w := &occWorld{model: m, strategy: strategy.Backoff, rng: rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))}
	w.stats.Requests = int64(clients)
	w.stats.ClientCompletion = make([]time.Duration, clients)
	if w.model.Bin <= 0 {
		w.model.Bin = DefaultOCC.Bin
	}
	cs := make([]occClient, clients)
	for i := range cs {
		cs[i].index = int32(i)
		w.queue.push(w.hop(), int32(i))
	}
	for len(w.queue.items) > 0 {
		e := w.queue.pop()
		w.now = e.at
		cs[e.client].fire(w)
	}
	w.stats.Wasted = w.stats.Calls - w.successes
	return w.stats
}

type occWorld struct {
	model    OCC
	strategy traffic.Backoff
	rng      *rand.Rand
	version  uint64
	stats    RunStats
	// successes counts accepted writes.
	successes int64
	now       time.Duration
	queue     occQueue
}

func (w *occWorld) hop() time.Duration {
	// The explicit float64 conversion rounds the product, so no platform fuses it into
	// an FMA and the same seed gives the same delays everywhere.
	return time.Duration(math.Abs(float64(w.model.HopMean) + float64(w.rng.NormFloat64()*float64(w.model.HopStdDev))))
}

// finish records client c leaving at now.
func (w *occWorld) finish(c *occClient, now time.Duration) {
	w.stats.Completion = max(w.stats.Completion, now)
	w.stats.ClientCompletion[c.index] = now
}

// occClient is one client of a run. It has exactly one event pending at any time: its
// read or its write reaching the server. The hops in between need no event of their own, because
// nothing happens at the client but scheduling the next hop, so each attempt costs two
// events (a sweep of the experiment runs tens of millions of them).
type occClient struct {
	index   int32
	writing bool   // the pending event is the write reaching the server
	read    uint64 // version read
	writes  int
	prev    time.Duration // the last sleep
}

func (c *occClient) fire(w *occWorld) {
	if !c.writing {
		// The read reaches the server; its answer goes back and the write comes in.
		c.read = w.version
		c.writing = true
		w.queue.push(w.now+w.hop()+w.hop(), c.index)
		return
	}
	w.stats.Calls++
	w.stats.arrive(w.now, w.model.Bin, c.writes > 0)
	c.writes++
	replied := w.now + w.hop()
	if c.read == w.version {
		w.version++
		w.successes++
		w.finish(c, replied)
		return
	}
	if w.model.MaxAttempts > 0 && c.writes >= w.model.MaxAttempts {
		w.stats.GiveUps++
		w.finish(c, replied)
		return
	}
	// The first failure sleeps Delay(1).
	sleep := w.strategy.Delay(c.writes, c.prev, w.rng)
	c.prev = sleep
	if w.model.Deadline > 0 && replied+sleep >= w.model.Deadline {
		// The next attempt could not start before the deadline: stop rather than sleep
		// for nothing.
		w.stats.GiveUps++
		w.finish(c, replied)
		return
	}
	c.writing = false
	w.queue.push(replied+sleep+w.hop(), c.index)
}

// occQueue is the run's event queue: ordered by (time, scheduling order) exactly like
// sim.Loop (TestOCCQueueOrdersLikeSimLoop), but typed. A sweep of the experiment is tens
// of millions of events, and sim.Loop's interface-typed heap allocates a box per event;
// this queue allocates nothing once grown. BenchmarkEventQueue measured about 4× less
// time per event (67–96 ns against 290–580 ns), and the 19 × 10 × 4 sweep went from 2.0 s
// to 0.44 s.
type occQueue struct {
	items []occEvent
	seq   uint64
}

type occEvent struct {
	at     time.Duration
	seq    uint64
	client int32
}

func (q *occQueue) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *occQueue) push(at time.Duration, client int32) {
	q.seq++
	q.items = append(q.items, occEvent{at: at, seq: q.seq, client: client})
	for i := len(q.items) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

func (q *occQueue) pop() occEvent {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < last && q.less(l, small) {
			small = l
		}
		if r < last && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q.items[i], q.items[small] = q.items[small], q.items[i]
		i = small
	}
	return top
}
