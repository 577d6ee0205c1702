package scenario

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestBadClientsSectionsNameFileLineColumnAndField(t *testing.T) {
	tests := []struct{ file, want string }{
		{"strategy.yaml", `testdata/bad-clients/strategy.yaml:5:29: clients.strategies[1]: strategy "fibonacci": unknown backoff shape or policy "fibonacci" (shapes: none, constant, linear, exponential, full-jitter, equal-jitter, decorrelated-jitter, proportional-jitter; policies: retry-budget, retry-throttle, retry-quota, adaptive, circuit-breaker)`},
		{"count.yaml", `testdata/bad-clients/count.yaml:4:10: clients.count: must be between 1 and 1000000, got 0`},
		{"hiccup.yaml", `testdata/bad-clients/hiccup.yaml:5:43: clients.hiccup.kind: want 503 or slow, got "flaky"`},
		{"field.yaml", `testdata/bad-clients/field.yaml:5:3: clients.jiter: unknown field (known: adaptive, base, bin, cap, circuit_breaker, count, deadline, error_mix, hiccup, idempotency_keys, jitter, key, max_attempts, non_idempotent, processes, requests, retry_after, retry_after_form, retry_after_precision, retry_all_errors, retry_budget, retry_quota, retry_throttle, runs, server, shed_retry_after, spread, start, strategies, timeout)`},
		{"retry-after.yaml", `testdata/bad-clients/retry-after.yaml:5:16: clients.retry_after: want honor or ignore, got "sometimes"`},
		{"jitter.yaml", `testdata/bad-clients/jitter.yaml:5:11: clients.jitter: want a number, got a string "full"`},
		{"server.yaml", `testdata/bad-clients/server.yaml:5:11: clients.server: want rate-limited or overload, got "queue"`},
		{"budget.yaml", `testdata/bad-clients/budget.yaml:6:25: clients.retry_budget.ratio: must be between 0 and 100 (0%–10000%), got -0.1`},
		{"breaker.yaml", `testdata/bad-clients/breaker.yaml:5:48: clients.circuit_breaker.failure_ratio: must be above 0 and at most 1, got 1.5`},
		{"error-mix.yaml", `testdata/bad-clients/error-mix.yaml:5:14: clients.error_mix: 429 is the limiter's answer, not an error of the API`},
		{"overload-algorithms.yaml", `testdata/bad-clients/overload-algorithms.yaml:3:13: algorithms: a clients section with server: overload runs no limiter; leave algorithms out`},
		{"retry-all.yaml", `testdata/bad-clients/retry-all.yaml:5:21: clients.retry_all_errors: a client that retries a 400 retries it for ever; set max_attempts or deadline`},
		{"precision.yaml", `testdata/bad-clients/precision.yaml:5:26: clients.retry_after_precision: want s or ms, got "us"`},
		{"policy-twice.yaml", `testdata/bad-clients/policy-twice.yaml:5:42: clients.strategies[1]: full-jitter+retry-budget is listed twice`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "bad-clients", tt.file))
			if err == nil {
				t.Fatal("loaded without error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}

func TestRetryStormShowsWavesWithoutJitter(t *testing.T) {
	sc, err := Load("retry-storm")
	if err != nil {
		t.Fatal(err)
	}
	sc.Clients.Runs = 2
	sc.Clients.Strategies = []string{"exponential", "full-jitter"}
	rep, err := Run(sc, Options{Algorithms: []string{"token-bucket"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 0 || len(rep.Retries) != 2 {
		t.Fatalf("results %d, retries %d", len(rep.Results), len(rep.Retries))
	}
	expo, full := rep.Retries[0], rep.Retries[1]
	t.Logf("exponential waves %v, drain %.0f ms; full-jitter waves %v, drain %.0f ms", expo.WaveHeights, expo.CompletionMSMean, full.WaveHeights, full.CompletionMSMean)
	if expo.Strategy != "exponential" || len(expo.WaveHeights) < 5 || expo.WaveHeights[0] < 400 {
		t.Errorf("exponential: waves %v, want several, the first of hundreds of clients", expo.WaveHeights)
	}
	if len(full.WaveHeights) != 0 || full.PeakArrivals*10 > expo.PeakArrivals {
		t.Errorf("full-jitter: waves %v, peak arrivals %.1f (exponential %.1f): want no wave", full.WaveHeights, full.PeakArrivals, expo.PeakArrivals)
	}
	if full.CompletionMSMean >= expo.CompletionMSMean {
		t.Errorf("full-jitter drains in %.0f ms, exponential in %.0f ms", full.CompletionMSMean, expo.CompletionMSMean)
	}
	again, _ := Run(sc, Options{Algorithms: []string{"token-bucket"}})
	if !reflect.DeepEqual(rep, again) {
		t.Fatal("same seed, different results")
	}
}

// Acceptance of the retry-budget scenario as shipped: against a backend at 1.5× its
// capacity plain exponential backoff more than doubles the load (server calls over client
// requests), a 10% budget holds it to 1.1×, and throttling, the quota and the breaker each
// cap it below plain retries.
func TestRetryBudgetScenarioCapsAmplification(t *testing.T) {
	sc, err := Load("retry-budget")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	amp := map[string]float64{}
	for _, r := range rep.Retries {
		if r.Algorithm != "overload" || r.Capacity != 200 || r.Requests != 3000 {
			t.Fatalf("%+v", r)
		}
		amp[r.Strategy] = r.Amplification
	}
	t.Logf("amplification %v", amp)
	if amp["exponential"] <= 2 {
		t.Errorf("plain exponential: %.3f, want above 2", amp["exponential"])
	}
	if a := amp["exponential+retry-budget"]; a > 1.1 || a <= 1 {
		t.Errorf("10%% budget: %.3f, want above 1 and at most 1.1", a)
	}
	for _, s := range []string{"exponential+retry-throttle", "exponential+retry-quota", "exponential+circuit-breaker"} {
		if amp[s] >= amp["exponential"] {
			t.Errorf("%s: %.3f, not below plain exponential's %.3f", s, amp[s], amp["exponential"])
		}
	}
}
