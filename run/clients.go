package run

import (
	"context"
	"fmt"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// retrySettings is a clients section's retry settings (the strategy is set per run).
func retrySettings(c *scenario.ClientsSpec) traffic.Retry {
	return traffic.Retry{
		MaxAttempts: c.MaxAttempts, Deadline: time.Duration(c.Deadline), Timeout: time.Duration(c.Timeout),
		HonorRetryAfter: c.RetryAfter != "ignore", IdempotencyKeys: c.IdempotencyKeys, RetryAllErrors: c.RetryAllErrors,
	}
}

// rateLimitedModel is the rate-limited model of a clients section for one algorithm.
func rateLimitedModel(c *scenario.ClientsSpec, alg string, pol algorithms.Policy, epoch time.Time) backoff.RateLimited {
	m := backoff.DefaultRateLimited
	m.Algorithm, m.Policy, m.Epoch = alg, pol, epoch
	m.PerClient = c.Key == "client"
	m.Requests = c.Requests
	m.NonIdempotent = c.NonIdempotent
	m.Start, m.Spread = c.Start.Resolve(epoch), time.Duration(c.Spread)
	m.Hiccup = backoff.Hiccup{Kind: "503"}
	if h := c.Hiccup; h != nil {
		m.Hiccup = backoff.Hiccup{Start: h.Start.Resolve(epoch), Duration: time.Duration(h.Duration), Kind: h.Kind,
			SlowBy: time.Duration(h.SlowBy), RetryAfter: time.Duration(h.RetryAfter)}
	}
	m.Retry = retrySettings(c)
	m.RetryAfterDate = c.RetryAfterForm == "date"
	m.RetryAfterMs = c.RetryAfterPrecision == "ms"
	m.Errors, _ = backoff.ParseErrorMix(c.ErrorMix) // validated
	m.Processes = c.Processes
	m.Bin = time.Duration(c.Bin)
	return m
}

// overloadModel is the overload model of a clients section: a backend of pol's capacity.
func overloadModel(c *scenario.ClientsSpec, pol algorithms.Policy, epoch time.Time) backoff.Overload {
	m := backoff.DefaultOverload
	m.Capacity = float64(pol.Limit) / pol.Window.Seconds()
	m.Window, m.Epoch = pol.Window, epoch
	m.Requests = c.Requests
	m.Start, m.Spread = c.Start.Resolve(epoch), time.Duration(c.Spread)
	m.RetryAfter = time.Duration(c.ShedRetryAfter)
	m.RetryAfterMs = c.RetryAfterPrecision == "ms"
	m.Retry = retrySettings(c)
	m.Processes = c.Processes
	m.Bin = time.Duration(c.Bin)
	return m
}

// runClients runs the clients section against every algorithm with every strategy (or
// once, against the overloaded backend).
func runClients(ctx context.Context, sc *scenario.Scenario, pol algorithms.Policy, algs []string, seed uint64) ([]report.RetryResult, error) {
	c := sc.Clients
	cfg := c.StrategyConfig()
	var strategies []traffic.Strategy
	for _, n := range c.Strategies {
		st, err := traffic.ParseStrategy(n, cfg)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		strategies = append(strategies, st)
	}
	// A wave is a run of bins each holding at least 5% of the clients (and at least 2):
	// clients in lockstep clear that by far, a jittered smear stays below it.
	threshold := max(int64(c.Count)/20, 2)
	type target struct {
		label    string
		model    backoff.Model
		bin      time.Duration
		capacity float64
	}
	var targets []target
	if c.Server == "overload" {
		m := overloadModel(c, pol, sc.EpochTime())
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		targets = append(targets, target{"overload", m, m.Bin, m.Capacity})
	} else {
		for _, alg := range algs {
			m := rateLimitedModel(c, alg, pol, sc.EpochTime())
			if err := m.Validate(); err != nil {
				return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
			}
			targets = append(targets, target{alg, m, m.Bin, 0})
		}
	}
	var out []report.RetryResult
	for _, tg := range targets {
		e := backoff.Experiment{Model: tg.model, Strategies: strategies, Clients: []int{c.Count}, Runs: c.Runs, Seed: seed, KeepSeries: true, Context: ctx}
		rs, err := e.Run()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		// The experiment measures the clients; the scenario names what they faced.
		for _, r := range rs {
			r.Algorithm, r.Capacity, r.Bin = tg.label, tg.capacity, report.Duration(tg.bin)
			r.WaveHeights, r.WaveThreshold = backoff.Waves(r.Arrivals, threshold), threshold
			out = append(out, r)
		}
	}
	return out, nil
}
