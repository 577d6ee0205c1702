// Package backoff runs the retry experiments of `rlsim backoff`: many closed-loop clients
// retrying with one strategy against a server model, repeated over seeded runs and
// averaged. Two models exist: "occ", the optimistic-concurrency experiment of Marc
// Brooker's "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015), and
// "rate-limited", clients against an API guarded by one of rlsim's limiters whose capacity
// can wobble. Every run is a discrete-event simulation on its own sim.Loop and RNG; runs are
// spread over cores, and the result is the same bytes as a sequential run.
package backoff

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rlsim/rlsim/traffic"
)

// Models lists the server models.
var Models = []string{"occ", "rate-limited"}

// Result is one strategy at one client count, averaged over runs. The JSON names are the
// contract of DESIGN.md.
type Result struct {
	Strategy string `json:"strategy"`
	Clients  int    `json:"clients"`
	Runs     int    `json:"runs"`
	// CallsMean is the mean number of attempts (OCC: write calls) per run, over all clients.
	CallsMean float64 `json:"calls_mean"`
	// CompletionMSMean is the mean time, in milliseconds, until the last client finished
	// (succeeded or gave up).
	CompletionMSMean float64 `json:"completion_ms_mean"`
	// PeakArrivals is the mean over runs of the most retries that reached the server in
	// one bin (of Bin, 10 ms by default): the height of the highest retry wave. A retry is
	// every attempt after the first try of a request, so the clients' own first requests,
	// which all leave together by the premise of the experiment, are not counted; what is
	// left is the herd the strategy makes. Clients in lockstep make tall waves, jitter
	// flattens them.
	PeakArrivals float64 `json:"peak_arrivals"`
	// PeakArrivalsMax is the highest retry wave of any run.
	PeakArrivalsMax int64 `json:"peak_arrivals_max"`
	// GiveUps is the mean number of jobs per run abandoned at the attempt limit or the
	// deadline.
	GiveUps float64 `json:"give_ups"`
	// Duplicates is the mean number of times per run that non-idempotent work ran again
	// because a retry repeated a request the server had already carried out.
	Duplicates float64 `json:"duplicates"`
	// RetryAfterRefusedShare is, over all retries whose sleep Retry-After decided, the
	// share refused by the limit again (rate-limited model with --retry-after honor); null
	// when there was none.
	RetryAfterRefusedShare *float64 `json:"retry_after_refused_share,omitempty"`
	// Arrivals is the first run's retries per bin (the series PeakArrivals takes the
	// highest bin of) and Attempts its attempts of any kind per bin; both are kept only when
	// asked for (Experiment.KeepSeries), to draw the waves.
	Arrivals, Attempts []int64 `json:"-"`
}

// RunStats is what one run measured.
type RunStats struct {
	Calls      int64
	Completion time.Duration
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
	Run(strategy traffic.Backoff, clients int, seed uint64) RunStats
}

// Experiment is a sweep: every strategy at every client count, Runs times each.
type Experiment struct {
	Model      Model
	Strategies []traffic.Backoff
	Clients    []int
	Runs       int
	Seed       uint64
	// KeepSeries keeps the retries and attempts per bin of each point's first run in
	// Result.Arrivals and Result.Attempts.
	KeepSeries bool
	// Workers bounds the runs simulated at once; 0 means one per CPU. The result does
	// not depend on it.
	Workers int
}

// RunSeed is the seed of run number run at a client count: a pure function of the
// experiment's seed, so any subset of runs can be repeated alone. Strategies share it, so
// they meet the same network delays where their paths agree (common random numbers make
// the comparison sharper at the same number of runs).
func RunSeed(seed uint64, clients, run int) uint64 {
	return splitmix64(splitmix64(seed^0x5851f42d4c957f2d) ^ uint64(clients)<<32 ^ uint64(run))
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Run simulates every (strategy, clients, run) and averages per (strategy, clients), in
// the order strategies × clients.
func (e Experiment) Run() ([]Result, error) {
	if e.Runs < 1 {
		return nil, fmt.Errorf("runs must be at least 1, got %d", e.Runs)
	}
	nc, nr := len(e.Clients), e.Runs
	stats := make([]RunStats, len(e.Strategies)*nc*nr)
	workers := e.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var g errgroup.Group
	g.SetLimit(workers)
	for s := range e.Strategies {
		for c := range e.Clients {
			for r := range nr {
				g.Go(func() error {
					st := e.Model.Run(e.Strategies[s], e.Clients[c], RunSeed(e.Seed, e.Clients[c], r))
					st.PeakArrivals = peak(st.Retries)
					switch {
					case r > 0 || !e.KeepSeries:
						// Only the peaks are averaged; do not hold every series.
						st.Attempts, st.Retries = nil, nil
					case st.Retries == nil:
						// Kept but nothing was retried: an empty series, not a missing one.
						st.Retries = []int64{}
					}
					stats[(s*nc+c)*nr+r] = st
					return nil
				})
			}
		}
	}
	g.Wait()
	var out []Result
	for s, strat := range e.Strategies {
		for c, clients := range e.Clients {
			out = append(out, summarize(strat.Name(), clients, stats[(s*nc+c)*nr:(s*nc+c+1)*nr]))
		}
	}
	return out, nil
}

func summarize(strategy string, clients int, runs []RunStats) Result {
	r := Result{Strategy: strategy, Clients: clients, Runs: len(runs)}
	// Sum in integers and divide once, so the means print without float noise.
	var calls, giveUps, duplicates, peaks, honoured, refused int64
	var completion time.Duration
	for _, s := range runs {
		calls += s.Calls
		completion += s.Completion
		giveUps += s.GiveUps
		duplicates += s.Duplicates
		peaks += s.PeakArrivals
		r.PeakArrivalsMax = max(r.PeakArrivalsMax, s.PeakArrivals)
		honoured += s.HonouredRetries
		refused += s.HonouredRefused
	}
	n := float64(len(runs))
	r.CallsMean = float64(calls) / n
	r.CompletionMSMean = math.Round(float64(completion)/n/float64(time.Microsecond)) / 1000
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
