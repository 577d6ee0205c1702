package cluster

import (
	"slices"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// The shared placement: every decision is one atomic script on the shared store, the
// algorithm's own (store/lua), so the fleet decides as one limiter would. A Kong spec
// with policy=redis decides as the plugin does on its Redis (store.Counters): one atomic call
// per configured period, each a round trip, every period counting every request.
func init() {
	registerPlacement(PlacementKind{
		Name:    "shared",
		Doc:     "every decision is one atomic script on the shared store",
		Rank:    20,
		Runs:    sharedAlgorithms,
		New:     func(f *Fleet, st store.Store) (placement, error) { return newShared(f, st, false) },
		Scripts: true,
		Asks:    true,
	})
}

// shared decides by the algorithm's script, behind the node-local guard when guarded
// (two-tier.go), or by window counters (Kong's) when counters is set.
type shared struct {
	guarded  bool
	counters *store.Counters
}

var (
	_ placement = shared{}
	_ clocked   = shared{}
)

func newShared(f *Fleet, st store.Store, guarded bool) (placement, error) {
	if !guarded && store.SharesCounters(f.algorithm) {
		k, err := store.NewCounters(st, f.algorithm, f.cfg.Prefix)
		return shared{counters: k}, err
	}
	var err error
	f.script, err = store.NewLimiter(st, f.algorithm, f.policy, f.cfg.Prefix)
	return shared{guarded: guarded}, err
}

func (p shared) setClock(clock store.Clock, keep time.Duration) {
	if p.counters != nil {
		p.counters.SetClock(clock)
		p.counters.SetKeep(keep)
	}
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
	if p.counters != nil {
		r, trips, err := p.counters.Allow(f.names[t.key], t.at(), t.cost)
		t.trips, t.counted = trips, err == nil
		t.d = f.storeReply(t, r, err)
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

// sharedAlgorithms are scriptAlgorithms and, but under memory pressure, the Kong specs
// whose counters the store shares (policy=redis), in algs' order.
func sharedAlgorithms(c *Config, algs []string) []string {
	scripted := scriptAlgorithms(c, algs)
	return slices.DeleteFunc(slices.Clone(algs), func(a string) bool {
		return !slices.Contains(scripted, a) && (c.Eviction != nil || !store.SharesCounters(a))
	})
}
