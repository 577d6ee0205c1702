package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/backoff"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/traffic"
)

// ClientsSpec is the clients section: closed-loop clients that retry refused or failed
// requests, run against each of the scenario's algorithms with each strategy. Every client
// has one job of Requests requests; all start at Start, or evenly over Spread.
//
//	clients:
//	  count: 1000
//	  strategies: [exponential, full-jitter]
//	  base: 500ms
//	  cap: 30s
//	  retry_after: honor          # or ignore
//	  hiccup: {start: 0s, duration: 500ms, kind: "503"}
type ClientsSpec struct {
	Count    int      `yaml:"count"`
	Start    Offset   `yaml:"start"`
	Spread   Duration `yaml:"spread"`
	Requests int      `yaml:"requests"`
	// Key is "shared" (one key for all clients: the API's capacity) or "client" (a limit
	// per client).
	Key        string   `yaml:"key"`
	Strategies []string `yaml:"strategies"`
	Base       Duration `yaml:"base"`
	Cap        Duration `yaml:"cap"`
	// MaxAttempts bounds the tries of a request (0: none); Deadline bounds a job (0: none);
	// Timeout is how long a client waits for an answer (0: for ever).
	MaxAttempts int      `yaml:"max_attempts"`
	Deadline    Duration `yaml:"deadline"`
	Timeout     Duration `yaml:"timeout"`
	// RetryAfter is honor (wait max(backoff, Retry-After)) or ignore.
	RetryAfter string `yaml:"retry_after"`
	// RetryAfterForm is how the server writes Retry-After: seconds or date.
	RetryAfterForm  string      `yaml:"retry_after_form"`
	NonIdempotent   bool        `yaml:"non_idempotent"`
	IdempotencyKeys bool        `yaml:"idempotency_keys"`
	Hiccup          *HiccupSpec `yaml:"hiccup"`
	// Bin is the width of the arrival bins (default 10ms); Runs the seeded runs averaged
	// per algorithm and strategy (default 5).
	Bin  Duration `yaml:"bin"`
	Runs int      `yaml:"runs"`
}

// HiccupSpec is a window in which the API wobbles: kind "503" (down: every request fails)
// or "slow" (answers SlowBy late).
type HiccupSpec struct {
	Start      Offset   `yaml:"start"`
	Duration   Duration `yaml:"duration"`
	Kind       string   `yaml:"kind"`
	SlowBy     Duration `yaml:"slow_by"`
	RetryAfter Duration `yaml:"retry_after"`
}

// maxScenarioClients bounds a clients section so a typo cannot ask for a billion.
const maxScenarioClients = 1_000_000

func (s *Scenario) validateClients(file string, epoch time.Time) error {
	c := s.Clients
	const f = "clients"
	if c.Count < 1 || c.Count > maxScenarioClients {
		return s.fail(file, f+".count", "must be between 1 and %d, got %d", maxScenarioClients, c.Count)
	}
	if c.Start.resolve(epoch) < 0 {
		return s.fail(file, f+".start", "is before the scenario's start")
	}
	if c.Spread < 0 {
		return s.fail(file, f+".spread", "must not be negative")
	}
	if c.Requests < 0 || c.Requests > 1_000_000 {
		return s.fail(file, f+".requests", "must be between 1 and 1000000, got %d", c.Requests)
	}
	switch c.Key {
	case "", "shared", "client":
	default:
		return s.fail(file, f+".key", "want shared or client, got %q", c.Key)
	}
	for i, name := range c.Strategies {
		if !slices.Contains(traffic.BackoffNames, name) {
			return s.fail(file, fmt.Sprintf("%s.strategies[%d]", f, i), "unknown strategy %q (want one of %s)", name, strings.Join(traffic.BackoffNames, ", "))
		}
	}
	if c.Base < 0 {
		return s.fail(file, f+".base", "must be positive")
	}
	if c.Cap < 0 || (c.Cap > 0 && c.Cap < c.baseOr()) {
		return s.fail(file, f+".cap", "must be at least the base %s", time.Duration(c.baseOr()))
	}
	if c.MaxAttempts < 0 {
		return s.fail(file, f+".max_attempts", "must not be negative, got %d", c.MaxAttempts)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"deadline", c.Deadline}, {"timeout", c.Timeout}, {"bin", c.Bin}} {
		if d.v < 0 {
			return s.fail(file, f+"."+d.name, "must not be negative")
		}
	}
	switch c.RetryAfter {
	case "", "honor", "ignore":
	default:
		return s.fail(file, f+".retry_after", "want honor or ignore, got %q", c.RetryAfter)
	}
	switch c.RetryAfterForm {
	case "", "seconds", "date":
	default:
		return s.fail(file, f+".retry_after_form", "want seconds or date, got %q", c.RetryAfterForm)
	}
	if c.Runs < 0 || c.Runs > 10000 {
		return s.fail(file, f+".runs", "must be between 1 and 10000, got %d", c.Runs)
	}
	if h := c.Hiccup; h != nil {
		if h.Start.resolve(epoch) < 0 {
			return s.fail(file, f+".hiccup.start", "is before the scenario's start")
		}
		if h.Duration <= 0 {
			return s.fail(file, f+".hiccup.duration", "must be positive")
		}
		switch h.Kind {
		case "", "503", "slow":
		default:
			return s.fail(file, f+".hiccup.kind", "want 503 or slow, got %q", h.Kind)
		}
		if h.SlowBy < 0 {
			return s.fail(file, f+".hiccup.slow_by", "must not be negative")
		}
		if h.RetryAfter < 0 {
			return s.fail(file, f+".hiccup.retry_after", "must not be negative")
		}
	}
	return nil
}

func (c *ClientsSpec) baseOr() Duration {
	if c.Base > 0 {
		return c.Base
	}
	return Duration(500 * time.Millisecond)
}

// model is the rate-limited model of the section for one algorithm.
func (c *ClientsSpec) model(alg string, pol algorithms.Policy, epoch time.Time) backoff.RateLimited {
	m := backoff.DefaultRateLimited
	m.Algorithm, m.Policy, m.Epoch = alg, pol, epoch
	m.PerClient = c.Key == "client"
	m.Requests = max(c.Requests, 1)
	m.NonIdempotent = c.NonIdempotent
	m.Start, m.Spread = c.Start.resolve(epoch), time.Duration(c.Spread)
	m.Hiccup = backoff.Hiccup{Kind: "503"}
	if h := c.Hiccup; h != nil {
		m.Hiccup = backoff.Hiccup{Start: h.Start.resolve(epoch), Duration: time.Duration(h.Duration), Kind: h.Kind,
			SlowBy: time.Duration(h.SlowBy), RetryAfter: time.Duration(h.RetryAfter)}
		if m.Hiccup.Kind == "" {
			m.Hiccup.Kind = "503"
		}
	}
	m.Retry = traffic.Retry{
		MaxAttempts: c.MaxAttempts, Deadline: time.Duration(c.Deadline), Timeout: time.Duration(c.Timeout),
		HonorRetryAfter: c.RetryAfter != "ignore", IdempotencyKeys: c.IdempotencyKeys,
	}
	m.RetryAfterDate = c.RetryAfterForm == "date"
	if c.Bin > 0 {
		m.Bin = time.Duration(c.Bin)
	}
	return m
}

// runClients runs the clients section against every algorithm with every strategy.
func runClients(sc *Scenario, pol algorithms.Policy, algs []string, seed uint64) ([]report.RetryResult, error) {
	c := sc.Clients
	names := c.Strategies
	if len(names) == 0 {
		names = []string{"exponential", "full-jitter"}
	}
	cap := time.Duration(c.Cap)
	if cap == 0 {
		cap = max(30*time.Second, time.Duration(c.baseOr()))
	}
	var strategies []traffic.Backoff
	for _, n := range names {
		b, err := traffic.NewBackoff(n, time.Duration(c.baseOr()), cap)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		strategies = append(strategies, b)
	}
	runs := c.Runs
	if runs == 0 {
		runs = 5
	}
	// A wave is a run of bins each holding at least 5% of the clients (and at least 2):
	// clients in lockstep clear that by far, a jittered smear stays below it.
	threshold := max(int64(c.Count)/20, 2)
	var out []report.RetryResult
	for _, alg := range algs {
		m := c.model(alg, pol, sc.EpochTime())
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		e := backoff.Experiment{Model: m, Strategies: strategies, Clients: []int{c.Count}, Runs: runs, Seed: seed, KeepSeries: true}
		rs, err := e.Run()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: clients: %w", sc.Name, err)
		}
		for _, r := range rs {
			out = append(out, report.RetryResult{
				Algorithm: alg, Strategy: r.Strategy, Clients: r.Clients, Runs: r.Runs,
				CallsMean: r.CallsMean, CompletionMSMean: r.CompletionMSMean,
				PeakArrivals: r.PeakArrivals, Arrivals: r.Arrivals,
				WaveHeights: backoff.Waves(r.Arrivals, threshold), WaveThreshold: threshold, Bin: report.Duration(m.Bin),
				GiveUps: r.GiveUps, Duplicates: r.Duplicates, RetryAfterRefusedShare: r.RetryAfterRefusedShare,
			})
		}
	}
	return out, nil
}
