package cluster

import (
	"slices"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The shared placement: every decision is one atomic script on the shared store, the
// algorithm's own (store/lua), so the fleet decides as one limiter would.
func init() {
	registerPlacement(PlacementKind{
		Name:    "shared",
		Doc:     "every decision is one atomic script on the shared store",
		Rank:    20,
		Runs:    scriptAlgorithms,
		New:     func(f *Fleet, st store.Store) (placement, error) { return newShared(f, st, false) },
		Scripts: true,
		Asks:    true,
	})
}

// shared decides by the algorithm's script, behind the node-local guard when guarded
// (two-tier.go).
type shared struct{ guarded bool }

var _ placement = shared{}

func newShared(f *Fleet, st store.Store, guarded bool) (placement, error) {
	var err error
	f.script, err = store.NewLimiter(st, f.algorithm, f.policy, f.cfg.Prefix)
	return shared{guarded: guarded}, err
}

func (p shared) decide(f *Fleet, t *ticket, outage *Outage) {
	if p.guarded {
		if g := t.nd.guard.Allow(t.key, t.nodeNow, t.cost); !g.Allowed {
			t.d = g // the guard refuses without asking the store
			return
		}
	}
	if o := f.reach(t, outage); o != nil {
		t.d = f.failover(o, t.nd, t.key, t.nodeNow, t.cost, p.guarded)
		return
	}
	t.trips, t.ask = 1, true
}

// scriptAlgorithms are the algorithms of algs the store has a script for; under memory
// pressure, only those whose keys it has a memory model of (not the sliding log's
// sorted set).
func scriptAlgorithms(c *Config, algs []string) []string {
	algs = keep(algs, store.Algorithms())
	if c.Eviction != nil {
		algs = slices.DeleteFunc(algs, func(a string) bool { return algorithms.FormOf(a) == algorithms.FormTimestamps })
	}
	return algs
}
