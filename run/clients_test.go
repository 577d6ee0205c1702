package run

import (
	"reflect"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

func TestRetryStormShowsWavesWithoutJitter(t *testing.T) {
	sc, err := scenario.Load("retry-storm")
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
// requests); a 10% budget with a reserve of 1 a second holds it above 1.1× (the reserve
// adds to the ratio) and at most 1 + 0.1 + 20/300 (each process's 300 requests over 10 s
// and a TTL after); throttling, the quota and the breakers each cap it below plain
// retries.
func TestRetryBudgetScenarioCapsAmplification(t *testing.T) {
	sc, err := scenario.Load("retry-budget")
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
	if a := amp["exponential+retry-budget"]; a > 1+0.1+20.0/300 || a <= 1.1 {
		t.Errorf("10%% budget: %.3f, want above 1.1 and at most %.3f", a, 1+0.1+20.0/300)
	}
	for _, s := range []string{"exponential+retry-throttle", "exponential+retry-quota", "exponential+circuit-breaker",
		"exponential+sre-throttle", "exponential+resilience4j-breaker"} {
		if a, ok := amp[s]; !ok || a >= amp["exponential"] {
			t.Errorf("%s: %.3f, not below plain exponential's %.3f", s, amp[s], amp["exponential"])
		}
	}
}
