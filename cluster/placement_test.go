package cluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The registry lists every placement once, by rank, with one default; the scenario file's
// error message and the docs list them in this order.
func TestPlacementRegistry(t *testing.T) {
	kinds := PlacementKinds()
	if len(kinds) < 2 {
		t.Fatalf("%d placements registered", len(kinds))
	}
	defaults := 0
	for i, k := range kinds {
		if k.Doc == "" || k.New == nil {
			t.Errorf("placement %s: no doc or no constructor", k.Name)
		}
		if i > 0 && kinds[i-1].Rank >= k.Rank {
			t.Errorf("placements %s and %s out of rank order", kinds[i-1].Name, k.Name)
		}
		if k.Default {
			defaults++
			if PlacementOf("") != k {
				t.Errorf("the default placement is %s, PlacementOf(\"\") another", k.Name)
			}
		}
		if PlacementOf(k.Name) != k {
			t.Errorf("PlacementOf(%q) is not its kind", k.Name)
		}
	}
	if defaults != 1 {
		t.Errorf("%d default placements, want 1", defaults)
	}
	if PlacementOf("nowhere") != nil {
		t.Error("an unknown placement was found")
	}
	want := []string{"local", "shared", "two-tier", "leased", "shared-nonatomic", "shared-racy", "owner", "global-sync", "toy-oracle"}
	if got := Placements(); !slices.Equal(got, want) {
		t.Errorf("Placements() = %v, want %v", got, want)
	}
	for _, name := range EvictionPlacements() {
		if !PlacementOf(name).Scripts {
			t.Errorf("eviction placement %s does not decide by the scripts", name)
		}
	}
	c := Config{Nodes: 1}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Placement = "nowhere"
	if err := c.Validate(); err == nil {
		t.Error("Validate accepted an unknown placement")
	}
}

// Every registered placement, under each sync target, with every algorithm it says it
// runs, is a Limiter like any other: RetryAfter zero exactly when admitted, Reset never
// negative, refusals once the clients go over; it talks to the store exactly when it says
// it does; and Runs keeps the order of what it was given. A new placement is held to
// this without a line here.
func TestEveryPlacementKeepsTheContract(t *testing.T) {
	p := algorithms.Policy{Limit: 6, Window: 10 * time.Second}
	all := algorithms.Defaults()
	for _, k := range PlacementKinds() {
		for _, to := range SyncTargets {
			c := Config{Nodes: 3, Placement: k.Name, SyncTo: to, Epoch: epoch, Prefix: "rl:", Sync: 200 * time.Millisecond,
				Outages: []Outage{{At: 20 * time.Second, For: 5 * time.Second, Policy: "fail-closed"}}}
			if err := c.Validate(); err != nil {
				t.Fatalf("%s to %s: %v", k.Name, to, err)
			}
			wd := c.WithDefaults(p)
			algs := wd.Runs(all)
			if len(algs) == 0 {
				t.Errorf("%s to %s runs no algorithm", k.Name, to)
			}
			if i := slices.IndexFunc(algs, func(a string) bool { return !slices.Contains(all, a) && a != algorithms.TokenBucketName }); i >= 0 {
				t.Errorf("%s to %s runs %s, which it was not given", k.Name, to, algs[i])
			}
			for _, alg := range algs {
				what := fmt.Sprintf("%s to %s, %s", k.Name, to, alg)
				f, err := New(c, alg, p, store.NewModel(), rand.New(rand.NewPCG(1, 2)))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				trips := 0
				f.Observe(func(o *Observation) { trips += o.RoundTrips })
				keys, at, cost := contractTrace(2, 300)
				refused := 0
				for i := range keys {
					d := f.Allow(keys[i], at[i], cost[i])
					if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || d.Reset < 0 {
						t.Fatalf("%s decision %d: %+v", what, i, d)
					}
					if !d.Allowed {
						refused++
					}
				}
				s, err := f.Finish()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if refused == 0 {
					t.Errorf("%s: nothing refused", what)
				}
				if uses := wd.UsesStore(); uses != (s.Store != "") || !uses && trips > 0 {
					t.Errorf("%s: UsesStore %v, store %q, %d round trips", what, uses, s.Store, trips)
				}
				if k.Mechanism != "" && f.Algorithm() != k.Mechanism {
					t.Errorf("%s: rows named %s, want the mechanism %s", what, f.Algorithm(), k.Mechanism)
				}
			}
		}
	}
}
