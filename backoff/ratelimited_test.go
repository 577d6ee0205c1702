package backoff

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

func TestRateLimitedDuplicatesNeedIdempotencyKeys(t *testing.T) {
	m := DefaultRateLimited
	m.Policy = algorithms.Policy{Limit: 1000, Window: time.Second}
	m.NonIdempotent = true
	m.Hiccup = Hiccup{Duration: 500 * time.Millisecond, Kind: "slow", SlowBy: 2 * time.Second}
	m.Retry.Timeout = time.Second
	b := strategies(t, "full-jitter")[0]

	st := m.Run(b, 100, 1)
	// Every client's first try lands in the slow half-second: carried out, but answered
	// after the client's 1 s timeout, so its retry carries it out again.
	if st.Duplicates != 100 {
		t.Errorf("without idempotency keys: %d duplicates, want 100", st.Duplicates)
	}
	m.Retry.IdempotencyKeys = true
	if st := m.Run(b, 100, 1); st.Duplicates != 0 {
		t.Errorf("with idempotency keys: %d duplicates, want 0", st.Duplicates)
	}
	m.Retry.IdempotencyKeys, m.NonIdempotent = false, false
	if st := m.Run(b, 100, 1); st.Duplicates != 0 {
		t.Errorf("idempotent requests: %d duplicates, want 0", st.Duplicates)
	}
}

// TestRateLimitedRetryAfterIsTruthful runs clients that each have their own key, honour
// Retry-After and send more than their limit, against every algorithm and both forms of
// the header: no retry that Retry-After timed may be refused by the limit again.
func TestRateLimitedRetryAfterIsTruthful(t *testing.T) {
	for _, alg := range algorithms.Defaults() {
		for _, date := range []bool{false, true} {
			m := DefaultRateLimited
			m.Algorithm = alg
			m.Policy = algorithms.Policy{Limit: 5, Window: time.Second}
			m.PerClient, m.Requests = true, 20
			m.Hiccup = Hiccup{Kind: "503"}
			m.Retry.HonorRetryAfter = true
			m.RetryAfterDate = date
			e := Experiment{Model: m, Strategies: strategies(t, "exponential", "full-jitter"), Clients: []int{20}, Runs: 3, Seed: 5}
			rs, err := e.Run()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.RetryAfterRefusedShare == nil && alg == "leaky-bucket" {
					// The queue holds an admitted request back instead of refusing it, and
					// a client waits for its answer: one client alone is paced, never
					// refused. (response's own test drives the leaky bucket's refusals.)
					continue
				}
				if r.RetryAfterRefusedShare == nil {
					t.Fatalf("%s date=%v %s: no retry was timed by Retry-After", alg, date, r.Strategy)
				}
				if *r.RetryAfterRefusedShare != 0 {
					t.Errorf("%s date=%v %s: %.3f of honoured retries refused again, want 0", alg, date, r.Strategy, *r.RetryAfterRefusedShare)
				}
				if r.Duplicates != 0 || r.GiveUps != 0 || r.CallsMean < 400 {
					t.Errorf("%s date=%v %s: %+v", alg, date, r.Strategy, r)
				}
			}
		}
	}
}

// TestRetryStormWaves is the storm of the notes: 1000 clients all failed by a hiccup at
// once. Without jitter they come back together; with full jitter they spread.
func TestRetryStormWaves(t *testing.T) {
	e := Experiment{Model: DefaultRateLimited, Clients: []int{1000}, Runs: 3, Seed: 1}
	for _, name := range []string{"exponential", "full-jitter"} {
		b, err := newBackoffForTest(name, 500*time.Millisecond, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		e.Strategies = append(e.Strategies, traffic.Plain(b))
	}
	rs, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	expo, full := rs[0], rs[1]
	t.Logf("peak retries: exponential %.1f, full-jitter %.1f; completion %.0f ms vs %.0f ms", expo.PeakArrivals, full.PeakArrivals, expo.CompletionMSMean, full.CompletionMSMean)
	if expo.PeakArrivals < 400 {
		t.Errorf("exponential: highest retry wave %.1f of 1000 clients, want a synchronized wave", expo.PeakArrivals)
	}
	if full.PeakArrivals*10 > expo.PeakArrivals {
		t.Errorf("full-jitter: highest retry wave %.1f, want under a tenth of exponential's %.1f", full.PeakArrivals, expo.PeakArrivals)
	}
	if full.CompletionMSMean >= expo.CompletionMSMean || full.CallsMean >= expo.CallsMean {
		t.Errorf("full-jitter should finish sooner with fewer calls: %+v vs %+v", full, expo)
	}
}

// TestPeakArrivalsCountsRetriesOnly: clients that all start together and all pass make a
// tall bin of first tries, but no herd; peak_arrivals must say 0.
func TestPeakArrivalsCountsRetriesOnly(t *testing.T) {
	m := DefaultRateLimited
	m.Hiccup = Hiccup{}
	m.Policy.Limit = 1_000_000
	e := Experiment{Model: m, Strategies: strategies(t, "exponential"), Clients: []int{200}, Runs: 2, Seed: 1, KeepSeries: true}
	rs, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	r := rs[0]
	if r.CallsMean != 200 || r.PeakArrivals != 0 || r.PeakArrivalsMax != 0 || peak(r.Attempts) < 50 || r.Arrivals == nil || len(r.Arrivals) != 0 {
		t.Fatalf("calls %.0f, peak_arrivals %.1f (max %d), attempts per bin %v", r.CallsMean, r.PeakArrivals, r.PeakArrivalsMax, r.Attempts)
	}
}

// watched wraps a limiter and records the now of every Allow and of every admission.
type watched struct {
	algorithms.Limiter
	calls     []int64
	admitted  []int64
	backwards int
}

func (w *watched) Allow(key uint32, now int64, cost int64) algorithms.Decision {
	if n := len(w.calls); n > 0 && now < w.calls[n-1] {
		w.backwards++
	}
	w.calls = append(w.calls, now)
	d := w.Limiter.Allow(key, now, cost)
	if d.Allowed {
		w.admitted = append(w.admitted, now)
	}
	return d
}

func watch(t *testing.T, m RateLimited) *watched {
	t.Helper()
	lim, err := algorithms.New(m.Algorithm, m.Policy)
	if err != nil {
		t.Fatal(err)
	}
	return &watched{Limiter: lim}
}

// The limiter is asked in arrival order: hops jitter enough to reorder clients that send
// together, yet the limiter never sees time go backwards, whatever the strategy, the
// seed, the hiccup or the client timeout.
func TestRateLimitedFeedsTheLimiterInArrivalOrder(t *testing.T) {
	storm := DefaultRateLimited
	storm.HopStdDev = 8 * time.Millisecond
	storm.Retry.HonorRetryAfter = true
	slow := storm
	slow.Algorithm, slow.NonIdempotent = "leaky-bucket", true
	slow.Hiccup = Hiccup{Duration: 500 * time.Millisecond, Kind: "slow", SlowBy: 2 * time.Second}
	slow.Retry.Timeout = time.Second
	perClient := storm
	perClient.Algorithm, perClient.PerClient, perClient.Requests = "sliding-log", true, 5
	perClient.Policy = algorithms.Policy{Limit: 2, Window: time.Second}
	perClient.Spread = 200 * time.Millisecond
	perClient.Retry.HonorRetryAfter = true
	for name, m := range map[string]RateLimited{"storm": storm, "slow": slow, "per-client": perClient} {
		for _, b := range strategies(t, traffic.BackoffNames...) {
			for seed := uint64(1); seed <= 3; seed++ {
				lim := watch(t, m)
				st := m.run(lim, b, 200, seed)
				if lim.backwards != 0 {
					t.Errorf("%s %s seed %d: the limiter saw time go backwards %d times in %d calls", name, b.Name(), seed, lim.backwards, len(lim.calls))
				}
				if len(lim.calls) == 0 || int64(len(lim.calls)) > st.Calls {
					t.Errorf("%s %s seed %d: %d limiter calls for %d attempts", name, b.Name(), seed, len(lim.calls), st.Calls)
				}
			}
		}
	}
}

// Acceptance for arrival order, as `rlsim backoff --model rate-limited --strategies none
// --hiccup 0 --clients 1000 --runs 3` runs it (clients honour Retry-After): 1000 clients
// through a token bucket of 100 refilling at 100/s need 9 s of refill after the first
// arrival (the bucket holds 100, the other 900 come at 100/s), and the token bucket and
// GCRA, which keep the same promise, drain together.
func TestRateLimitedTokenBucketDrainsNoFasterThanItsRate(t *testing.T) {
	m := DefaultRateLimited
	m.Hiccup = Hiccup{Kind: "503"}
	m.Retry.HonorRetryAfter = true
	none := strategies(t, "none")[0]
	completion := map[string]time.Duration{}
	for _, alg := range []string{"token-bucket", "gcra"} {
		m.Algorithm = alg
		const runs = 3
		for run := range runs {
			lim := watch(t, m)
			st := m.run(lim, none, 1000, RunSeed(1, 1000, run))
			if len(lim.admitted) != 1000 {
				t.Fatalf("%s run %d: %d admitted, want 1000", alg, run, len(lim.admitted))
			}
			first, last := lim.calls[0], lim.admitted[999]
			if span := time.Duration(last - first); span < 9*time.Second {
				t.Errorf("%s run %d: the 1000th admission came %s after the first arrival, the bound is 9s", alg, run, span)
			}
			if arrival := time.Duration(first - m.Epoch.UnixNano()); st.Completion < arrival+9*time.Second {
				t.Errorf("%s run %d: completed at %s, before the first arrival (%s) + 9s", alg, run, st.Completion, arrival)
			}
			completion[alg] += st.Completion / runs
		}
	}
	t.Logf("mean completion: token bucket %s, GCRA %s", completion["token-bucket"], completion["gcra"])
	if tb, g := completion["token-bucket"], completion["gcra"]; tb < 9*time.Second || math.Abs(float64(tb-g)) > 0.02*float64(g) {
		t.Errorf("token bucket drains in %s, GCRA in %s: want at least 9s and within 2%% of each other", tb, g)
	}
}

// Same seed, same bytes: every result and series of a run of every strategy repeats.
func TestRateLimitedIsDeterministic(t *testing.T) {
	m := DefaultRateLimited
	m.HopStdDev = 8 * time.Millisecond
	e := Experiment{Model: m, Strategies: strategies(t, traffic.BackoffNames...), Clients: []int{200}, Runs: 2, Seed: 9, KeepSeries: true, Workers: 1}
	one, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	e.Workers = 3
	again, err := e.Run()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, again) {
		t.Fatal("same seed, different results")
	}
	e.Seed = 10
	other, _ := e.Run()
	if reflect.DeepEqual(one, other) {
		t.Fatal("a different seed gave the same results: the seed is not used")
	}
}

// Clients that honour Retry-After wait out a 503 hiccup's Retry-After, in seconds or in
// Retry-After-Ms, whatever their backoff: every client's job takes at least that long,
// and not much longer, and each one's retry is timed by the header.
func TestRateLimitedHiccupRetryAfterIsHonoured(t *testing.T) {
	for _, tt := range []struct {
		retryAfter time.Duration
		ms         bool
	}{{2 * time.Second, false}, {1500 * time.Millisecond, true}} {
		for _, s := range strategies(t, "exponential", "full-jitter") {
			m := DefaultRateLimited
			m.Policy = algorithms.Policy{Limit: 1000, Window: time.Second}
			m.Hiccup = Hiccup{Duration: 500 * time.Millisecond, Kind: "503", RetryAfter: tt.retryAfter}
			m.RetryAfterMs = tt.ms
			m.Retry.HonorRetryAfter = true
			const clients = 50
			st := m.Run(s, clients, 3)
			if len(st.ClientCompletion) != clients {
				t.Fatalf("%d completions for %d clients", len(st.ClientCompletion), clients)
			}
			for i, c := range st.ClientCompletion {
				if c < tt.retryAfter || c > tt.retryAfter+200*time.Millisecond {
					t.Errorf("Retry-After %s (ms %v), %s: client %d done after %s, want just after the Retry-After", tt.retryAfter, tt.ms, s.Backoff.Name(), i, c)
				}
			}
			if st.HonouredRetries != clients || st.Calls != 2*clients {
				t.Errorf("Retry-After %s (ms %v), %s: %d retries timed by Retry-After in %d calls, want %d in %d", tt.retryAfter, tt.ms, s.Backoff.Name(), st.HonouredRetries, st.Calls, clients, 2*clients)
			}
		}
	}
}
