package backoff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rlsim/rlsim/sim"
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
//
// A run takes its events from a sim.Tournament of its clients rather than a sim.Loop:
// every event is one of its clients, which has exactly one event pending, so the dispatch
// is a direct call, and the queue is a loser tree in which a client that goes on replays
// its own leaf-to-root path, with the same (time, scheduling order) as sim.Loop. Measured
// on the whole sweep (rlsim backoff --model occ --clients 10..190/10 --runs 100), running
// on sim.Loop took about 1.3 times the CPU time of a sim.Queue of client indexes, and that
// about 1.3 times the CPU time of this loop (docs/performance.md).
func (m OCC) Run(strategy traffic.Strategy, clients int, seed uint64) RunStats {
	return m.runWith(strategy, clients, seed, new(runBuffers))
}

// runWith is Run filling the slices of buf (see bufferedModel).
func (m OCC) runWith(strategy traffic.Strategy, clients int, seed uint64, buf *runBuffers) RunStats {
	w := &buf.occ
	*w = occWorld{model: m, strategy: strategy.Backoff, rng: sim.NewRNG(seed, sim.BackoffStream), queue: w.queue,
		clients: slices.Grow(w.clients[:0], clients)[:clients]}
	w.stats.Requests = int64(clients)
	w.stats.ClientCompletion = slices.Grow(reuse(buf.completion), clients)[:clients]
	clear(w.stats.ClientCompletion)
	w.stats.Attempts, w.stats.Retries = reuse(buf.attempts), reuse(buf.retries)
	buf.completion, buf.attempts, buf.retries = nil, nil, nil
	if w.model.Bin <= 0 {
		w.model.Bin = DefaultOCC.Bin
	}
	w.hopMean, w.hopStdDev = float64(m.HopMean), float64(m.HopStdDev)
	cs := w.clients
	w.queue.Reset(clients)
	for i := range cs {
		cs[i] = occClient{index: int32(i)}
		w.seq++
		w.queue.Set(i, w.hop(), w.seq)
	}
	w.queue.Init()
	var i int
	var at time.Duration
	if clients > 0 {
		i, at = w.queue.Min()
	}
	for w.queue.Len() > 0 {
		w.now = at
		if next, ok := cs[i].fire(w); ok {
			w.seq++
			i, at = w.queue.FixMin(next, w.seq)
		} else {
			i, at = w.queue.RemoveMin()
		}
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
	// hopMean and hopStdDev are the model's, as float64.
	hopMean, hopStdDev float64
	queue              sim.Tournament // the clients, by their pending event
	seq                uint64
	clients            []occClient
}

// hop is one network hop's time, |Normal(HopMean, HopStdDev)| in whole nanoseconds. It is
// small enough to be inlined into fire, which calls it two times an event on average.
func (w *occWorld) hop() time.Duration {
	// The explicit float64 conversion rounds the product, so no platform fuses it into
	// an FMA and the same seed gives the same delays everywhere. Truncating toward zero
	// and then dropping the sign gives the nanoseconds truncating the absolute value
	// gives.
	d := time.Duration(w.hopMean + float64(w.rng.NormFloat64()*w.hopStdDev))
	return max(d, -d)
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

// fire runs the client's pending event: its read or its write reaching the server. It
// returns the time of the client's next event, and false when the client is done.
func (c *occClient) fire(w *occWorld) (time.Duration, bool) {
	now := w.now
	if !c.writing {
		// The read reaches the server; its answer goes back and the write comes in.
		c.read = w.version
		c.writing = true
		return now + w.hop() + w.hop(), true
	}
	w.stats.Calls++
	w.stats.arrive(now, w.model.Bin, c.writes > 0)
	c.writes++
	replied := now + w.hop()
	if c.read == w.version {
		w.version++
		w.successes++
		w.finish(c, replied)
		return 0, false
	}
	if w.model.MaxAttempts > 0 && c.writes >= w.model.MaxAttempts {
		w.stats.GiveUps++
		w.finish(c, replied)
		return 0, false
	}
	// The first failure sleeps Delay(1).
	sleep := w.strategy.Delay(c.writes, c.prev, w.rng)
	c.prev = sleep
	if w.model.Deadline > 0 && replied+sleep >= w.model.Deadline {
		// The next attempt could not start before the deadline: stop rather than sleep
		// for nothing.
		w.stats.GiveUps++
		w.finish(c, replied)
		return 0, false
	}
	c.writing = false
	return replied + sleep + w.hop(), true
}
