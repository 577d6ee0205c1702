package scenario

import (
	"math"
	"testing"

	"github.com/rlsim/rlsim/sim"
	"github.com/rlsim/rlsim/traffic"
)

// Requests against the requests the built-in scenarios' traffic sends, counted: within
// 10% (or 20 requests) for every one of them, the heavy ones left out (they take long to
// count; their sections are of the same kinds).
func TestRequestsEstimatesTheBuiltins(t *testing.T) {
	for _, name := range Builtins() {
		sc, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Heavy {
			continue
		}
		var counted float64
		for _, src := range sc.Sources(sim.NewRNG(1, sim.RunStream)) {
			var r traffic.Request
			for src.Next(&r) {
				if r.At <= sc.Horizon() {
					counted++
				}
			}
		}
		est := sc.Requests() - sc.ClientRequests() // the clients' requests depend on decisions
		if math.Abs(est-counted) > max(0.1*counted, 20) {
			t.Errorf("%s: estimated %.0f requests, sent %.0f", name, est, counted)
		}
	}
}

// Every generator says how many requests it sends, so no section escapes the question a
// command asks before a run of more than a billion.
func TestEveryGeneratorEstimates(t *testing.T) {
	for _, name := range Sections() {
		if _, ok := generators[name].New().(Estimator); !ok {
			t.Errorf("generator %s does not implement Estimator", name)
		}
	}
}

// A script line of a billion requests is estimated as one: the count the command line
// asks about before running it.
func TestRequestsOfABillion(t *testing.T) {
	sc, err := Parse("big.yaml", []byte(`name: big
policy: {limit: 10, window: 1m}
traffic:
  - script:
      - {at: 0s, count: 1000000000, key: u, spread: 1h}
  - poisson: {rate: 1000, keys: 10, end: 10s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Requests(); got != 1_000_010_000 {
		t.Errorf("Requests() = %.0f, want 1000010000", got)
	}
}

// Closed-loop clients count their first attempts: every client's requests, in every run
// of every strategy.
func TestRequestsCountsClients(t *testing.T) {
	sc, err := Parse("clients.yaml", []byte(`name: clients
policy: {limit: 10, window: 1m}
traffic:
  - poisson: {rate: 1000, keys: 10, end: 10s}
clients: {count: 1000, requests: 3, strategies: [exponential, full-jitter], runs: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc.ClientRequests(), 1000.0*3*2*4; got != want {
		t.Errorf("ClientRequests() = %.0f, want %.0f", got, want)
	}
	if got := sc.Requests(); got != 10_000+24_000 {
		t.Errorf("Requests() = %.0f, want 34000", got)
	}
}
