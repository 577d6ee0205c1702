package cluster

import (
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The local placement: each node enforces its share L/N of the limit alone, with no
// store and no peer. Its share is of the initial node count, or, with
// Config.LocalRecompute, of the count after each change (the counters start afresh).
func init() {
	registerPlacement(PlacementKind{
		Name:     "local",
		Doc:      "each node enforces its share L/N alone (recomputed on scaling or not)",
		Rank:     10,
		Default:  true,
		Store:    func(*Config) bool { return false },
		Isolated: true,
		New:      func(*Fleet, store.Store) (placement, error) { return local{}, nil },
	})
}

type local struct{}

var _ resizer = local{}

func (local) decide(f *Fleet, t *ticket, _ *Outage) {
	t.d = t.nd.local.Allow(t.key, t.nodeNow, t.cost)
}

// resize gives every node the share of the new count, with LocalRecompute.
func (local) resize(f *Fleet, from, to int) {
	if !f.cfg.LocalRecompute || to == from || from == 0 {
		return
	}
	f.nodeShare = share(f.policy, to)
	for _, nd := range f.nodes {
		nd.local, _ = algorithms.New(f.algorithm, f.nodeShare)
	}
}
