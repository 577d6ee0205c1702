package report

import "time"

func stormReport() *Report {
	bin := Duration(10 * time.Millisecond)
	return &Report{Scenario: "storm", Seed: 2, Policy: Policy{Limit: 100, Window: Duration(time.Second), Burst: 100}, Retries: []RetryResult{
		{Algorithm: "gcra", Strategy: "exponential", Clients: 1000, Runs: 1, CompletionMSMean: 151226, PeakArrivals: 511,
			WaveHeights: []int64{511, 400}, Bin: bin, Arrivals: []int64{0, 511, 0, 0, 400}, Amplification: 5.88},
		{Algorithm: "gcra", Strategy: "full-jitter", Clients: 1000, Runs: 1, CompletionMSMean: 24821, PeakArrivals: 21,
			Bin: bin, Arrivals: []int64{0, 21, 20, 19}, Amplification: 4.02},
	}}
}
