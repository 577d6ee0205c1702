package backoff

import (
	"testing"
	"time"

	"github.com/rlsim/rlsim/traffic"
)

func TestScratchOverload(t *testing.T) {
	cfg := traffic.DefaultStrategyConfig(100*time.Millisecond, 10*time.Second)
	cfg.Budget.Ratio = 0.1
	cfg.Budget.MinPerSecond = 1
	var ss []traffic.Strategy
	for _, n := range []string{"exponential", "full-jitter", "exponential+retry-budget", "exponential+retry-throttle", "exponential+retry-quota", "exponential+circuit-breaker", "exponential+adaptive"} {
		s, err := traffic.ParseStrategy(n, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	for _, procs := range []int{0, 10} {
		m := DefaultOverload
		m.Processes = procs
		m.Retry.MaxAttempts = 0
		e := Experiment{Model: m, Strategies: ss, Clients: []int{15000}, Runs: 3, Seed: 1}
		rs, err := e.Run()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			t.Logf("procs %d %-30s amp %.3f calls %.0f p50 %.0f p99 %.0f max %.0f drain %.0f load %.0f give %.0f withheld %.0f", procs, r.Strategy, r.Amplification, r.CallsMean, r.CompletionMSP50, r.CompletionMSP99, r.CompletionMSMax, r.CompletionMSMean, r.LoadPeak, r.GiveUps, r.Withheld)
		}
	}
}
