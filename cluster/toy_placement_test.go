package cluster

import (
	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/store"
)

// toyOracle is a placement of this test's own, the smallest complete one: every node
// decides with one in-process limiter of the whole policy, as a fleet with a perfect,
// free, never-failing shared counter would. It registers without a line in any other
// file, and TestEveryPlacementKeepsTheContract holds it to the contract like the others.
type toyOracle struct{ lim algorithms.Limiter }

func init() {
	registerPlacement(PlacementKind{
		Name:     "toy-oracle",
		Doc:      "every node decides with one in-process limiter of the whole policy",
		Rank:     1000,
		Store:    func(*Config) bool { return false },
		Isolated: true,
		New: func(f *Fleet, _ store.Store) (placement, error) {
			lim, err := algorithms.New(f.algorithm, f.policy)
			return &toyOracle{lim: lim}, err
		},
	})
}

func (p *toyOracle) decide(_ *Fleet, t *ticket, _ *Outage) {
	t.d = p.lim.Allow(t.key, t.now, t.cost)
}
