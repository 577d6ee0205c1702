// Package backoff runs the retry experiments of `rlsim backoff`: many closed-loop clients
// retrying with one strategy against a server model, repeated over seeded runs and
// averaged. Three models exist: "occ", the optimistic-concurrency experiment of Marc
// Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015);
// "rate-limited", clients against an API guarded by one of rlsim's limiters whose capacity
// can wobble; and "overload", clients against a backend of finite capacity and no limiter.
// Every run is a discrete-event simulation on its own event queue (a sim.Loop, or for occ
// a sim.Tournament of its clients) and its own RNG (sim.NewRNG in the backoff stream);
// runs are spread over cores, and the result is the same bytes as a sequential run.
package backoff

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/rlsim/rlsim/internal/pool"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// Models lists the server models.
var Models = []string{"occ", "rate-limited", "overload"}

// RunStats is what one run measured.
type RunStats struct {
	Calls      int64
	Completion time.Duration
	// ClientCompletion is how long each client's job took; Experiment.Run turns it into
	// the percentiles below and drops it, so memory holds one run's clients at a time.
	ClientCompletion                                 []time.Duration
	CompletionP50, CompletionP99, CompletionMax      time.Duration
	LoadPeak                                         int64
	Requests, Wasted, Withheld, Failed, RetriedWrong int64
	// Attempts counts the attempts of any kind reaching the server per bin, from t=0.
	Attempts []int64
	// Retries counts the retries among them per bin (attempts after the first try of a
	// request); PeakArrivals is its highest bin, the height of the highest retry wave.
	Retries      []int64
	PeakArrivals int64
	GiveUps      int64
	Duplicates   int64
	// HonouredRetries and HonouredRefused count retries timed by Retry-After and those of
	// them the limit refused again.
	HonouredRetries, HonouredRefused int64
}

// peak is the highest of bins.
func peak(bins []int64) int64 {
	var p int64
	for _, v := range bins {
		p = max(p, v)
	}
	return p
}

// arrive counts one attempt reaching the server at t.
func (s *RunStats) arrive(t, bin time.Duration, retry bool) {
	s.Attempts = traffic.Count(s.Attempts, t, bin)
	if retry {
		s.Retries = traffic.Count(s.Retries, t, bin)
	}
}

// Model runs one seeded simulation of clients retrying with strategy.
type Model interface {
	// Name is the model's name ("occ").
	Name() string
	// String describes the model's setup for report titles.
	String() string
	// Run simulates clients clients with strategy once, drawing from a RNG seeded by seed.
	Run(strategy traffic.Strategy, clients int, seed uint64) RunStats
}

// Experiment is a sweep: every strategy at every client count, Runs times each.
type Experiment struct {
	Model      Model
	Strategies []traffic.Strategy
	Clients    []int
	Runs       int
	Seed       uint64
	// KeepSeries keeps the retries and attempts per bin of each point's first run in
	// report.RetryResult.Arrivals and Attempts.
	KeepSeries bool
	// Workers bounds the runs simulated at once; 0 means one per CPU. The result does
	// not depend on it.
	Workers int
	// Context, when not nil, stops the experiment between two runs once it is done; Run
	// then returns the context's cause.
	Context context.Context
}

// RunSeed is the seed of run number run at a client count: a pure function of the
// experiment's seed, so any subset of runs can be repeated alone. Strategies share it, so
// they meet the same network delays where their paths agree (common random numbers make
// the comparison sharper at the same number of runs).
func RunSeed(seed uint64, clients, run int) uint64 {
	return sim.Derive(seed, sim.BackoffRunSalt, uint64(clients), uint64(run))
}

// Run simulates every (strategy, clients, run) and averages per (strategy, clients), in
// the order strategies × clients.
func (e Experiment) Run() ([]report.RetryResult, error) {
	if e.Runs < 1 {
		return nil, fmt.Errorf("runs must be at least 1, got %d", e.Runs)
	}
	if _, occ := e.Model.(OCC); occ {
		for _, s := range e.Strategies {
			if len(s.Policies) > 0 {
				return nil, fmt.Errorf("strategy %s: the occ model has no server answers for a policy to read; policies need the rate-limited or overload model", s.Name())
			}
		}
	}
	nc, nr := len(e.Clients), e.Runs
	stats := make([]RunStats, len(e.Strategies)*nc*nr)
	pool.Each(len(stats), e.Workers, func(k int) error {
		s, c, r := k/(nc*nr), k/nr%nc, k%nr
		if e.Context != nil && e.Context.Err() != nil {
			return nil // Run returns the cause below
		}
		buf := runBuffersPool.Get().(*runBuffers)
		defer runBuffersPool.Put(buf)
		var st RunStats
		seed := RunSeed(e.Seed, e.Clients[c], r)
		if m, ok := e.Model.(bufferedModel); ok {
			st = m.runWith(e.Strategies[s], e.Clients[c], seed, buf)
		} else {
			st = e.Model.Run(e.Strategies[s], e.Clients[c], seed)
		}
		st.PeakArrivals = peak(st.Retries)
		st.LoadPeak = peak(st.Attempts)
		st.CompletionP50, st.CompletionP99, st.CompletionMax = percentiles(st.ClientCompletion)
		buf.completion, st.ClientCompletion = st.ClientCompletion, nil
		switch {
		case r > 0 || !e.KeepSeries:
			// Only the peaks are averaged; do not hold every series.
			buf.attempts, buf.retries = st.Attempts, st.Retries
			st.Attempts, st.Retries = nil, nil
		case len(st.Retries) == 0:
			// Kept but nothing was retried: an empty series, not a missing one.
			st.Retries = []int64{}
		}
		stats[k] = st
		return nil
	})
	if e.Context != nil && e.Context.Err() != nil {
		return nil, context.Cause(e.Context)
	}
	var out []report.RetryResult
	for s, strat := range e.Strategies {
		for c, clients := range e.Clients {
			out = append(out, summarize(strat.Name(), clients, stats[(s*nc+c)*nr:(s*nc+c+1)*nr]))
		}
	}
	return out, nil
}

// runBuffers are the slices a run fills, handed from one run of a sweep to the next: a
// sweep is thousands of runs, and each growing series and client tables of its own kept
// the garbage collector busy, and the sweep's goroutines interrupted for it, for nothing.
type runBuffers struct {
	attempts, retries []int64
	completion        []time.Duration
	occ               occWorld
}

var runBuffersPool = sync.Pool{New: func() any { return new(runBuffers) }}

// bufferedModel is a Model that can fill a run's slices from buffers left by earlier runs;
// a run so made gives the same RunStats as Run.
type bufferedModel interface {
	runWith(strategy traffic.Strategy, clients int, seed uint64, buf *runBuffers) RunStats
}

// reuse returns s emptied, to be filled again.
func reuse[T any](s []T) []T { return s[:0] }

// percentiles returns the exact (nearest-rank) 50th and 99th percentiles and the maximum
// of ds, sorting it in place; zeros when it is empty.
func percentiles(ds []time.Duration) (p50, p99, most time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	rank := func(p int) time.Duration {
		// The smallest value with at least p% of the values at or below it.
		i := (p*len(ds) + 99) / 100
		return ds[max(i, 1)-1]
	}
	return rank(50), rank(99), ds[len(ds)-1]
}

// ms is d in milliseconds, rounded to the microsecond.
func ms(d float64) float64 { return math.Round(d/float64(time.Microsecond)) / 1000 }

func summarize(strategy string, clients int, runs []RunStats) report.RetryResult {
	r := report.RetryResult{Strategy: strategy, Clients: clients, Runs: len(runs)}
	// Sum in integers and divide once, so the means print without float noise.
	var calls, giveUps, duplicates, peaks, honoured, refused int64
	var loads, requests, wasted, withheld, failed, wrong int64
	var completion, p50, p99, most time.Duration
	for _, s := range runs {
		calls += s.Calls
		completion += s.Completion
		p50 += s.CompletionP50
		p99 += s.CompletionP99
		most += s.CompletionMax
		giveUps += s.GiveUps
		duplicates += s.Duplicates
		peaks += s.PeakArrivals
		loads += s.LoadPeak
		requests += s.Requests
		wasted += s.Wasted
		withheld += s.Withheld
		failed += s.Failed
		wrong += s.RetriedWrong
		r.PeakArrivalsMax = max(r.PeakArrivalsMax, s.PeakArrivals)
		honoured += s.HonouredRetries
		refused += s.HonouredRefused
	}
	n := float64(len(runs))
	r.CallsMean = float64(calls) / n
	r.CompletionMSMean = ms(float64(completion) / n)
	r.CompletionMSP50, r.CompletionMSP99, r.CompletionMSMax = ms(float64(p50)/n), ms(float64(p99)/n), ms(float64(most)/n)
	r.LoadPeak = float64(loads) / n
	r.Requests = float64(requests) / n
	if requests > 0 {
		r.Amplification = float64(calls) / float64(requests)
	}
	r.Wasted = float64(wasted) / n
	r.Withheld = float64(withheld) / n
	r.Failed = float64(failed) / n
	r.RetriedWrongly = float64(wrong) / n
	r.GiveUps = float64(giveUps) / n
	r.Duplicates = float64(duplicates) / n
	r.PeakArrivals = float64(peaks) / n
	r.Arrivals, r.Attempts = runs[0].Retries, runs[0].Attempts
	if honoured > 0 {
		share := float64(refused) / float64(honoured)
		r.RetryAfterRefusedShare = &share
	}
	return r
}
