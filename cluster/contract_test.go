package cluster

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// contractTrace is a random stream of requests for four keys, on whole µs (the scripts'
// unit), some at the same instant.
func contractTrace(seed uint64, n int) (keys []uint32, at, cost []int64) {
	rng := rand.New(rand.NewPCG(seed, 17))
	now := epoch
	for range n {
		if rng.IntN(3) > 0 {
			now += rng.Int64N(int64(300*time.Millisecond)) / 1000 * 1000
		}
		keys = append(keys, uint32(rng.IntN(4)))
		at = append(at, now)
		cost = append(cost, 1+rng.Int64N(2))
	}
	return keys, at, cost
}

// A fleet is a Limiter like any other: every decision of every placement carries
// RetryAfter (zero when admitted, positive when refused) and Reset (never negative).
func TestFleetDecisionsKeepTheLimiterContract(t *testing.T) {
	p := algorithms.Policy{Limit: 6, Window: 10 * time.Second, Burst: 8}
	outage := []Outage{{At: 20 * time.Second, For: 10 * time.Second, Policy: "fail-closed"}}
	for _, c := range []struct {
		placement, alg string
		outages        []Outage
	}{
		{"local", "leaky-bucket", nil}, {"local", "sliding-log", nil}, {"shared", "gcra", outage},
		{"two-tier", "sliding-window", nil}, {"leased", "token-bucket", nil}, {"shared-nonatomic", "fixed-window", nil},
		{"shared-racy", "token-bucket", nil}, {"shared", "fixed-window", []Outage{{At: 20 * time.Second, For: 10 * time.Second, Policy: "fail-open-local"}}},
	} {
		what := fmt.Sprintf("%s %s", c.placement, c.alg)
		f, err := New(Config{Nodes: 3, Placement: c.placement, Outages: c.outages, Epoch: epoch, Prefix: "rl:", Skew: time.Second},
			c.alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		keys, at, cost := contractTrace(1, 400)
		refused, delayed := 0, 0
		for i := range keys {
			d := f.Allow(keys[i], at[i], cost[i])
			if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.Reset < 0 || d.Delay < 0 {
				t.Fatalf("%s decision %d: %+v", what, i, d)
			}
			if !d.Allowed {
				refused++
			}
			if d.Delay > 0 {
				delayed++
			}
		}
		if refused == 0 || (c.alg == "leaky-bucket") != (delayed > 0) {
			t.Errorf("%s: %d refused, %d delayed", what, refused, delayed)
		}
	}
}

// Where one node decides alone, the fleet's decisions are its limiter's, field for field:
// the local placement's are the in-process limiter's, the shared placement's the
// script's, RetryAfter and Reset included.
func TestOneNodeDecidesAsItsLimiter(t *testing.T) {
	p := algorithms.Policy{Limit: 5, Window: 2 * time.Second, Burst: 7}
	for _, alg := range []string{"fixed-window", "sliding-log", "sliding-window", "token-bucket", "leaky-bucket", "gcra"} {
		for _, placement := range []string{"local", "shared"} {
			if placement == "shared" && alg == "leaky-bucket" {
				continue
			}
			f, err := New(Config{Nodes: 1, Placement: placement, Epoch: epoch, Prefix: "rl:"}, alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			var decide func(key uint32, at, cost int64) algorithms.Decision
			if placement == "local" {
				lim, _ := algorithms.New(alg, p)
				decide = lim.Allow
			} else {
				lim, err := store.NewLimiter(store.NewModel(), alg, p, "rl:")
				if err != nil {
					t.Fatal(err)
				}
				decide = func(key uint32, at, cost int64) algorithms.Decision {
					r, err := lim.Allow(fmt.Sprintf("key-%d", key), store.Now(at), cost)
					if err != nil {
						t.Fatal(err)
					}
					return algorithms.Decision{Allowed: r.Allowed, Remaining: r.Remaining, RetryAfter: r.RetryAfter, Reset: r.Reset}
				}
			}
			keys, at, cost := contractTrace(2, 300)
			retries := 0
			for i := range keys {
				got, want := f.Allow(keys[i], at[i], cost[i]), decide(keys[i], at[i], cost[i])
				if got != want {
					t.Fatalf("%s %s decision %d: fleet %+v, its limiter %+v", placement, alg, i, got, want)
				}
				if got.RetryAfter > 0 {
					retries++
				}
			}
			if retries == 0 {
				t.Errorf("%s %s: no refusal to compare", placement, alg)
			}
		}
	}
}

// A leased node's refusal says when it will ask the central bucket again: a request
// RetryAfter later costs a round trip, one a µs sooner does not. A node that cannot reach
// the store refuses blind, naming the longest recovery: a bucket's refill of burst here.
func TestLeasedAndBlindRefusalsSayWhatTheNodeKnows(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Second, Burst: 30}
	c := Config{Nodes: 1, Placement: "leased", Lease: 5, Epoch: epoch, Prefix: "rl:"}
	f, err := New(c, "token-bucket", p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	var trips int
	f.Observe(func(o *Observation) { trips = o.RoundTrips })
	now := epoch
	var d algorithms.Decision
	for d.RetryAfter == 0 {
		d = f.Allow(0, now, 1)
	}
	if d.Reset <= 0 {
		t.Fatalf("refusal %+v has no reset", d)
	}
	if f.Allow(0, now+int64(d.RetryAfter)-1, 1); trips != 0 {
		t.Errorf("the node asked the bucket before RetryAfter %s", d.RetryAfter)
	}
	if f.Allow(0, now+int64(d.RetryAfter), 1); trips != 1 {
		t.Errorf("the node did not ask the bucket RetryAfter %s later", d.RetryAfter)
	}

	c = Config{Nodes: 2, Placement: "shared", Epoch: epoch, Prefix: "rl:", Outages: []Outage{{At: 0, For: time.Minute, Policy: "fail-closed"}}}
	f, err = New(c, "gcra", p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if d := f.Allow(0, epoch+int64(time.Second), 1); d.Allowed || d.RetryAfter != 3*time.Second || d.Reset != 3*time.Second {
		t.Errorf("fail-closed refusal %+v, want RetryAfter and Reset 3s (30 tokens at 10/s)", d)
	}
}
