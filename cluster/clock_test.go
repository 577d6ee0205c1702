package cluster

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

var skews = []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, 5 * time.Second, 20 * time.Second}

// With node clocks skewed over ±S, a shared token bucket (and GCRA, the same schedule)
// refills only for time the store has not yet credited, so the fleet admits at most
// b + L·(W + 2S)/W in any window W: one client far over its limit at every skew.
func TestNodeClockBucketWithinSkewBound(t *testing.T) {
	for _, alg := range []string{"token-bucket", "gcra"} {
		for _, skew := range skews {
			c := Config{Nodes: 10, Balancer: "round-robin", Placement: "shared", Skew: skew}
			res, _ := drive(t, c, alg, perMinute, store.NewModel(), 1, 20, 3*time.Minute)
			w := perMinute.Window.Seconds()
			bound := int64(math.Floor(float64(perMinute.EffectiveBurst()) + float64(perMinute.Limit)*(w+2*skew.Seconds())/w))
			if res.EffectiveLimit > bound {
				t.Errorf("%s, skew ±%s: effective %d above the bound %d", alg, skew, res.EffectiveLimit, bound)
			}
			if res.EffectiveLimit < perMinute.EffectiveBurst()+perMinute.Limit-1 {
				t.Errorf("%s, skew ±%s: effective %d, below burst + L: the client was not over its limit", alg, skew, res.EffectiveLimit)
			}
		}
	}
}

// By the store's clock node skew no longer reaches a decision: every shared algorithm
// stays within 1.05× of its no-skew effective limit (here: exactly at it), on shared and
// two-tier placements alike.
func TestStoreClockHoldsTheNoSkewLimit(t *testing.T) {
	for _, placement := range []string{"shared", "two-tier"} {
		for _, alg := range store.Algorithms() {
			var base int64
			for _, skew := range skews {
				c := Config{Nodes: 10, Balancer: "round-robin", Placement: placement, Skew: skew, Clock: "store"}
				res, _ := drive(t, c, alg, perMinute, store.NewModel(), 1, 20, 3*time.Minute)
				if skew == 0 {
					base = res.EffectiveLimit
					continue
				}
				if float64(res.EffectiveLimit) > 1.05*float64(base) {
					t.Errorf("%s %s, store clock, skew ±%s: effective %d, more than 1.05× the no-skew %d", placement, alg, skew, res.EffectiveLimit, base)
				}
			}
		}
	}
}

// By the nodes' clocks the window algorithms stretch with the skew: the sweep shows
// something, so the store clock's flat line above is not a test that cannot fail.
func TestNodeClockWindowsStretchWithSkew(t *testing.T) {
	c := Config{Nodes: 10, Balancer: "round-robin", Placement: "shared", Skew: 5 * time.Second}
	res, _ := drive(t, c, "fixed-window", perMinute, store.NewModel(), 1, 20, 3*time.Minute)
	c.Clock = "store"
	byStore, _ := drive(t, c, "fixed-window", perMinute, store.NewModel(), 1, 20, 3*time.Minute)
	if res.EffectiveLimit <= byStore.EffectiveLimit {
		t.Errorf("fixed window, skew ±5s: %d by node clocks, %d by the store's", res.EffectiveLimit, byStore.EffectiveLimit)
	}
}

// decide runs clients at rate each over d on a fleet and returns every decision and the
// fleet's figures, the store's name left out. A pause makes each decision wait that long
// in wall time, as a slow fleet would.
func decide(t *testing.T, c Config, alg string, p algorithms.Policy, st store.Store, clients int, rate float64, d, pause time.Duration) string {
	t.Helper()
	c.Epoch = epoch
	f, err := New(c, alg, p, st, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	finish := metered(f, p)
	for k := range clients {
		f.SetName(uint32(k), fmt.Sprintf("user_%d", k))
	}
	var b strings.Builder
	step := time.Duration(float64(time.Second) / rate)
	for at := time.Duration(0); at < d; at += step {
		for k := range clients {
			time.Sleep(pause)
			dec := f.Allow(uint32(k), epoch+int64(at), 1)
			fmt.Fprintf(&b, "%d", map[bool]int{false: 0, true: 1}[dec.Allowed])
		}
	}
	res, err := finish("v")
	if err != nil {
		t.Fatal(err)
	}
	res.Store = ""
	fmt.Fprintf(&b, "\n%+v", *res)
	return b.String()
}

// A fleet of 20 per 200 ms on a real Redis (RLSIM_REDIS_URL) that runs slower than real
// time — each decision waits 4 ms, so 0.8 s of traffic takes about a second — decides
// exactly as the model, on every store placement and script, crashes of INCR-then-EXPIRE
// included: nothing that decides waits on the server's wall clock.
func TestShortWindowSlowerThanRealTimeOnRealRedis(t *testing.T) {
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	p := algorithms.Policy{Limit: 20, Window: 200 * time.Millisecond}
	const clients, rate, span = 2, 150.0, 800 * time.Millisecond
	type run struct {
		name, alg string
		cfg       Config
	}
	var runs []run
	for _, alg := range store.Algorithms() {
		runs = append(runs, run{alg, alg, Config{Placement: "shared"}})
	}
	runs = append(runs,
		run{"leased", "token-bucket", Config{Placement: "leased", Lease: 4}},
		run{"nonatomic-ttl-window", "fixed-window", Config{Placement: "shared-nonatomic", TTLWindowKey: true, CrashProbability: 0.1}},
		run{"nonatomic-timestamped", "fixed-window", Config{Placement: "shared-nonatomic", CrashProbability: 0.1}})
	var wg sync.WaitGroup
	for _, r := range runs {
		r.cfg.Nodes, r.cfg.Balancer, r.cfg.Skew = 5, "round-robin", 30*time.Millisecond
		// The model runs under the same prefix: a leaked key's bytes depend on its name.
		r.cfg.Prefix = facePrefix(r.name)
		want := decide(t, r.cfg, r.alg, p, store.NewModel(), clients, rate, span, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			real, err := store.NewRedis(url)
			if err != nil {
				t.Error(err)
				return
			}
			defer real.Close()
			cfg := r.cfg
			start := time.Now()
			got := decide(t, cfg, r.alg, p, real, clients, rate, span, 4*time.Millisecond)
			wall := time.Since(start)
			if keys, err := real.Keys(cfg.Prefix); err == nil {
				names := make([]string, len(keys))
				for i, k := range keys {
					names[i] = k.Name
				}
				real.Delete(names...)
			}
			if wall <= span {
				t.Errorf("%s: %s of traffic took %s: not slower than real time", r.name, span, wall)
			}
			if got != want {
				t.Errorf("%s on a real Redis, %s of wall time for %s of traffic:\n model %s\n redis %s", r.name, wall.Round(time.Millisecond), span, want, got)
			}
		}()
	}
	wg.Wait()
}
