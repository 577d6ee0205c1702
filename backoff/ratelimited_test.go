package backoff

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
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
	for _, alg := range algorithms.Names {
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
		e.Strategies = append(e.Strategies, b)
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
