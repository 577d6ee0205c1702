package scenario

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestBadClientsSectionsNameFileLineColumnAndField(t *testing.T) {
	tests := []struct{ file, want string }{
		{"strategy.yaml", `testdata/bad-clients/strategy.yaml:5:29: clients.strategies[1]: unknown strategy "fibonacci" (want one of none, constant, exponential, full-jitter, equal-jitter, decorrelated-jitter)`},
		{"count.yaml", "testdata/bad-clients/count.yaml:4:10: clients.count: must be between 1 and 1000000, got 0"},
		{"hiccup.yaml", `testdata/bad-clients/hiccup.yaml:5:43: clients.hiccup.kind: want 503 or slow, got "flaky"`},
		{"field.yaml", "testdata/bad-clients/field.yaml:5:3: clients.jitter: unknown field (known: base, bin, cap, count, deadline, hiccup, idempotency_keys, key, max_attempts, non_idempotent, requests, retry_after, retry_after_form, runs, spread, start, strategies, timeout)"},
		{"retry-after.yaml", `testdata/bad-clients/retry-after.yaml:5:16: clients.retry_after: want honor or ignore, got "sometimes"`},
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
